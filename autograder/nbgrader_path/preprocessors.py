"""nbgrader preprocessors that make the nbgrader path grade what a submission did to itself, and
its feedback say what is not graded yet.

* :class:`RestoreCells` runs before nbgrader's own clean-up: the lab's source notebook (as recorded
  in the gradebook) decides which cells are tests and what they are worth, whatever the
  submission's metadata claims.  nbgrader already restores an edited or deleted test cell; it
  refuses a notebook with a duplicated or split one, or a solution cell re-marked as worth points.
* :class:`ResilientExecute` replaces nbgrader's ``Execute``: a cell that kills its kernel (a crash,
  ``os._exit``, a signal) or leaves it deaf to interrupts costs that cell, not the whole notebook.
* :class:`VerdictsOutsideKernel` is that, with each test cell's hidden checks decided here, in the
  grader's process, from what the kernel reports (``autograder.hidden``); while a test cell runs,
  it answers the questions of the checks' stand-ins on the kernel's input channel.
* :class:`CutOutput` keeps what a cell printed to a bounded size (nbgrader's ``LimitOutput``
  counts lines, and one line of 50 MB is one line).
* :class:`StderrIsNotFailure` lets a test cell that passed keep its points when something in it
  printed to stderr (a warning): nbgrader scores any stderr output 0, the pytest path does not.
* :class:`GradesWithPending` gives the feedback page the grades, a written answer not graded yet
  as no score rather than 0.

All are named in ``nbgrader_config.py``.
"""
import asyncio
import contextlib
import copy
import json
import os
import queue
import secrets
import shutil
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager, KernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbformat import v4
from nbgrader.api import Gradebook
from nbgrader.preprocessors import Execute, GetGrades, NbGraderPreprocessor
from traitlets import Type

from autograder import hidden, sandbox
from autograder.checks import answer, cases, checks_of, new_seed, ptx
from autograder.labs import LABS, fill_in_tested_by
from autograder.notebooks import is_test_cell, names_tests_read, skips_demo, visible_part

KERNEL_DIED = "KernelDied"
DEAF = "KernelNotResponding"


class RestoreCells(NbGraderPreprocessor):
    """Give every cell the lab knows by its grade id the metadata the lab gave it.

    A cell claiming a grade id already seen (a duplicated or split test) is dropped, a cell
    claiming an unknown one becomes a plain cell, and a cell whose type was changed is replaced by
    an empty one of the right type.  nbgrader's ``OverwriteCells`` then restores the test cells'
    sources and puts back the ones that are missing.
    """

    def preprocess(self, nb, resources):
        lab, name = resources["nbgrader"]["assignment"], resources["nbgrader"]["notebook"]
        with Gradebook(resources["nbgrader"]["db_url"]) as gb:
            source = gb.find_notebook(name, lab)
            known = _release_metadata(source)
            types = {cell.name: cell.cell_type for cell in source.source_cells}
        kept, seen = [], set()
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id is None or grade_id not in known:
                cell.metadata.pop("nbgrader", None)
            elif grade_id in seen:
                continue
            else:
                seen.add(grade_id)
                if cell.cell_type != types[grade_id]:
                    make = v4.new_code_cell if types[grade_id] == "code" else v4.new_markdown_cell
                    cell = make("", metadata={**cell.metadata})
                cell.metadata["nbgrader"] = known[grade_id]
            kept.append(cell)
        nb.cells = kept
        return nb, resources


def _release_metadata(notebook):
    """``{grade id: nbgrader metadata}`` as the release gave them, rebuilt from the gradebook."""
    grades = {cell.name: cell.max_score for cell in notebook.grade_cells}
    tasks = {cell.name: cell.max_score for cell in notebook.task_cells}
    solutions = {cell.name for cell in notebook.solution_cells}
    known = {}
    for cell in notebook.source_cells:
        meta = {"grade_id": cell.name, "locked": cell.locked, "schema_version": 3,
                "solution": cell.name in solutions, "grade": cell.name in grades}
        if cell.name in grades:
            meta["points"] = grades[cell.name]
        if cell.name in tasks:
            meta.update(task=True, points=tasks[cell.name])
        known[cell.name] = meta
    return known


class ResilientExecute(Execute):
    """nbgrader's ``Execute``, going on after a cell kills its kernel or makes it unresponsive.

    nbclient gives up on a notebook when its kernel dies, and nbgrader then grades none of it.
    Here that cell gets an error output saying what happened, a fresh kernel re-runs the code cells
    before it (except those that already failed this way or timed out), and execution carries on
    with the next cell.  So a fill-in that crashes the kernel loses its own test cell's points, as
    on the pytest path.  Demo cells are not run, as on the pytest path (``notebooks.skips_demo``).
    """

    # nbgrader's Execute fixes nbclient's kernel_manager_class, whatever the config says
    kernel_manager = Type(AsyncKernelManager, klass=KernelManager, help=(
        "What starts each kernel: autograder.nbgrader_path.formgrader.SandboxedKernelManager "
        "inside a Jupyter server")).tag(config=True)

    def create_kernel_manager(self):
        self.kernel_manager_class = self.kernel_manager
        return super().create_kernel_manager()

    def preprocess(self, nb, resources=None, km=None):
        self._demo = _demo_cells(nb, resources)
        self._skip = set(self._demo)
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell, resources, index):
        if index in self._demo:
            return cell, resources
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._fail(cell, index, KERNEL_DIED, "the kernel died while this cell ran (a crash, "
                       "os._exit or a signal); later cells ran in a new kernel")
            return cell, self.resources
        except CellTimeoutError:        # interrupted, and still no word from the kernel
            self._fail(cell, index, DEAF, self._deaf_message())
            return cell, self.resources
        if any(out.get("ename") == "CellTimeoutError" for out in cell.get("outputs", [])):
            self._skip.add(index)
            if not self._responds():
                self._fail(cell, index, DEAF, self._deaf_message())
        return cell, self.resources

    def _deaf_message(self):
        return (f"the cell ran past {self.timeout} s and the kernel ignored the interrupt; later "
                "cells ran in a new kernel")

    def _fail(self, cell, index, name, message):
        cell.outputs = [v4.new_output("error", ename=name, evalue=message,
                                      traceback=[f"{name}: {message}"])]
        self._skip.add(index)
        self._restart(index)

    def _responds(self, seconds=5):
        """Whether the kernel answers a no-op within ``seconds``."""
        async def ping():
            msg_id = self.kc.execute("", silent=True, store_history=False)
            try:
                while True:
                    reply = await self.kc.shell_channel.get_msg(timeout=seconds)
                    if reply["parent_header"].get("msg_id") == msg_id:
                        return True
            except queue.Empty:
                return False
        return run_sync(ping)()

    def _restart(self, index):
        """A fresh kernel, brought to where the notebook was before cell ``index``."""
        self._cleanup_kernel()
        self.km = self.create_kernel_manager()
        self.start_new_kernel()
        self.start_new_kernel_client()
        for earlier, cell in enumerate(self.nb.cells[:index]):
            if cell.cell_type == "code" and earlier not in self._skip:
                try:
                    self.execute_cell(self._replayed(cell), earlier, store_history=True)
                except (DeadKernelError, CellTimeoutError):   # it behaved differently this time
                    self._skip.add(earlier)
                    self._restart(index)
                    return

    def _replayed(self, cell):
        """The copy of an earlier cell that a fresh kernel runs to catch up."""
        return copy.deepcopy(cell)


class VerdictsOutsideKernel(ResilientExecute):
    """Execute the notebook; decide each test cell's hidden checks in this process.

    Just before a test cell runs, the checks of its fill-in are drawn here for a seed drawn now,
    and its hidden section is replaced by the student half of each (their tasks, plain data) and
    a nonce (:func:`hidden.hidden_call`).  While the cell runs, the kernel may ask for the checks'
    stand-ins on its input channel (``input()``, open for test cells only), and each question is
    answered here for that cell's cases alone.  After the cell ran, :func:`hidden.judge` verifies
    the report against the expected values computed here and sets the cell's outputs, which
    ``SaveAutoGrades`` scores as usual (a partial score as the cell's value).  The cell keeps its
    source.  A visible test that fails is an error before the report, and still costs the cell.
    """

    _answering = None           # the cases of the test cell that is running

    def preprocess(self, nb, resources=None, km=None):
        folder = (resources or {}).get("metadata", {}).get("path")
        before = _files_in(folder)
        try:
            with ptx.one_submission():          # lab 5's kernels: one compiling process
                return super().preprocess(nb, resources, km)
        finally:
            _remove_new_files(folder, before)

    def preprocess_cell(self, cell, resources, index):
        tested = _tested(cell, resources)
        if tested is None:
            return super().preprocess_cell(cell, resources, index)
        lab, fill_in = tested
        seed, nonce, source = new_seed(), secrets.token_hex(16), cell.source
        drawn = cases(lab, fill_in, seed)
        cell.source = hidden.hidden_call(source, lab, fill_in, drawn, nonce)
        self._answering = drawn
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        finally:
            cell.source, self._answering = source, None
        points = float(cell.metadata["nbgrader"]["points"])     # the gradebook's (OverwriteCells)
        cell.outputs = hidden.judge(cell.get("outputs", []), fill_in, drawn, seed, nonce, points)
        return cell, resources

    async def async_execute_cell(self, cell, cell_index, execution_count=None,
                                 store_history=True):
        """nbclient's, with the kernel's input channel answered while a test cell runs."""
        if self._answering is None:
            return await super().async_execute_cell(cell, cell_index, execution_count,
                                                    store_history)
        self.kc.allow_stdin = True
        answering = asyncio.ensure_future(self._answer_questions(self._answering))
        try:
            return await super().async_execute_cell(cell, cell_index, execution_count,
                                                    store_history)
        finally:
            answering.cancel()
            self.kc.allow_stdin = False

    execute_cell = run_sync(async_execute_cell)     # nbclient binds its own, not an override

    async def _answer_questions(self, drawn):
        """Answer each question the kernel asks with what the stand-in of that case computes
        (:func:`autograder.checks.answer`); anything else gets a refusal."""
        while True:
            try:
                message = await self.kc.stdin_channel.get_msg(timeout=1)
            except queue.Empty:
                continue
            if message["header"]["msg_type"] != "input_request":
                continue
            try:
                question = json.loads(message["content"]["prompt"])
                reply = answer(drawn[question["case"]], question)
            except (ValueError, TypeError, KeyError, IndexError):
                self.kc.input("\x04")      # the student's own input(): it ends (EOFError), as
                continue                    # anywhere else while grading
            self.kc.input(json.dumps(reply))

    def _replayed(self, cell):
        """An earlier test cell catches up without its checks: they were decided already."""
        replay = copy.deepcopy(cell)
        if _tested(cell, self.resources) is not None:
            replay.source = visible_part(cell.source)
        return replay


def _files_in(folder):
    """Every path below ``folder`` (None: nothing), symbolic links not followed."""
    found = set()
    for parent, folders, files in os.walk(folder) if folder else ():
        found.update(Path(parent) / name for name in folders + files)
    return found


def _remove_new_files(folder, before):
    """Remove what the notebook's code wrote in ``folder``, where it ran: only the notebook,
    which nbgrader writes after, is kept of a graded submission (into ``autograded/`` and from
    there ``feedback/``), so that what one submission writes takes no room from the next."""
    for path in sorted(_files_in(folder) - before, key=lambda path: len(path.parts), reverse=True):
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()


def _demo_cells(nb, resources):
    """The indices of the cells that grading skips; none for a notebook of no known lab."""
    lab = (resources or {}).get("nbgrader", {}).get("assignment")
    if lab not in LABS:
        return set()
    read = names_tests_read(lab)
    return {index for index, cell in enumerate(nb.cells) if skips_demo(cell, read)}


def _tested(cell, resources):
    """``(lab, fill-in)`` whose checks a test cell runs, or None for any other cell."""
    if not is_test_cell(cell):
        return None
    grade_id = cell.metadata["nbgrader"]["grade_id"]
    lab = (resources or {}).get("nbgrader", {}).get("assignment")
    try:
        checks = checks_of(lab)
    except (ValueError, TypeError, ImportError):
        return None
    fill_in = fill_in_tested_by(grade_id)
    return (lab, fill_in) if fill_in in checks else None


class CutOutput(NbGraderPreprocessor):
    """Cut each text output of a code cell to ``max_chars`` characters; keep pictures up to
    ``max_image_chars`` each and ``max_notebook_image_chars`` in all (so the feedback still shows
    the lab's plots, while a notebook that draws thousands of them cannot bloat the gradebook);
    drop any other large data."""

    max_chars = sandbox.Limits.output_chars
    max_image_chars = 1_000_000                 # base64: a PNG of about 750 kB
    max_notebook_image_chars = 10_000_000

    def preprocess(self, nb, resources):
        self._images_left = self.max_notebook_image_chars
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            if isinstance(output.get("text"), str):
                output["text"] = sandbox.cut(output["text"], self.max_chars)
            for kind, value in list(output.get("data", {}).items()):
                if not isinstance(value, str) or len(value) <= self.max_chars:
                    continue
                if kind.startswith("text/"):
                    output["data"][kind] = sandbox.cut(value, self.max_chars)
                elif kind.startswith("image/") and len(value) <= min(self.max_image_chars,
                                                                     self._images_left):
                    self._images_left -= len(value)
                else:
                    del output["data"][kind]
                    output["data"]["text/plain"] = f"({kind} output of {len(value)} " \
                                                   "characters left out)"
        return cell, resources


class StderrIsNotFailure(NbGraderPreprocessor):
    """Show a test cell's stderr as ordinary output, so that only an error costs its points.

    A failed check raises (an ``error`` output, still scored 0); a warning printed by correct code
    on the way, such as numpy's or mini's own, is not a failure on either grading path.
    """

    def preprocess_cell(self, cell, resources, index):
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream" and output.get("name") == "stderr":
                    output["name"] = "stdout"
        return cell, resources


class GradesWithPending(GetGrades):
    """nbgrader's grades for the feedback page, with a score no one has given yet (a written
    answer before a grader scored it) left empty instead of 0, so that the page
    (``autograder/nbgrader_path/templates/feedback``) can say it is pending."""

    def _get_score(self, cell, resources):
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"], self.notebook_id,
                                          self.assignment_id, self.student_id)
        given = grade.auto_score is not None or grade.manual_score is not None
        cell.metadata.nbgrader["score"] = grade.score if given else None
        cell.metadata.nbgrader["points"] = grade.max_score
