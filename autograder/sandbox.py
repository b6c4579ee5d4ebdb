"""Run student code where it cannot see the course or reach the network (Linux namespaces).

Both grading paths start student code through :func:`sandboxed`: the command runs in new user,
mount and network namespaces (``unshare``, no privileges needed where the kernel allows
unprivileged user namespaces), with an empty tmpfs mounted over each hidden folder and the grader's
code and Python read-only, so a submission cannot change what grades the next one.  Where
``unshare`` cannot do that, commands run unchanged and :func:`isolation_note` says so in every result.

nbgrader talks to its Jupyter kernels over sockets; in a network namespace a kernel cannot reach
the grader's loopback, so grading kernels use Jupyter's IPC transport (Unix sockets in files).
"""
import functools
import json
import os
import shlex
import shutil
import site
import subprocess
import sys
from pathlib import Path

KERNEL_NAME = "mini-grader"


@functools.lru_cache(maxsize=None)
def isolation_available():
    """Whether ``unshare`` can give a process its own user, mount and network namespaces here
    (most Linux desktops and CI runners; not macOS, not some hardened servers)."""
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "--net", "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return probe.returncode == 0


def isolation_note():
    if isolation_available():
        return ("isolation: own network namespace (no network); course folder and solutions "
                "hidden from the submission; mini, the grader and Python read-only")
    return ("isolation: NOT available here (no unprivileged user namespaces): the network was not "
            "cut and the worker could read the instructor's files and change the grader's; run "
            "the grader as a separate user or in a container (README, 'Grading untrusted code')")


def sandboxed(command, hidden, keep=None):
    """``command`` with no network, an empty folder over each of ``hidden``, and the grader's own
    code and Python installation read-only (:func:`protected_folders`).

    ``keep``: a shell expression naming one folder inside a hidden one that must stay visible
    (bind-mounted back, writable); the command then starts in it.  Unchanged where isolation is
    unavailable.
    """
    if not isolation_available():
        return command
    script = ""
    if keep:
        script += f'stash=$(mktemp -d) && mount --bind "{keep}" "$stash" && '
    script += "".join(f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && "
                      for folder in map(shlex.quote, map(str, _outermost(protected_folders()))))
    script += "".join(f"mount -t tmpfs -o size=1m none {shlex.quote(str(folder))} && "
                      for folder in _outermost(hidden))
    if keep:
        script += f'mkdir -p "{keep}" && mount --bind "$stash" "{keep}" && cd "{keep}" && '
    return ["unshare", "--user", "--map-root-user", "--mount", "--net", "--", "sh", "-c",
            script + 'exec "$@"', "sh", *command]


def protected_folders():
    """What student code must not change: this repository (mini, the checks, the grader) and the
    Python installation with its packages, which every later submission and the grader import."""
    folders = [Path(__file__).resolve().parent.parent, Path(sys.prefix), Path(sys.base_prefix),
               *map(Path, site.getsitepackages())]
    return [folder.resolve() for folder in folders if folder.is_dir()]


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
    folder a library writes to inside ``home``."""
    home = str(home)
    environment = {key: os.environ[key] for key in (*STUDENT_VARIABLES, *keep)
                   if key in os.environ}
    environment.update(HOME=home, TMPDIR=home, MPLCONFIGDIR=os.path.join(home, "matplotlib"),
                       NUMBA_CACHE_DIR=os.path.join(home, "numba"), PYTHONDONTWRITEBYTECODE="1")
    return environment


def install_grading_kernel(data_dir, hidden, memory_bytes, file_bytes):
    """A kernelspec ``mini-grader`` under ``data_dir``: python3 inside the sandbox, started by
    :mod:`autograder.kernel` with these limits, in the folder named by ``$MINI_KERNEL_HOME`` (the
    submission's autograded copy)."""
    folder = Path(data_dir) / "kernels" / KERNEL_NAME
    folder.mkdir(parents=True, exist_ok=True)
    repo = str(Path(__file__).resolve().parent.parent)
    launcher = [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {repo!r}); "
                "from autograder.kernel import main; main()", str(memory_bytes), str(file_bytes),
                "-f", "{connection_file}"]
    argv = sandboxed(launcher, hidden, keep="$MINI_KERNEL_HOME")
    (folder / "kernel.json").write_text(json.dumps(
        {"argv": argv, "display_name": "Python 3 (grading)", "language": "python"}))
    return KERNEL_NAME
