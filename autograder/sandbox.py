"""Run student code where it cannot see the course, change the grader or reach the network.

Both grading paths start student code through this module, with the strongest kind of isolation
this machine allows (:func:`isolation`):

* ``namespaces`` (Linux with unprivileged user namespaces): :func:`sandboxed` runs the command in
  new user, mount and network namespaces (``unshare``), with an empty tmpfs over each hidden folder
  (:func:`hidden_folders`) and the grader's code and Python read-only, so a submission cannot read
  answers or change what grades the next one;
* ``landlock`` (no user namespaces, Linux 5.13+): no namespaces, but the Landlock confinement below;
* ``none``: resource limits only.

Wherever Landlock is available (both first kinds), the student-code process also confines itself
before any student code runs (:func:`confinement`, ``autograder.landlock``): only the system,
Python and mini may be read, only its own folders written, no TCP.  That allow-list is what keeps
answers elsewhere on the machine (another checkout, a temporary folder, a home folder) out of
reach.  Every result says what it had (:func:`isolation_note`).  ``MINI_SANDBOX=landlock`` or
``none`` asks for a weaker kind than the machine allows: an instructor checking what a grader
without user namespaces does.

nbgrader talks to its Jupyter kernels over sockets; in a network namespace a kernel cannot reach
the grader's loopback, so grading kernels use Jupyter's IPC transport (Unix sockets in files).
"""
import contextlib
import ctypes
import dataclasses
import functools
import itertools
import json
import os
import resource
import shlex
import shutil
import signal
import site
import subprocess
import sys
import time
from pathlib import Path

from autograder import REPO, landlock

KERNEL_NAME = "mini-grader"
KINDS = ("namespaces", "namespaces-only", "landlock", "none")


@functools.lru_cache(maxsize=None)
def isolation():
    """``"namespaces"``, ``"landlock"`` or ``"none"``: the strongest kind available here, or the
    weaker one ``MINI_SANDBOX`` asks for (``namespaces-only``: namespaces as on a Linux without
    Landlock)."""
    wanted = os.environ.get("MINI_SANDBOX", KINDS[0])
    if wanted not in KINDS:
        raise ValueError(f"MINI_SANDBOX={wanted!r}: expected one of {', '.join(KINDS)}")
    if wanted in ("namespaces", "namespaces-only") and _unshare_works():
        return "namespaces"
    if wanted in ("namespaces", "landlock") and _landlock_works():
        return "landlock"
    return "none"


def _unshare_works():
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "--net", "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return probe.returncode == 0


def isolation_note():
    """One sentence for every result: how student code was isolated, and what was not."""
    kind = isolation()
    if kind == "namespaces":
        return ("isolation: own network namespace (no network); course folder and solutions "
                "hidden; mini, the grader and Python read-only"
                + ("; Landlock: nothing but the system, Python and mini readable, only the "
                   "submission's own folder writable" if _landlock_works() else ""))
    if kind == "landlock":
        return ("isolation: Landlock only (no user namespaces here): nothing but the system, "
                "Python and mini readable, only the submission's own folder writable, no TCP; "
                "but UDP was not cut")
    return ("isolation: NOT available here (neither user namespaces nor Landlock): the network was "
            "not cut and the worker could read the instructor's files and change the grader's; "
            "run the grader as a separate user or in a container (README, 'Grading untrusted "
            "code')")


def _landlock_works():
    return os.environ.get("MINI_SANDBOX") != "namespaces-only" and landlock.version() >= 4


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
    processes: int = 512             # processes AND threads: the CUDA simulator runs a thread
    #                                  per CUDA thread of a block
    output_chars: int = 20_000       # what the student printed, kept for the report

    def rlimits(self):
        """``{resource name: limit}`` for :func:`set_limits`: address space, CPU time (the whole
        submission's wall-clock limit and 5 s), file size, no core files, and ``NPROC``
        processes and threads on top of what the user runs already."""
        return {"AS": self.memory_bytes, "CPU": int(self.worker_seconds) + 5,
                "FSIZE": self.file_bytes, "CORE": 0, "NPROC": self.processes}


def set_limits(rlimits, tasks):
    """Apply :meth:`Limits.rlimits` to this process, for good; ``tasks`` is what the user ran
    before (:func:`user_tasks`), since ``RLIMIT_NPROC`` counts all of the user's processes and
    threads.  That one does not bind root: a grader running as root counts them in a pids cgroup
    instead (:func:`task_cgroup`)."""
    for name, value in rlimits.items():
        value += tasks if name == "NPROC" else 0
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))


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


def confinement(writable, readable=()):
    """What a student-code process confines itself to with Landlock (None where isolation is
    ``none`` or Landlock missing): ``{"readable": [...], "writable": [...]}`` for
    :func:`confine`.  Readable are the system, Python with its packages, mini, and ``readable``;
    writable are ``writable`` and /dev/null."""
    if isolation() == "none" or not _landlock_works():
        return None
    system = ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/proc", "/sys",
              "/dev/urandom", "/dev/random", "/dev/zero"]
    return {"readable": [*system, *map(str, _python_folders()), str(REPO / "mini"),
                         *map(str, readable)],
            "writable": [*map(str, writable), "/dev/null"]}


def kernel_confinement():
    """The :func:`confinement` of an nbgrader-path kernel before it adds its own folders: it may
    also read the grader (its hidden test cells import the checks)."""
    return confinement([], readable=[REPO / "autograder"])


def confine(spec):
    """Apply a :func:`confinement` in this process, for good (nothing to do for None)."""
    if spec:
        landlock.restrict(spec["readable"], spec["writable"], spec.get("listable", ()))


def without(spec, files):
    """The :func:`confinement` ``spec`` with ``files`` of mini (its reference modules,
    :func:`autograder.guard.reference_files`) no longer readable: mini's folders may still be
    listed, and every other file in them read.  Landlock's rules only allow, so mini's folder
    gives way to a rule per file."""
    if not spec or not files:
        return spec
    hidden, mini = set(map(os.path.realpath, files)), str(REPO / "mini")
    readable = [path for path in spec["readable"] if path != mini]
    listable = []
    for folder, _, names in os.walk(mini):
        listable.append(folder)
        readable += [path for path in (os.path.join(folder, name) for name in names)
                     if os.path.realpath(path) not in hidden]
    return {**spec, "readable": readable, "listable": [*spec.get("listable", ()), *listable]}


def cover(files):
    """Lay /dev/null over each of ``files`` in this process's mount namespace (namespaces only,
    before the capabilities are dropped): reading one gives nothing."""
    for path in files:
        mount("/dev/null", path, None, MS_BIND, None)


MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
_libc = ctypes.CDLL(None, use_errno=True)


def mount(source, target, kind, flags, options):
    """mount(2); OSError naming ``target`` where it fails."""
    encode = (lambda text: None if text is None else os.fsencode(text))
    if _libc.mount(encode(source), encode(target), encode(kind), flags, encode(options)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {target}: {os.strerror(error)}")


@contextlib.contextmanager
def task_cgroup(tasks):
    """A pids cgroup in which at most ``tasks`` processes and threads can run (``"max"``: no
    limit, only the clean-up below), or None.

    ``RLIMIT_NPROC`` does not bind root, so a grader running as root (a container, CI) puts each
    worker in a cgroup of its own instead (:func:`join`, from the child).  On exit every process
    still in it is killed, including those that left the worker's process group, and the cgroup
    removed.  None where no pids cgroup can be made (not root, or no pids controller): the
    worker then relies on ``RLIMIT_NPROC``.
    """
    folder = new_cgroup(tasks)
    try:
        yield folder
    finally:
        if folder is not None:
            empty_cgroup(folder)


def new_cgroup(tasks):
    """The cgroup of :func:`task_cgroup`, made now (None where it cannot be, or not root); the
    caller removes it with :func:`empty_cgroup`."""
    return _new_cgroup(tasks) if os.geteuid() == 0 else None


def join(cgroup, pid=None):
    """Move process ``pid`` (default: the calling one) into ``cgroup`` (from :func:`task_cgroup`;
    nothing for None)."""
    if cgroup is not None:
        (Path(cgroup) / "cgroup.procs").write_text(str(pid or os.getpid()))


def _new_cgroup(tasks):
    for mount in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        if not (mount / "cgroup.procs").is_file() or (mount / "cgroup.controllers").is_file() \
                and "pids" not in (mount / "cgroup.controllers").read_text().split():
            continue
        _sweep(mount)
        folder = mount / f"mini-grading-{os.getpid()}-{next(_cgroups)}"
        try:
            folder.mkdir()
            (folder / "pids.max").write_text(str(tasks))
            return folder
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
    return None


_cgroups = itertools.count()


def _sweep(mount):
    """Empty and remove the grading cgroups whose maker has gone: a grader killed half-way
    (``kill -9``) could not, and what its student code left running is stopped here."""
    for folder in mount.glob("mini-grading-*-*"):
        maker = folder.name.split("-")[2]
        if maker.isdigit() and not Path(f"/proc/{maker}").exists():
            empty_cgroup(folder)


def nested_cgroup(parent, name, tasks):
    """A pids cgroup ``name`` inside ``parent`` (from :func:`task_cgroup`) allowing ``tasks``
    processes and threads, or None where the hierarchy refuses one (on cgroup v2, once
    ``parent`` holds a process itself).  :func:`empty_cgroup` removes it."""
    parent = Path(parent)
    with contextlib.suppress(OSError):      # cgroup v2: let the children count processes
        (parent / "cgroup.subtree_control").write_text("+pids")
    folder = parent / name
    try:
        folder.mkdir()
        (folder / "pids.max").write_text(str(tasks))
        return folder
    except OSError:
        with contextlib.suppress(OSError):
            folder.rmdir()
        return None


def empty_cgroup(folder):
    """Kill every process in cgroup ``folder`` and in the cgroups inside it, then remove them."""
    folder = Path(folder)
    for inner in [path for path in folder.iterdir() if path.is_dir()]:
        empty_cgroup(inner)
    for _ in range(100):
        pids = (folder / "cgroup.procs").read_text().split()
        if not pids:
            break
        for pid in map(int, pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    with contextlib.suppress(OSError):
        folder.rmdir()


def sandboxed(command, hidden, keep=()):
    """``command`` with no network, an empty folder over each of ``hidden``, and the grader's own
    code and Python installation read-only (:func:`protected_folders`).

    ``keep``: shell expressions naming folders inside hidden ones that must stay visible
    (bind-mounted back, writable); the command starts in the first.  Unchanged where isolation is
    unavailable.
    """
    if isolation() != "namespaces":
        return command
    script = "".join(f'stash{n}=$(mktemp -d) && mount --bind "{folder}" "$stash{n}" && '
                     for n, folder in enumerate(keep))
    script += "".join(f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && "
                      for folder in map(shlex.quote, map(str, protected_folders())))
    script += "".join(f"mount -t tmpfs -o size=1m none {shlex.quote(str(folder))} && "
                      for folder in _outermost(hidden))
    script += "".join(f'mkdir -p "{folder}" && mount --bind "$stash{n}" "{folder}" && '
                      for n, folder in enumerate(keep))
    if keep:
        script += f'cd "{keep[0]}" && '
    return ["unshare", "--user", "--map-root-user", "--mount", "--net", "--", "sh", "-c",
            script + 'exec "$@"', "sh", *command]


def protected_folders():
    """What student code must not change: this repository (mini, the checks, the grader) and the
    Python installation with its packages, which every later submission and the grader import."""
    return _outermost([REPO, *_python_folders()])


def _python_folders():
    folders = [Path(sys.prefix), Path(sys.base_prefix), *map(Path, site.getsitepackages())]
    return [folder.resolve() for folder in folders if folder.is_dir()]


def _outermost(folders):
    """``folders`` without those inside another one of them (covered already)."""
    folders = [Path(folder) for folder in folders]
    return [folder for folder in dict.fromkeys(folders)
            if not any(other != folder and folder.is_relative_to(other) for other in folders)]


def hidden_folders(submissions=None):
    """What student code must not see, on both paths: the answers, the course (gradebook, other
    submissions), nbgrader's exchange (every student's submissions, wherever it is), the folder
    of ``submissions`` being graded (``grade --submissions``, which may lie outside the course),
    and the grader's own Jupyter and IPython folders (:func:`personal_folders`)."""
    from autograder.course import course_dir, exchange_dir     # lazily: it imports the checks
    folders = [REPO / "solutions", course_dir(), exchange_dir(), *personal_folders()]
    if submissions:
        folders.append(Path(submissions))
    return list(dict.fromkeys(     # never the code the worker imports
        folder.resolve() for folder in folders
        if folder.is_dir() and not REPO.resolve().is_relative_to(folder.resolve())))


def personal_folders():
    """Where the grader's Jupyter finds its configuration, kernelspecs and runtime files (a
    server's token, its kernels' connection files), and where IPython keeps its profiles (their
    startup files run in every later IPython): every such folder but those holding the grader or
    Python (read-only to student code anyway).  The user's own are made when missing, so that
    they can be hidden: student code could create them otherwise, with a kernelspec or a startup
    file in."""
    from jupyter_core.paths import (jupyter_config_dir, jupyter_config_path, jupyter_data_dir,
                                    jupyter_path, jupyter_runtime_dir)
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    mine = (jupyter_runtime_dir(), jupyter_data_dir(), jupyter_config_dir(),
            os.environ.get("IPYTHONDIR") or os.path.expanduser("~/.ipython"),
            # and the user's own, which their other Jupyter servers use (nbgrader's API points
            # this process's variables at the course folder instead)
            os.path.expanduser("~/.jupyter"), os.path.join(data_home, "jupyter"),
            os.path.expanduser("~/.ipython"))
    for folder in mine:
        os.makedirs(folder, exist_ok=True)
    folders = dict.fromkeys(Path(folder).resolve()
                            for folder in (*mine, *jupyter_path(), *jupyter_config_path()))
    needed = protected_folders()
    return [folder for folder in folders if folder.is_dir()
            and not any(kept.is_relative_to(folder) for kept in needed)]


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


def install_grading_kernel(data_dir, runtime_dir, hidden, limits, through=()):
    """A kernelspec ``mini-grader`` under ``data_dir``: python3 inside the sandbox, started by
    :mod:`autograder.kernel` with ``limits`` (:class:`Limits`), in the folder named by
    ``$MINI_KERNEL_HOME`` (the submission's autograded copy).  Under Landlock the kernel may also
    read the grader (its hidden test cells import the checks) and write its own folders.

    ``hidden`` should cover ``data_dir``: a kernel that could rewrite this launch file would start
    the next submission's kernel as it pleased, outside the sandbox.  Of the folders it hides, the
    kernel keeps its own ``runtime_dir`` (its connection file and IPC sockets), and no other
    kernel's.  ``through``: a command that the launcher above is handed to as its last arguments
    (:func:`autograder.forkserver.client_command`: fork the kernel from a server, start it as
    above only where the server does not answer).
    """
    folder = Path(data_dir) / "kernels" / KERNEL_NAME
    folder.mkdir(parents=True, exist_ok=True)
    launcher = [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); "
                "from autograder.kernel import main; main()", json.dumps(limits.rlimits()),
                json.dumps(kernel_confinement()), json.dumps(isolation() == "namespaces"),
                "-f", "{connection_file}"]
    argv = [*through, *sandboxed(launcher, hidden, keep=["$MINI_KERNEL_HOME", str(runtime_dir)])]
    (folder / "kernel.json").write_text(json.dumps(
        {"argv": argv, "display_name": "Python 3 (grading)", "language": "python"}))
    return KERNEL_NAME
