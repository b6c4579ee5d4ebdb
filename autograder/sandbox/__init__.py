"""Run student code where it cannot see the course, change the grader or reach the network.

Both grading paths start student code through this module, with the strongest kind of isolation
this machine allows (:func:`isolation`):

* ``namespaces`` (Linux with unprivileged user namespaces): :func:`sandboxed` runs the command in
  new user, mount and network namespaces (``unshare``), in a minimal root of its own
  (:mod:`autograder.sandbox.minimal_root`): the system, Python, mini and the grader read-only, the
  submission's own folders writable, a private /tmp, and nothing else of the host's files, so a
  submission can neither read answers anywhere on the machine nor change what grades the next one;
* ``landlock`` (no user namespaces, Linux 6.7+): no namespaces, but the Landlock confinement below;
* ``none``: resource limits only.

Wherever Landlock is available (both first kinds), the student-code process also confines itself
before any student code runs (:func:`confinement`, ``autograder.sandbox.landlock``): only the
system, Python and mini may be read, only its own folders written, no TCP.  Without namespaces that
allow-list is what keeps answers elsewhere on the machine (another checkout, a temporary folder,
a home folder) out of reach; with them it is a second layer.  Every result says what it had
(:func:`isolation_note`).  ``MINI_SANDBOX=landlock`` or ``none`` asks for a weaker kind than the
machine allows: an instructor checking what a grader without user namespaces does.

nbgrader talks to its Jupyter kernels over sockets; in a network namespace a kernel cannot reach
the grader's loopback, so grading kernels use Jupyter's IPC transport (Unix sockets in files).
"""
import contextlib
import dataclasses
import functools
import json
import os
import resource
import shutil
import signal
import site
import subprocess
import sys
from pathlib import Path

from autograder import REPO, settings
from autograder.sandbox import capabilities, cgroups, landlock, minimal_root, syscalls
from autograder.sandbox.syscalls import MS_BIND, MS_RDONLY, mount

KINDS = ("namespaces", "namespaces-only", "landlock", "none")
SYSTEM = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc")    # programs, libraries


@functools.lru_cache(maxsize=None)
def isolation():
    """``"namespaces"``, ``"landlock"`` or ``"none"``: the strongest kind available here, or the
    weaker one ``MINI_SANDBOX`` asks for (``namespaces-only``: namespaces as on a Linux without
    Landlock)."""
    wanted = settings.SANDBOX.get() or KINDS[0]
    if wanted not in KINDS:
        raise ValueError(f"MINI_SANDBOX={wanted!r}: expected one of {', '.join(KINDS)}")
    if wanted in ("namespaces", "namespaces-only") and _minimal_root_works():
        return "namespaces"
    if wanted in ("namespaces", "landlock") and _landlock_works():
        return "landlock"
    return "none"


def _minimal_root_works():
    """Whether Python starts in a minimal root here: user namespaces are allowed, and every
    step of building the root (:mod:`autograder.sandbox.minimal_root`) succeeds.  Where one fails,
    :func:`isolation` falls back to the next kind, as :func:`isolation_note` then says."""
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(_in_minimal_root([sys.executable, "-I", "-S", "-c", ""], keep=()),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return probe.returncode == 0


def isolation_note():
    """One sentence for every result: how student code was isolated, and what was not."""
    return _isolation_clause() + "; " + cgroups.note()


def _isolation_clause():
    kind = isolation()
    if kind == "namespaces":
        return ("isolation: own network namespace (no network); a minimal root: nothing of the "
                "machine's files but the system, Python, mini and the grader (read-only) and the "
                "submission's own folders"
                + ("; Landlock: nothing but the system, Python and mini readable, only the "
                   "submission's own folder writable" if _landlock_works() else ""))
    if kind == "landlock":
        return ("isolation: Landlock only (no user namespaces here): nothing but the system, "
                "Python and mini readable, only the submission's own folder writable, no TCP; "
                "but UDP was not cut, and what it wrote in its folder was bounded per file, not "
                "in all (it is removed after grading)")
    return ("isolation: NOT available here (neither user namespaces nor Landlock): the network was "
            "not cut and the worker could read the instructor's files and change the grader's; "
            "run the grader as a separate user or in a container (README, 'Grading untrusted "
            "code')")


def _landlock_works():
    return settings.SANDBOX.get() != "namespaces-only" and landlock.version() >= 4


@dataclasses.dataclass
class Limits:
    """What one submission's student code may use, on both paths (a pytest-path worker, an
    nbgrader-path kernel).  The defaults fit every lab's checks with room to spare."""

    cell_seconds: float = 60.0       # one notebook cell, nbgrader's too (where $MINI_CELL_TIMEOUT
    #                                  overrides it): lab 5's simulator cells need ~20 s on a
    #                                  loaded 2-core machine
    check_seconds: float = 30.0      # one check (lab 5's simulator checks are the slowest)
    worker_seconds: float = 300.0    # one worker process, wall clock
    memory_bytes: int = 4 * 2**30    # address space
    file_bytes: int = 64 * 2**20     # largest file the worker may write
    folder_bytes: int = 64 * 2**20   # all it writes in its working folder, with namespaces
    processes: int = 512             # processes AND threads: the CUDA simulator runs a thread
    #                                  per CUDA thread of a block
    output_chars: int = 20_000       # what the student printed, kept for the report

    def rlimits(self):
        """``{resource name: limit}`` for :func:`set_limits`: address space, CPU time (the whole
        submission's wall-clock limit and 5 s), file size, no core files, and ``NPROC``
        processes and threads on top of what the user runs already."""
        return {"AS": self.memory_bytes, "CPU": int(self.worker_seconds) + 5,
                "FSIZE": self.file_bytes, "CORE": 0, "NPROC": self.processes}


def cut(text, limit, more=None):
    """``text`` kept to ``limit`` characters, saying how many more there were (``more``, where
    the caller counted them): the one message of the output limit, on both paths."""
    more = len(text) - limit if more is None else more
    return text[:limit] + (f"\n... ({more} more characters cut)" if more > 0 else "")


def set_limits(rlimits, tasks):
    """Apply :meth:`Limits.rlimits` to this process, for good; ``tasks`` is what the user ran
    before (:func:`user_tasks`), since ``RLIMIT_NPROC`` counts all of the user's processes and
    threads.  That one does not bind root: a grader running as root counts them in a cgroup
    instead (:mod:`autograder.sandbox.cgroups`)."""
    for name, value in rlimits.items():
        value += tasks if name == "NPROC" else 0
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))


def start_limited(rlimits, tasks, group):
    """In a child the grader starts for student code or its compiler, before ``exec``: die with
    the grader (no orphan keeps running), join its cgroups ``group``
    (:mod:`autograder.sandbox.cgroups`) and take ``rlimits`` (:func:`set_limits`)."""
    with contextlib.suppress(AttributeError):           # no prctl: not Linux
        syscalls.libc.prctl(syscalls.PR_SET_PDEATHSIG, signal.SIGKILL)
    cgroups.join(group)
    set_limits(rlimits, tasks)


def user_tasks():
    """How many processes and threads the current user runs (what RLIMIT_NPROC counts)."""
    uid, count = os.getuid(), 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                count += len(os.listdir(entry / "task"))
        except OSError:
            continue
    return count


def confinement(writable, edition=None):
    """What a student-code process confines itself to with Landlock (None where isolation is
    ``none`` or Landlock missing): ``{"readable": [...], "writable": [...]}`` for
    :func:`confine`.  Readable are the system, Python with its packages and the student edition
    of mini in ``edition`` (``autograder.edition.for_grading``; a kernel adds its own, named by
    ``$MINI_EDITION``), never the full mini nor the grader (a process imports what it needs of
    the grader before it confines itself); writable are ``writable`` and /dev/null."""
    if isolation() == "none" or not _landlock_works():
        return None
    system = [*SYSTEM, "/proc", "/sys", "/dev/urandom", "/dev/random", "/dev/zero"]
    excluded = [Path(path).resolve() for path in other_differentiators()]
    readable, listable = [], []
    for folder in _outermost(_python_folders()):
        _allowed_except(folder, excluded, readable, listable)
    return {"readable": [*system, *map(str, readable), *([str(edition)] if edition else [])],
            "writable": [*map(str, writable), "/dev/null"], "listable": list(map(str, listable))}


def _allowed_except(folder, excluded, readable, listable):
    """Add to ``readable`` what of ``folder`` may be read: all of it if none of ``excluded`` is
    inside, else each entry but those (Landlock's rules only allow, so a folder that holds an
    excluded one is allowed entry by entry, and only listed itself).  Paths are compared where
    their links lead, as Landlock's rules hold (a venv's ``lib64`` is its ``lib``)."""
    folder = folder.resolve()
    inside = [path for path in excluded if path.is_relative_to(folder)]
    if not inside:
        readable.append(folder)
    elif folder not in inside and folder not in listable:
        listable.append(folder)
        for entry in sorted(folder.iterdir()):
            _allowed_except(entry, inside, readable, listable)


def confine(spec):
    """Apply a :func:`confinement` in this process, for good (nothing to do for None)."""
    if spec:
        landlock.restrict(spec["readable"], spec["writable"], spec.get("listable", ()))


GRADER = REPO / "autograder"
"""The grader's source: the grader half of the hidden checks, which computes the answers.  A
student-code process imports the student half (``autograder.probes``), then covers the rest
(:func:`cover`), or confines itself without it (:func:`confinement`)."""

OTHER_DIFFERENTIATORS = ("autograd", "torch", "jax", "jaxlib", "tensorflow", "hypothesis")
"""Packages that compute derivatives, or the tests' tools (hypothesis): test and benchmark extras
that the course's grading environment and the kit do not install.  Where one is installed
beside the grader all the same (a developer's environment), student code finds it empty
(namespaces) and cannot import it (:func:`autograder.sandbox.guard.hide_autograder`'s hook)."""


def other_differentiators():
    """The folders (or files) of :data:`OTHER_DIFFERENTIATORS` installed here, found without
    importing them."""
    import importlib.util
    found = []
    for name in OTHER_DIFFERENTIATORS:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None:
            found += list(spec.submodule_search_locations or [spec.origin])
    return [path for path in found if path and os.path.exists(path)]


def cover(paths):
    """Lay /dev/null over each file of ``paths``, and an empty read-only folder over each folder,
    in this process's mount namespace (namespaces only, before the capabilities are dropped):
    reading gives nothing."""
    for path in paths:
        if os.path.isdir(path):
            mount("none", path, "tmpfs", MS_RDONLY, "size=4k")
        else:
            mount("/dev/null", path, None, MS_BIND, None)


def seal_off(spec, namespaces):
    """Take from this process, for good, the grader's source and its last rights, in the one
    order that works: with ``namespaces``, an empty folder over the grader (:func:`cover`), while
    mounting is still allowed; Landlock's ``spec``, which forbids mounting; and, with
    ``namespaces``, every capability dropped (:mod:`autograder.sandbox.capabilities`)."""
    if namespaces:
        cover([GRADER])
    confine(spec)
    if namespaces:
        capabilities.drop_all()


def sandboxed(command, keep=(), editions=(), private_bytes=None):
    """``command`` with no network, in a minimal root of its own
    (:mod:`autograder.sandbox.minimal_root`): of the host's files only the system, Python with its
    packages (none of :data:`OTHER_DIFFERENTIATORS`) and the grader, read-only, the folders
    ``keep``, read-write, each at its own path, and the student editions of mini ``editions``,
    read-only, each where :func:`seen_at` says; the command starts in the first of ``keep`` (else in
    /).  An item of
    ``keep`` or ``editions`` may name an environment variable (``"$MINI_KERNEL_HOME"``), read as
    the command starts (an edition's is then set to where the command sees it).  With
    ``private_bytes``, the first of ``keep`` is an empty folder of the command's own, of at most
    that many bytes, and the host's stays as it was.  The full mini is not there.  Unchanged where
    isolation is not ``namespaces``."""
    if isolation() != "namespaces":
        return command
    return _in_minimal_root(command, keep, editions, private_bytes)


def _in_minimal_root(command, keep, editions=(), private_bytes=None):
    layout = {"system": SYSTEM, "readonly": list(map(str, _root_folders())),
              "editions": list(map(str, editions)), "writable": list(map(str, keep)),
              "covered": other_differentiators(), "private_bytes": private_bytes}
    return ["unshare", "--user", "--map-root-user", "--mount", "--net", "--", sys.executable,
            "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); "
            "from autograder.sandbox.minimal_root import main; main()", json.dumps(layout),
            *command]


def seen_at(edition):
    """Where a sandboxed command (:func:`sandboxed`) finds the student edition of mini the host
    keeps in ``edition``: at a path of its own in a minimal root (not in the grader's home, where
    the host's cache is), where it is elsewhere."""
    return minimal_root.inside(edition) if isolation() == "namespaces" else str(edition)


def _root_folders():
    """What the minimal root shows read-only besides the system and the student editions: Python
    with its packages (at the paths Python names them by, and where those lead), and the grader
    (every student-code process imports its student half before the first line of student code
    runs)."""
    system = list(map(Path, SYSTEM))
    folders = [*system, *_python_paths(), *_python_folders(), REPO / "autograder"]
    return [folder for folder in _outermost(folders) if folder not in system and folder.is_dir()]


def _python_paths():
    """Python's installation, its base installation and its packages, as Python names them."""
    return [Path(sys.prefix), Path(sys.base_prefix), *map(Path, site.getsitepackages())]


def _python_folders():
    """The folders of :func:`_python_paths`, where their links lead."""
    return [folder.resolve() for folder in _python_paths() if folder.is_dir()]


def _outermost(folders):
    """``folders`` without those inside another one of them (covered already)."""
    folders = [Path(folder) for folder in folders]
    return [folder for folder in dict.fromkeys(folders)
            if not any(other != folder and folder.is_relative_to(other) for other in folders)]


STUDENT_VARIABLES = ("PATH", "LANG", "LC_ALL", "NUMBA_ENABLE_CUDASIM", "MINI_CUDA",
                     "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def student_environment(home, keep=()):
    """The environment student code starts with, on both paths: the few variables Python, numpy
    and numba need (``STUDENT_VARIABLES`` and ``keep``), nothing else of the grader's, and every
    folder a library writes to inside ``home``.  matplotlib's list of the machine's fonts, where
    the grader has one, is copied there: each new home would otherwise cost the student's code
    half a second of CPU to rebuild it."""
    home = str(home)
    environment = {key: os.environ[key] for key in (*STUDENT_VARIABLES, *keep)
                   if key in os.environ}
    environment.update(HOME=home, TMPDIR=home, MPLCONFIGDIR=os.path.join(home, "matplotlib"),
                       NUMBA_CACHE_DIR=os.path.join(home, "numba"), PYTHONDONTWRITEBYTECODE="1")
    fonts = _font_lists()
    if fonts:
        os.makedirs(environment["MPLCONFIGDIR"], exist_ok=True)
        for font_list in fonts:
            shutil.copy(font_list, environment["MPLCONFIGDIR"])
    return environment


def _font_lists():
    """matplotlib's font lists in the grader's own cache folder (found without importing it)."""
    folder = os.environ.get("MPLCONFIGDIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "matplotlib")
    return sorted(Path(folder).glob("fontlist-v*.json"))
