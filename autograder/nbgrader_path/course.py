"""The nbgrader course as Python objects: its configuration and nbgrader's API over it.

Everything nbgrader writes goes to the course folder (``MINI_COURSE_DIR``, default ``course/``),
and Jupyter's own config/data/runtime folders are pointed inside it, so grading never touches the
user's home folder.
"""
import os
import stat
import sys
from pathlib import Path

from autograder import REPO, settings
from autograder.labs import LABS, lab_name

CONFIG_FOLDER = REPO / "autograder" / "config"    # where nbgrader runs: it reads nbgrader_config.py
CONFIG_FILE = CONFIG_FOLDER / "nbgrader_config.py"


def course_dir():
    return Path(settings.COURSE_DIR.get()).resolve()


def place(part, *below):
    """A place in the course folder, the one map of its layout: ``submitted/<student>/<lab>/``
    (what ``collect`` brings in), ``autograded/`` and ``feedback/`` (nbgrader's), ``results/``
    (the pytest path's), ``gradescope/`` (the zips), ``gradebook.db``, ``grades.csv`` and, on a
    laptop, ``exchange/``.  ``place("submitted", student, lab)`` is one submission's folder."""
    return course_dir().joinpath(part, *below)


def isolate_jupyter(folder):
    """Point Jupyter's config, data and runtime folders under ``folder`` (not ``~``)."""
    for variable, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                          ("JUPYTER_RUNTIME_DIR", "runtime")):
        os.environ.setdefault(variable, str(Path(folder) / ".jupyter" / sub))


def find_nbgrader_tools():
    """nbgrader runs ``alembic`` as a command: put this interpreter's ``bin/`` (the virtualenv's)
    on PATH, so that ``.venv/bin/python -m autograder`` works without activating the venv."""
    tools = str(Path(sys.executable).parent)
    if tools not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = tools + os.pathsep + os.environ.get("PATH", "")


def template_folders():
    """Where nbconvert looks for the templates of nbgrader's pages, first to last: mini's (its
    feedback page, ``autograder/nbgrader_path/templates/feedback``), then nbgrader's own (the
    formgrader's)."""
    import nbgrader
    return [str(Path(__file__).resolve().parent / "templates"),
            str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates")]


def load_config():
    from traitlets.config.loader import PyFileConfigLoader
    return PyFileConfigLoader(CONFIG_FILE.name, path=str(CONFIG_FILE.parent)).load_config()


def api(db_url=None, kernel_name=None, ipc_prefix=None):
    """nbgrader's Python API on this course (about 1 s per notebook instead of 4 s per CLI call).

    ``db_url`` replaces the course gradebook (a parallel worker grades into its own copy);
    ``kernel_name`` runs notebooks in that kernel, whatever kernel the notebook names, over
    Jupyter's IPC transport with sockets at ``ipc_prefix``-<port> (the sandboxed grading kernel of
    ``autograder.sandbox``: it has no network, and starts in another folder, so the prefix must be
    an absolute path).
    """
    course = course_dir()
    course.mkdir(parents=True, exist_ok=True)
    isolate_jupyter(course)
    find_nbgrader_tools()
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    config = load_config()
    if db_url:
        config.CourseDirectory.db_url = db_url
    if kernel_name:
        config.Execute.kernel_name = kernel_name
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = str(ipc_prefix)
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def exchange_dir():
    """nbgrader's exchange folder (``nbgrader_config.py`` gives nbgrader this one): on a shared
    server the system folder the hub passes as ``MINI_EXCHANGE_DIR``, else the course folder's
    ``exchange/``."""
    return Path(settings.EXCHANGE_DIR.get() or place("exchange")).resolve()


def ensure_exchange():
    """Make the exchange folder writable by everyone with the sticky bit (mode 1777), as nbgrader
    requires: students create their submissions in it, and none may delete another's.

    Raises PermissionError, naming the folder and the command that fixes it, when this account can
    neither create it nor set its mode (a system folder such as /srv/nbgrader/exchange).
    """
    folder = exchange_dir()
    fix = f"ask an administrator to run: sudo install -d -m 1777 {folder}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if stat.S_IMODE(folder.stat().st_mode) != 0o1777:
            folder.chmod(0o1777)
    except PermissionError:
        raise PermissionError(f"the exchange folder {folder} is missing or not mode 1777; "
                              f"{fix}") from None
    return folder


def expand(labs):
    """``"all"`` to every lab, ``"lab3"`` to ``["lab3_autodiff"]``, ``"lab1,lab3"`` to both."""
    if labs == "all":
        return list(LABS)
    try:
        return [lab_name(lab.strip()) for lab in labs.split(",")]
    except ValueError as error:
        raise ValueError(f"{error} (or 'all')") from None


def release(lab="all"):
    """Generate the student version of each lab from ``solutions/`` into the release folder, give
    each its configured due date, and make sure the exchange is there for ``nbgrader
    release_assignment``."""
    from autograder.nbgrader_path import late
    ensure_exchange()           # first: nbgrader's API complains of an exchange that is not there
    grader = api()
    for name in expand(lab):
        result = grader.generate_assignment(name, force=True)
        if not result["success"]:
            raise RuntimeError(f"nbgrader could not release {name}:\n{result['log']}\n"
                               f"{result.get('error', '')}")
    late.apply_due_dates(grader, expand(lab))    # the configured due dates, into the gradebook
