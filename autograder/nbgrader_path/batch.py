"""The nbgrader path for a whole class: autograde in parallel, and feedback.

nbgrader grades one submission at a time into one SQLite gradebook, running it in a Jupyter
kernel with the grader's own rights; here the kernel is the sandboxed one of
``autograder.sandbox``.  To use every core without two
processes ever writing that file, each worker process grades into its OWN copy of the gradebook
(made when the worker starts), reads back the scores it just wrote, and returns them as plain data;
the parent alone writes them into the course gradebook, one submission per transaction.  After a
submission's scores are in, a marker with the notebook's hash is left beside its autograded copy,
so a batch that was interrupted resumes where it stopped and an unchanged submission is not graded
twice.

Ctrl-C stops a batch between two merges.  The parent takes SIGINT as a request (a flag, not an
exception that could land in the middle of a merge, or in a finalizer that would swallow it),
merges nothing more and tells the workers to stop, and each worker ends at once: left alone,
nbclient turns SIGINT into a shut-down kernel, ``ResilientExecute`` takes that for a crash of the
student's code, starts a new kernel and grades on, and the pool would run every queued submission
before letting go.  The scores merged before stay, with their markers; the next run grades the
rest.
"""
import collections
import concurrent.futures
import contextlib
import hashlib
import multiprocessing
import os
import re
import shutil
import signal
import tempfile
import threading
import warnings
from pathlib import Path

from autograder import edition, sandbox, settings
from autograder.nbgrader_path import course, forkserver, jupyter_kernel, late
from autograder.notebooks import read_notebook
from autograder.sandbox import cgroups
from autograder.sandbox import scratch as folders

MARKER = ".mini-graded"


def submissions(lab):
    """``[(student, notebook path)]`` collected for ``lab``, sorted by student (the notebook may
    be missing from a student's folder).

    Raises FileNotFoundError when nothing was ever collected into the course (no ``submitted/``),
    and PermissionError when that folder cannot be read: either way nothing could be graded.
    """
    root = course.place("submitted")
    if not root.is_dir():
        raise FileNotFoundError(f"there is no folder of submissions {root}: bring them in with "
                                "'python -m autograder collect DIR' first")
    if not os.access(root, os.R_OK | os.X_OK):
        raise PermissionError(f"the folder of submissions {root} cannot be read")
    return sorted((folder.parent.name, folder / f"{lab}.ipynb")
                  for folder in root.glob(f"*/{lab}") if folder.is_dir())


Outcome = collections.namedtuple("Outcome", "graded zeroed failed")


def autograde(labs, workers=None, force=False, progress=True):
    """Autograde every collected submission of each lab in ``labs``.

    All labs share one pool of workers, so a worker done with one lab goes on with the next while
    another is still on a slow submission.  Returns ``{lab: Outcome(graded, zeroed, failed)}``: the
    students graded now; ``{student: reason}`` for files that are not a usable notebook of the lab
    (scored 0, the reason in the gradebook's comments); and ``{student: reason}`` for those
    nbgrader could not grade.  One failing submission never stops the batch.
    """
    _quiet_nbgrader()
    outcomes = {lab: Outcome([], {}, {}) for lab in labs}
    todo, before = [], {lab: [] for lab in labs}
    for lab in labs:
        collected = submissions(lab)
        if collected:
            _require_released(lab)
        late.prepare(course.api(), [lab])       # due dates, timestamps: before workers copy the db
        for student, path in collected:
            if not force and _already_graded(lab, student, path):
                before[lab].append(student)
                continue
            try:
                read_notebook(path, lab)
            except ValueError as error:
                outcomes[lab].zeroed[student] = str(error)
                _merge_zero(lab, student, path, str(error))
                _mark_graded(lab, student, path)
                continue
            todo.append((lab, student, path))
    for attempt in (1, 2):      # a grading process that dies takes its pool down: retry once
        lost = []
        for (lab, student, path), problem in _autograde_in_pool(todo, workers, progress):
            if problem is None:
                outcomes[lab].graded.append(student)
            elif problem.startswith("BrokenProcessPool") and attempt == 1:
                lost.append((lab, student, path))
            else:
                outcomes[lab].failed[student] = problem
        todo = lost
    for lab, students in before.items():    # graded before: a due date or time may have changed
        if students:
            late.reassess(course.api(), lab, students)
    return outcomes


def _require_released(lab):
    """nbgrader grades against the lab's entry in the gradebook, which ``release`` makes: without
    it every submission would fail, one by one, with a message that names the pool, not the
    cause."""
    from nbgrader.api import Gradebook, MissingEntry
    grader = course.api()
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        try:
            if gb.find_assignment(lab).notebooks:
                return
        except MissingEntry:
            pass
    raise ValueError(f"{lab} has not been released in the course {course.course_dir()}: run "
                     f"'python -m autograder release {lab}' first")


def _autograde_in_pool(todo, workers, progress):
    """Grade ``[(lab, student, path)]`` in a pool, merging scores as they come back.

    Returns ``[((lab, student, path), None or why it could not be graded)]``; raises
    KeyboardInterrupt after a Ctrl-C, once the workers have stopped.
    """
    from tqdm import tqdm

    if not todo:
        return []
    gradebook = course.place("gradebook.db")
    workers = _pool_size(workers, len(todo))
    results = []
    scratch = folders.make("mini-autograde-")     # swept by the next batch if this one is killed
    context = multiprocessing.get_context("spawn")
    interrupted, stop = threading.Event(), context.Event()   # seen by the parent, the workers
    try:
        with _ctrl_c_sets(interrupted), cgroups.scope("max") as cgroup, \
                concurrent.futures.ProcessPoolExecutor(
                    workers, mp_context=context, initializer=_start_worker,
                    initargs=(str(gradebook), str(scratch), dict(os.environ), stop,
                              sorted({lab for lab, _, _ in todo}), cgroup)) as pool, \
                tqdm(total=len(todo), desc="autograde", unit="submission",
                     disable=not progress) as bar:
            pending = {pool.submit(_grade_one, lab, student): (lab, student, path)
                       for lab, student, path in todo}
            while pending and not interrupted.is_set():
                done, _ = concurrent.futures.wait(
                    pending, timeout=0.2, return_when=concurrent.futures.FIRST_COMPLETED)
                for job in done:
                    if interrupted.is_set():
                        break
                    lab, student, path = submission = pending.pop(job)
                    try:
                        scores, problem = job.result()
                    except Exception as error:       # the worker process itself died
                        scores, problem = None, f"{type(error).__name__}: {error}"
                    if scores is not None and (problem := _no_room_to_merge()) is None:
                        _merge(lab, student, scores)
                        _mark_graded(lab, student, path)
                    results.append((submission, problem))
                    bar.update()
            if interrupted.is_set():
                stop.set()
                for job in pending:
                    job.cancel()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if interrupted.is_set():
        raise KeyboardInterrupt(f"autograde stopped with {len(results)} of {len(todo)} "
                                "submission(s) done")
    return results


def _pool_size(workers, jobs):
    """``workers`` (default: one per core), but never more than there are jobs."""
    return max(1, min(workers or os.cpu_count() or 1, jobs))


@contextlib.contextmanager
def _ctrl_c_sets(event):
    """While the batch runs, SIGINT sets ``event`` instead of raising KeyboardInterrupt wherever
    the main thread happens to be.  Off the main thread (Python runs no signal handlers there)
    nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda number, frame: event.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)


def _quiet_nbgrader():
    """nbgrader's gradebook code warns (SQLAlchemy, cells without ids) on every submission; its
    errors come back in its log, so the warnings are only noise in an instructor's terminal."""
    warnings.filterwarnings("ignore", module=r"nbgrader\.")
    warnings.filterwarnings("ignore", module=r"nbformat\.")


def _autograded(lab, student):
    """The folder of a submission's autograded copy (where its kernel runs and its marker lies)."""
    return course.place("autograded", student, lab)


def _already_graded(lab, student, path):
    marker = _autograded(lab, student) / MARKER
    return marker.is_file() and marker.read_text() == _digest(path)


def _mark_graded(lab, student, path):
    """Leave the hash of the notebook whose scores are now in the gradebook."""
    _autograded(lab, student).mkdir(parents=True, exist_ok=True)
    (_autograded(lab, student) / MARKER).write_text(_digest(path))


def _digest(path):
    path = Path(path)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "no notebook"


# --- inside a worker process ---------------------------------------------------------------------

_api = None
_server = None      # the worker's fork server (nbgrader_path.forkserver), ends with the worker
_runtime = None     # the worker's runtime folder: its kernel's connection file, sockets and home


def _start_worker(gradebook, scratch, environment, stop, labs, cgroup=None):
    """Copy the gradebook for this worker alone and open nbgrader's API on the copy.

    Notebooks run in the sandboxed grading kernel: of the machine's files it sees the system,
    Python and mini, the submission's own autograded copy and this worker's runtime folder (its
    connection file and sockets), so neither the rest of the course folder, nor the solutions,
    nor the rest of the batch's folder (the gradebook copies, every worker's kernel launch file,
    the other workers' kernels), nor the network.  The worker's fork server
    (:mod:`autograder.nbgrader_path.forkserver`) starts those kernels; it ends when the worker does.
     With
    ``cgroup`` (the batch's, when the grader runs as root) the server and every process a kernel
    starts are in it, so that none outlives the batch, even one that left its kernel's session.
    """
    global _api, _server, _runtime
    threading.Thread(target=_exit_when_set, args=(stop,), daemon=True).start()
    os.environ.update(environment)
    _quiet_nbgrader()
    mine = Path(scratch) / str(os.getpid())
    (mine / "db").mkdir(parents=True)
    private = mine / "db" / "gradebook.db"
    shutil.copy(gradebook, private)
    os.environ.update(JUPYTER_DATA_DIR=str(mine / "jupyter"), JUPYTER_RUNTIME_DIR=str(mine / "run"))
    limits = sandbox.Limits()
    _runtime = mine / "run"
    _runtime.mkdir()
    tempfile.tempdir = str(_runtime)        # where jupyter_client writes each connection file
    _server, server_socket = forkserver.start(
        mine / "server", mine / "run", course.place("autograded"),
        limits, sandbox.confinement([]), labs, cgroup)
    through = forkserver.client_command(server_socket) if server_socket else ()
    kernel = jupyter_kernel.install_grading_kernel(mine / "jupyter", mine / "run", limits, through)
    _api = course.api(db_url=f"sqlite:///{private}", kernel_name=kernel,
                      ipc_prefix=mine / "run" / "kernel-ipc")


def _exit_when_set(stop):
    """End this worker as soon as the parent says stop, whatever nbgrader is doing.  Its kernel
    follows: ipykernel exits when its parent process is gone."""
    stop.wait()
    os._exit(1)


def _grade_one(lab, student):
    """Autograde one submission into the private gradebook; return its scores as plain data."""
    settings.KERNEL_HOME.set(_autograded(lab, student))
    settings.EDITION.set(edition.for_grading(lab))
    _empty(_runtime)
    result = _api.autograde(lab, student, force=True)
    if not result["success"]:
        return None, _reason(result.get("log", "") + "\n" + (result.get("error") or ""))
    from nbgrader.api import Gradebook
    with Gradebook(_api.coursedir.db_url, _api.coursedir.course_id) as gb:
        submission = gb.find_submission(lab, student)
        return {"timestamp": submission.timestamp,
                "notebooks": {nb.name: {"grades": {g.name: g.auto_score for g in nb.grades},
                                        "comments": {c.name: c.auto_comment for c in nb.comments},
                                        "late_penalty": nb.late_submission_penalty}
                              for nb in submission.notebooks}}, None


def _empty(folder):
    """Remove what the kernels before left in ``folder`` (their homes: files, IPython's history of
    their code), so that the next submission's kernel, which sees the folder, finds none of it.
    The folder itself stays: the fork server's root holds it."""
    for path in folder.iterdir():
        if path.is_dir() and not path.is_symlink():
            os.chmod(path, 0o700)                   # a folder its kernel made unreadable too
            for inside, folders, _ in os.walk(path):
                for name in folders:
                    if not os.path.islink(os.path.join(inside, name)):
                        os.chmod(os.path.join(inside, name), 0o700)
            shutil.rmtree(path)
        else:
            path.unlink()


def _reason(log):
    """The line of nbgrader's log that says what went wrong (not its "see the traceback")."""
    errors = [line.strip() for line in log.splitlines()
              if re.match(r"\s*[\w.]*(Error|Exception)\b", line) and "see the the above" not in line]
    return errors[-1][:300] if errors else "nbgrader could not grade it (no error message)"


# --- back in the parent --------------------------------------------------------------------------

MERGE_ROOM = 32 * 2**20     # free bytes the course folder's disk must have for a merge


def _no_room_to_merge():
    """Why no score may be written into the gradebook now (its disk is nearly full), or None.
    A full disk half-way through a SQLite transaction fails it; checked before, the submission is
    left ungraded, with this reason, and the next run grades it."""
    free = shutil.disk_usage(course.course_dir()).free
    if free >= MERGE_ROOM:
        return None
    return (f"not written to the gradebook: the course folder's disk has {free // 2**20} MiB "
            f"free, below the {MERGE_ROOM // 2**20} MiB a merge needs; free some space and run "
            "autograde again (it grades what is left)")


def _merge(lab, student, scores):
    """Write one submission's automatic scores into the course gradebook (one transaction)."""
    from nbgrader.api import Gradebook
    grader = course.api()
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        gb.update_or_create_student(student)
        gb.update_or_create_submission(lab, student, timestamp=scores["timestamp"])
        for notebook, cells in scores["notebooks"].items():
            for name, auto_score in cells["grades"].items():
                grade = gb.find_grade(name, notebook, lab, student)
                grade.auto_score = auto_score
                grade.needs_manual_grade = grade.manual_score is not None or auto_score is None
            for name, auto_comment in cells["comments"].items():
                gb.find_comment(name, notebook, lab, student).auto_comment = auto_comment
            gb.find_submission_notebook(notebook, lab, student).late_submission_penalty = \
                cells.get("late_penalty")
        gb.db.commit()


def _merge_zero(lab, student, path, reason):
    """Score every cell of an unusable submission 0, with ``reason`` as each cell's comment."""
    from nbgrader.api import Gradebook
    grader = course.api()
    timestamp = grader.coursedir.get_existing_timestamp(str(Path(path).parent))
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        gb.update_or_create_student(student)
        submission = gb.update_or_create_submission(lab, student, **(
            {"timestamp": timestamp} if timestamp else {}))
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                grade.auto_score, grade.needs_manual_grade = 0.0, False
            for comment in notebook.comments:
                comment.auto_comment = f"Not graded: {reason}"
        gb.db.commit()


def feedback(lab, workers=None):
    """HTML feedback for every autograded submission of ``lab`` (hidden tests removed), one
    submission per worker process at a time (each writes its own student's folder and only reads
    the gradebook).  Returns ``{student: why there is none}``."""
    problems, todo = {}, []
    for student, _ in submissions(lab):
        if (_autograded(lab, student) / f"{lab}.ipynb").is_file():
            todo.append(student)
        else:
            problems[student] = "not autograded (an unusable file: see the gradebook's comments)"
    if not todo:
        return problems
    workers = _pool_size(workers, len(todo))
    with concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for student, problem in zip(todo, pool.map(_feedback_one, [lab] * len(todo), todo)):
            if problem:
                problems[student] = problem
    return problems


_feedback_api = None


def _feedback_one(lab, student):
    """In a worker process: one submission's feedback; None, or what went wrong."""
    global _feedback_api
    _quiet_nbgrader()
    _feedback_api = _feedback_api or course.api()
    result = _feedback_api.generate_feedback(lab, student, force=True)
    return None if result["success"] else (result.get("error") or result.get("log") or "")[-1000:]
