"""The graded submissions of one lab, read from either grading path's results, for the class
report (:mod:`autograder.reports.class_report`).

Where each path leaves what a test cell lost:

* pytest path: ``results/<lab>/<student>/results.json`` (Gradescope's format, written by
  ``autograder.pytest_path.plugin``): per test, its score, and as its output either "the visible
  tests of <test> failed: <error>" or the verdict of :meth:`autograder.checks.Tally.report`, a line
  "- <behaviour> (<share> points): <message>" for each behaviour lost;
* nbgrader path: each test cell's score in the gradebook, and its outputs in the autograded
  notebook (``autograder.hidden.judge``): an error output (a visible test that failed, or
  ``HiddenCheckFailed`` with the verdict), or the verdict as the last stdout output (partial
  credit).
"""
import dataclasses
import datetime
import json
import re
import urllib.parse
from pathlib import Path

import nbformat

from autograder.checks import behaviours_of
from autograder.labs import fill_in_tested_by, lab_name
from autograder.nbgrader_path import course
from autograder.notebooks import test_cells

VISIBLE = "visible tests"            # the pseudo-behaviour lost when a cell's visible tests fail
HIDDEN = "hidden checks"             # ... when the hidden checks could not be scored at all
PATHS = ("nbgrader", "pytest")


@dataclasses.dataclass
class Cell:
    """One test cell of one submission: its score, and ``{behaviour: message}`` for each
    behaviour it lost (:data:`VISIBLE` or :data:`HIDDEN` when the whole cell was lost at once)."""

    grade_id: str
    score: float
    max_score: float
    lost: dict


@dataclasses.dataclass
class Submission:
    student: str
    cells: dict                      # {grade id: Cell}
    seconds: float | None = None     # grading time, where the results record it

    @property
    def score(self):
        return round(sum(cell.score for cell in self.cells.values()), 2)


@dataclasses.dataclass
class ClassResults:
    lab: str
    path: str                        # "pytest" or "nbgrader"
    source: str                      # where the results were read
    submissions: list
    problems: list                   # results that could not be read, with why


def results_folder(results=None):
    """The pytest path's results folder: ``results``, else the course's ``results/``."""
    return Path(results).resolve() if results else course.place("results")


def available(lab, results=None):
    """``{path: when it last graded lab}`` for each path holding graded submissions of ``lab``."""
    found = {}
    pytest_files = list((results_folder(results) / lab).glob("*/results.json"))
    if pytest_files:
        found["pytest"] = max(path.stat().st_mtime for path in pytest_files)
    graded = [folder for folder in course.place("autograded").glob(f"*/{lab}") if folder.is_dir()]
    if graded and course.place("gradebook.db").is_file():
        found["nbgrader"] = max(folder.stat().st_mtime for folder in graded)
    return found


def collect(lab, path=None, results=None):
    """The graded submissions of ``lab`` from ``path`` ("pytest" or "nbgrader"); by default the
    path that holds some (the one that graded last if both do).  Raises FileNotFoundError naming
    where each path's results would be when there are none."""
    lab = lab_name(lab)
    found = available(lab, results)
    where = {"pytest": f"{results_folder(results) / lab}/<student>/results.json "
                       f"(python -m autograder grade {lab})",
             "nbgrader": f"{course.place('gradebook.db')} with {course.place('autograded')}/"
                         f"<student>/{lab}/ (python -m autograder autograde {lab})"}
    if path is not None and path not in PATHS:
        raise ValueError(f"unknown path {path!r}; the paths are {', '.join(PATHS)}")
    if path is None:
        if not found:
            raise FileNotFoundError(f"no graded submissions of {lab}: neither the pytest path's "
                                    f"{where['pytest']} nor the nbgrader path's "
                                    f"{where['nbgrader']}")
        path = max(found, key=found.get)
    elif path not in found:
        raise FileNotFoundError(f"no graded submissions of {lab} on the {path} path: there is no "
                                f"{where[path]}")
    return read_pytest(lab, results) if path == "pytest" else read_nbgrader(lab)


def read_pytest(lab, results=None):
    """The pytest path's ``results/<lab>/<student>/results.json`` files."""
    lab = lab_name(lab)
    folder = results_folder(results) / lab
    points = dict(test_cells(lab))
    submissions, problems = [], []
    for file in sorted(folder.glob("*/results.json")):
        student = file.parent.name
        try:
            data = json.loads(file.read_text())
            tests = {str(test["name"]): test for test in data["tests"]}
        except (OSError, ValueError, TypeError, KeyError) as error:
            problems.append(f"{student}: {file} could not be read ({type(error).__name__})")
            continue
        cells = {}
        for grade_id, top in points.items():
            test = tests.get(grade_id)
            if test is None:
                cells[grade_id] = Cell(grade_id, 0.0, top, {HIDDEN: "no result for this test"})
                continue
            score = _number(test.get("score"), 0.0)
            output = str(test.get("output") or "")
            cells[grade_id] = Cell(grade_id, score, _number(test.get("max_score"), top),
                                   {} if score >= top else _lost_pytest(output, lab, grade_id))
        seconds = _number(data.get("execution_time"), None)
        submissions.append(Submission(student, cells, seconds))
    return ClassResults(lab, "pytest", str(folder), submissions, problems)


def _lost_pytest(output, lab, grade_id):
    """``{behaviour: message}`` from a test's output in results.json."""
    visible = f"the visible tests of {grade_id} failed: "
    if output.startswith(visible):
        return {VISIBLE: _without_location(output[len(visible):])}
    return _lost_in_verdict(output, lab, fill_in_tested_by(grade_id)) or {
        HIDDEN: output.strip() or "no message"}


def _without_location(message):
    """A visible test's error without the pytest path's "(<cell 14>, line 13)" at its end."""
    return re.sub(r"\s*\(<cell [^>]*>, line \d+\)\s*$", "", message.strip())


def _lost_in_verdict(text, lab, fill_in):
    """``{behaviour: message}`` from the verdict of :meth:`autograder.checks.Tally.report` (or the
    one-line problem that :func:`autograder.hidden.judge` reports instead); None if ``text`` holds
    no verdict of ``fill_in``.  A passed verdict loses nothing."""
    header = f"hidden checks for {fill_in} "
    start = text.rfind("\n" + header) + 1 if ("\n" + header) in text else (
        0 if text.startswith(header) else -1)
    if start < 0:
        return None
    lines = text[start:].splitlines()
    if re.match(rf"{re.escape(header)}passed \(seed \d+\)\s*$", lines[0]):
        return {}
    scored = re.match(rf"{re.escape(header)}\(seed \d+\): [\d.e+-]+ of [\d.e+-]+ points\s*$",
                      lines[0])
    if not scored:          # the checks could not be scored: the whole cell is lost
        return {HIDDEN: lines[0].partition("): ")[2] or lines[0]}
    known = sorted(behaviours_of(lab).get(fill_in, {}), key=len, reverse=True)
    lost, current = {}, None
    for line in lines[1:]:
        if line.startswith("  ") and current is not None:
            lost[current] += "\n" + line[2:]
            continue
        current = None
        if not line.startswith("- "):
            continue
        for behaviour in known:
            rest = line[2:]
            if rest.startswith(behaviour + " ("):
                share = re.match(r"[\d.e+-]+ points?\): ?", rest[len(behaviour) + 2:])
                if share:
                    current, message = behaviour, rest[len(behaviour) + 2 + share.end():]
                    break
        else:
            unknown = re.match(r"- (.*?) \([\d.e+-]+ points?\): ?(.*)$", line)
            if not unknown:
                continue
            current, message = unknown.groups()
        lost[current] = message
    return lost or {HIDDEN: text[start:].strip()}


def read_nbgrader(lab):
    """The nbgrader path: each test cell's score from the gradebook, what it lost from the
    outputs of the autograded notebook (or, for a file that was not a usable notebook, the
    gradebook's comment)."""
    from nbgrader.api import Gradebook, MissingEntry

    lab = lab_name(lab)
    gradebook = course.place("gradebook.db")
    points = dict(test_cells(lab))
    submissions, problems = [], []
    # read-only: nbgrader's Gradebook would otherwise add a course to the file
    course_id = course.load_config().CourseDirectory.course_id
    with Gradebook(f"sqlite:///file:{urllib.parse.quote(str(gradebook))}?mode=ro&uri=true",
                   course_id) as gb:
        try:
            graded = gb.find_assignment(lab).submissions
        except MissingEntry:
            graded = []
        for submission in sorted(graded, key=lambda s: s.student_id):
            student = submission.student_id
            scores, comments = {}, {}
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    if grade.name in points:
                        scores[grade.name] = (grade.score or 0.0, grade.max_score)
                for comment in notebook.comments:
                    comments[comment.name] = comment.auto_comment or comment.manual_comment
            if not scores:
                continue
            notebook, seconds = _autograded(lab, student, problems)
            cells = {}
            for grade_id, top in points.items():
                score, max_score = scores.get(grade_id, (0.0, top))
                lost = {}
                if score < max_score:
                    lost = (_lost_nbgrader(notebook, lab, grade_id) if notebook is not None
                            else None) or {HIDDEN: comments.get(fill_in_tested_by(grade_id))
                                           or "the autograded notebook holds no verdict"}
                cells[grade_id] = Cell(grade_id, float(score), float(max_score), lost)
            submissions.append(Submission(student, cells, seconds))
    return ClassResults(lab, "nbgrader", str(course.place("autograded")), submissions, problems)


def _autograded(lab, student, problems):
    """``(the autograded notebook or None, seconds its cells ran or None)``."""
    path = course.place("autograded", student, lab, f"{lab}.ipynb")
    if not path.is_file():
        return None, None
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception as error:      # whatever a broken file makes nbformat raise
        problems.append(f"{student}: {path} could not be read ({type(error).__name__})")
        return None, None
    return notebook, _run_seconds(notebook)


def _run_seconds(notebook):
    """Seconds from the first cell's start to the last cell's end, by the timings nbclient
    records in each cell's metadata; None without them."""
    starts, ends = [], []
    for cell in notebook.cells:
        timing = cell.get("metadata", {}).get("execution", {})
        if not isinstance(timing, dict):
            continue
        times = {key: _when(value) for key, value in timing.items()}
        start = times.get("iopub.status.busy") or times.get("iopub.execute_input")
        end = times.get("shell.execute_reply") or times.get("iopub.status.idle")
        if start and end:
            starts.append(start)
            ends.append(end)
    if not starts:
        return None
    seconds = (max(ends) - min(starts)).total_seconds()
    return seconds if 0 <= seconds < 86400 else None


def _when(value):
    try:
        return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _lost_nbgrader(notebook, lab, grade_id):
    """``{behaviour: message}`` from the outputs of the autograded test cell ``grade_id``; None
    when the notebook has no such cell or it holds no verdict."""
    cell = next((cell for cell in notebook.cells
                 if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id),
                None)
    if cell is None:
        return None
    fill_in = fill_in_tested_by(grade_id)
    outputs = [out for out in cell.get("outputs", []) if isinstance(out, dict)]
    error = next((out for out in outputs if out.get("output_type") == "error"), None)
    if error is not None:
        name, value = str(error.get("ename", "")), str(error.get("evalue", ""))
        if name == "HiddenCheckFailed":
            return _lost_in_verdict(value, lab, fill_in) or {HIDDEN: value}
        return {VISIBLE: f"{name}: {value}".strip()}
    printed = [out.get("text", "") for out in outputs
               if out.get("output_type") == "stream" and isinstance(out.get("text"), str)]
    for text in reversed(printed):      # the verdict is the last output judge() adds
        lost = _lost_in_verdict(text, lab, fill_in)
        if lost is not None:
            return lost
    return None


def _number(value, default):
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


# --- what the results say -----------------------------------------------------------------------
