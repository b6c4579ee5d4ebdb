"""The gradebook's scores as CSV for nbgrader, Canvas or Moodle, and who the students are.

``students.json`` in the course folder holds what ``collect`` learned of each student from the
LMS's download names (:func:`learn`): a Moodle download names the student in full, a Canvas one
gives the Canvas user id.  The same names go into the gradebook (:func:`register`), so that
nbgrader's own CSV and the formgrader show them too.

Three formats (``python -m autograder export --format ...``):

* ``nbgrader``: nbgrader's own CSV (``nbgrader export``), one row per student and lab: raw score,
  late penalty, score.
* ``canvas``: what Canvas's Gradebook imports (Grades > Import): the columns ``Student``, ``ID``
  (the Canvas user id), ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column per lab
  named ``<lab> (<Canvas assignment id>)``, or ``<lab>`` where no id is configured
  (``c.CanvasExport.assignment_ids``; Canvas then matches the assignment by its name, or makes a
  new one); the second row gives each lab's points possible.  Canvas finds a student by ``ID``,
  else by ``SIS User ID``, ``SIS Login ID``, else by name.
* ``moodle``: what Moodle's gradebook imports from a CSV file (Grades > Import > CSV file): the
  user fields of Moodle's own grade export (``First name``, ``Last name``, ``ID number``,
  ``Institution``, ``Department``, ``Email address``), then one column per lab (a grade item).
  On import, map one column to a Moodle user field (ID number, username or email) and each lab's
  column to its grade item.

Scores are nbgrader's: every cell's score, less the late penalty (never below 0).  A student with
no submission of a lab has an empty cell in the LMS formats: the import leaves that grade alone.
"""
import csv
import json
from pathlib import Path

from traitlets import Dict, Unicode
from traitlets.config import Configurable

from autograder.labs import LABS
from autograder.nbgrader_path import course

FORMATS = ("nbgrader", "canvas", "moodle")
STUDENTS = "students.json"

CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS_POSSIBLE = "    Points Possible"      # the first cell of Canvas's second row
MOODLE_USER_COLUMNS = ["First name", "Last name", "ID number", "Institution", "Department",
                       "Email address"]


class CanvasExport(Configurable):
    """What the Canvas export needs to know of the Canvas course."""

    assignment_ids = Dict(
        key_trait=Unicode(), help="{lab: Canvas assignment id}: the number in the assignment's "
        "address (/courses/C/assignments/ID); a lab without one is matched by its name."
    ).tag(config=True)
    section = Unicode("", help="What to write in the Section column (Canvas ignores it on "
                               "import).").tag(config=True)


def default_path(fmt):
    """Where ``export`` writes a format by default: the course's ``grades.csv``, or
    ``grades-canvas.csv``, ``grades-moodle.csv``."""
    return course.place("grades.csv" if fmt == "nbgrader" else f"grades-{fmt}.csv")


def export(path, fmt="nbgrader"):
    """Write the gradebook's scores to ``path`` in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; the formats are {', '.join(FORMATS)}")
    path = Path(path)
    grader = course.api()
    from nbgrader.api import Gradebook
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        if fmt == "nbgrader":
            from nbgrader.plugins import CsvExportPlugin
            CsvExportPlugin(to=str(path)).export(gb)
            return path
        table = _table(gb)
    rows = (_canvas if fmt == "canvas" else _moodle)(table, grader.config)
    with open(path, "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows(rows)
    return path


def _table(gb):
    """``{"labs": [(lab, max score)], "students": [{id, first, last, email, scores{lab}}]}``."""
    from nbgrader.api import MissingEntry
    order = {lab: n for n, lab in enumerate(LABS)}
    assignments = sorted(gb.assignments, key=lambda a: (order.get(a.name, len(order)), a.name))
    labs = [(a.name, a.max_score) for a in assignments]
    students = []
    for student in sorted(gb.students, key=lambda s: s.id):
        scores = {}
        for lab, _ in labs:
            try:
                submission = gb.find_submission(lab, student.id)
            except MissingEntry:
                continue
            scores[lab] = max(0.0, submission.score - (submission.late_submission_penalty or 0))
        students.append({"id": student.id, "first": student.first_name or "",
                         "last": student.last_name or "", "email": student.email or "",
                         "scores": scores})
    return {"labs": labs, "students": students}


def _number(value):
    return "" if value is None else f"{value:.2f}".rstrip("0").rstrip(".")


def _canvas(table, config):
    settings = CanvasExport(config=config)
    known = read_students()
    header = list(CANVAS_STUDENT_COLUMNS)
    for lab, _ in table["labs"]:
        canvas_id = settings.assignment_ids.get(lab)
        header.append(f"{lab} ({canvas_id})" if canvas_id else lab)
    rows = [header, [CANVAS_POINTS_POSSIBLE, "", "", "", ""]
            + [_number(top) for _, top in table["labs"]]]
    for student in table["students"]:
        facts = known.get(student["id"], {})
        if student["last"] and student["first"]:
            name = f"{student['last']}, {student['first']}"       # Canvas's sortable name
        else:
            name = facts.get("name") or student["id"]
        login = "" if facts.get("lms") else student["id"]   # an LMS's download names no login
        rows.append([name, facts.get("canvas_user_id", ""), "", login, settings.section]
                    + [_number(student["scores"].get(lab)) for lab, _ in table["labs"]])
    return rows


def _moodle(table, config):
    header = MOODLE_USER_COLUMNS + [lab for lab, _ in table["labs"]]
    rows = [header]
    for student in table["students"]:
        rows.append([student["first"], student["last"], student["id"], "", "", student["email"]]
                    + [_number(student["scores"].get(lab)) for lab, _ in table["labs"]])
    return rows


# --- who the students are ------------------------------------------------------------------------

def read_students():
    """``{student id: what collect learned}`` from the course's ``students.json``."""
    try:
        return json.loads(course.place(STUDENTS).read_text())
    except (OSError, ValueError):
        return {}


def learn(facts):
    """Merge ``{student id: {name, first_name, last_name, lms, canvas_user_id, ...}}`` into
    ``students.json`` (a later download's facts win) and register the students in the
    gradebook; returns the merged table."""
    known = read_students()
    for student, new in facts.items():
        entry = known.setdefault(student, {})
        for key, value in new.items():
            if isinstance(value, dict):
                entry.setdefault(key, {}).update(value)
            elif value not in (None, ""):
                entry[key] = value
    if facts:
        path = course.place(STUDENTS)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
    register(known, only=set(facts))
    return known


def register(known=None, only=None):
    """Every student of ``students.json`` (or of ``only``) in the gradebook, with the names
    known: nbgrader's CSV, the formgrader and the exports show them."""
    from nbgrader.api import Gradebook
    known = read_students() if known is None else known
    wanted = {s: f for s, f in known.items() if only is None or s in only}
    if not wanted:
        return
    grader = course.api()
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        for student, facts in wanted.items():
            names = {key: facts[key] for key in ("first_name", "last_name", "email")
                     if facts.get(key)}
            gb.update_or_create_student(student, **names)
