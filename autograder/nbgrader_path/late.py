"""Late work on the nbgrader path: due dates, each submission's own time, and the late penalty.

nbgrader decides lateness itself: ``autograde`` reads a submission's time from the
``timestamp.txt`` beside it, the gradebook holds each assignment's due date, and its
``AssignLatePenalties`` preprocessor asks the configured ``LateSubmissionPlugin`` for the penalty
of a submission that is late, which the gradebook keeps beside the scores (feedback and exports
subtract it).  This module gives nbgrader those three things:

* the due dates, from the table ``c.DueDates.dates`` of ``autograder/config/nbgrader_config.py``
  (:class:`DueDates`), written into the gradebook when a lab is released and before each
  ``autograde`` (:func:`apply_due_dates`);
* the policy, :class:`HourlyPenalty` (``c.HourlyPenalty.points_per_hour``, ``c.HourlyPenalty.cap``);
* each collected submission's ``timestamp.txt``, from the time ``collect`` found for it and the
  LMS's ``_LATE_`` marker it recorded in ``collected.json`` (:func:`stamp`): a submission the LMS
  marked late counts as late even when its own time says otherwise or is unknown.

Nothing here reads the course folder's location by itself: the functions that touch the gradebook
take nbgrader's API on the course (``autograder.nbgrader_path.course.api()``).
"""
import datetime
import json
import logging
import math
from pathlib import Path

from traitlets import Dict, Float, Unicode
from traitlets.config import LoggingConfigurable

from nbgrader.plugins import LateSubmissionPlugin

RECORD = "collected.json"           # beside timestamp.txt: what collect learned of a submission
TIMESTAMP = "timestamp.txt"
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"     # what nbgrader submit writes
ONE_SECOND = datetime.timedelta(seconds=1)
_QUIET = logging.getLogger("autograder.late")     # nbgrader warns of each late notebook: not here
_QUIET.setLevel(logging.ERROR)


class HourlyPenalty(LateSubmissionPlugin):
    """Points off for each hour late, or part of an hour, up to a cap.

    A submission 3 hours late loses ``3 * points_per_hour``, one a minute late ``points_per_hour``;
    none loses more than ``cap``, nor (nbgrader sees to it) more than it scored.
    """

    points_per_hour = Float(
        2.0, help="Points taken off for each hour, or part of an hour, after the due date."
    ).tag(config=True)
    cap = Float(
        20.0, help="The most points a late submission loses, however late it is."
    ).tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        if total_seconds_late <= 0:
            return None
        return penalty(total_seconds_late, self.points_per_hour, self.cap)


def penalty(seconds_late, points_per_hour, cap):
    """The policy as a formula: ``min(cap, points_per_hour * hours late, rounded up)``."""
    if seconds_late <= 0:
        return 0.0
    return float(min(cap, points_per_hour * math.ceil(seconds_late / 3600)))


class DueDates(LoggingConfigurable):
    """The due date of each lab: ``c.DueDates.dates = {"lab2_graphs": "2026-02-13 23:59:00"}``.

    A lab is named in full or short (``lab2``).  A date is read as nbgrader reads one
    (``nbgrader.utils.parse_utc``): ISO 8601 with or without an offset, or "date time zone" with a
    zone name or offset (``2026-02-13 23:59:00 Europe/Berlin``, ``... -0500``); a date without a
    zone is in ``timezone``.  A lab not in the table keeps the due date the gradebook has, if any
    (``nbgrader db assignment add --duedate``, the formgrader).
    """

    dates = Dict(
        key_trait=Unicode(), value_trait=Unicode(),
        help="{lab: due date}; a lab in full (lab2_graphs) or short (lab2)."
    ).tag(config=True)
    timezone = Unicode(
        "UTC", help="The zone of a due date that names none (an IANA name such as Europe/Berlin)."
    ).tag(config=True)

    def table(self):
        """``{full lab name: due date as naive UTC}`` (how nbgrader's gradebook keeps dates)."""
        from autograder.labs import lab_name
        return {lab_name(lab): parse_due(text, self.timezone) for lab, text in self.dates.items()}


def parse_due(text, timezone="UTC"):
    """A due date as naive UTC; without a zone of its own, it is in ``timezone``."""
    import dateutil.parser
    import dateutil.tz
    from nbgrader.utils import parse_utc
    text = str(text).strip()
    if len(text.split(" ")) == 3:                 # "date time zone": nbgrader's own format
        return parse_utc(text)
    when = dateutil.parser.parse(text)
    if when.tzinfo is None:
        zone = dateutil.tz.gettz(timezone)
        if zone is None:
            raise ValueError(f"DueDates.timezone {timezone!r} is not a time zone")
        when = when.replace(tzinfo=zone)
    return parse_utc(when)


def due_dates(config):
    """``{lab: naive UTC due date}`` from a traitlets config (the course's ``load_config()``)."""
    return DueDates(config=config).table()


def apply_due_dates(grader, labs):
    """Write the configured due date of each of ``labs`` that has one, and has been released (is
    in the gradebook), into the gradebook; returns ``{lab: due date}`` written."""
    from nbgrader.api import Gradebook, MissingEntry
    table = due_dates(grader.config)
    wanted = {lab: table[lab] for lab in labs if lab in table}
    written = {}
    if not wanted:
        return written
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        for lab, due in wanted.items():
            try:
                assignment = gb.find_assignment(lab)
            except MissingEntry:
                continue
            if assignment.duedate != due:
                assignment.duedate = due
                gb.db.commit()
            written[lab] = due
    return written


# --- a submission's time -------------------------------------------------------------------------

def utc(when):
    """An aware UTC datetime from an aware or naive-UTC one, or from ISO text; None stays None."""
    if when is None:
        return None
    if isinstance(when, str):
        when = datetime.datetime.fromisoformat(when)
    if when.tzinfo is None:
        return when.replace(tzinfo=datetime.timezone.utc)
    return when.astimezone(datetime.timezone.utc)


def read_record(folder):
    """The ``collected.json`` of a submission's folder, or None (one nbgrader's collect made)."""
    path = Path(folder) / RECORD
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def counted_time(record, due):
    """``(time, why)``: the time nbgrader is to take for a collected submission.

    Its own time (``record["time"]``), unless the LMS marked it late (``record["late"]``) and that
    time is unknown or not after the due date ``due`` (naive UTC, or None): then one second past
    the due date, so that it is late, by the least amount.  A submission whose time is unknown and
    not marked late counts as on time (the due date itself); without a due date, as collected.
    ``why`` says which, or is None when its own time stands.
    """
    own = utc(record.get("time"))
    due = utc(due)
    if record.get("late") and due is not None and (own is None or own <= due):
        why = ("the LMS marked it late, " + ("and its own time is unknown" if own is None else
               f"but its own time {own:%Y-%m-%d %H:%M:%S} UTC is not after the due date")
               + ": counted 1 second late")
        return due + ONE_SECOND, why
    if own is not None:
        return own, None
    if due is not None:
        return due, "its own time is unknown: counted on time"
    return utc(record.get("collected_at")), "its own time is unknown: the time it was collected"


def stamp(folder, due):
    """Write ``timestamp.txt`` of a collected submission's ``folder`` from its ``collected.json``
    and the due date; returns the time written, or None where there is no record to go by."""
    record = read_record(folder)
    if record is None:
        return None
    when, _ = counted_time(record, due)
    text = when.strftime(TIMESTAMP_FORMAT)
    path = Path(folder) / TIMESTAMP
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return when


# --- around autograde ----------------------------------------------------------------------------

def prepare(grader, labs):
    """Before a batch: the due dates into the gradebook, and every collected submission's
    ``timestamp.txt`` of ``labs`` brought up to date with them (a due date may have changed since
    it was collected).  The batch's workers copy the gradebook after this."""
    apply_due_dates(grader, labs)
    due = _gradebook_due_dates(grader, labs)
    root = Path(grader.coursedir.root) / grader.coursedir.submitted_directory
    for lab in labs:
        for folder in sorted(root.glob(f"*/{lab}")):
            if folder.is_dir():
                stamp(folder, due.get(lab))


def _gradebook_due_dates(grader, labs):
    from nbgrader.api import Gradebook, MissingEntry
    found = {}
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        for lab in labs:
            try:
                found[lab] = gb.find_assignment(lab).duedate
            except MissingEntry:
                pass
    return found


def reassess(grader, lab, students):
    """The late penalty again for submissions graded before and not now: their time (a newer
    ``timestamp.txt``) and the due date or policy may have changed since.  nbgrader's own
    ``AssignLatePenalties`` computes it, with the configured plugin, from the current score."""
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.preprocessors import AssignLatePenalties
    assign = AssignLatePenalties(config=grader.config, log=_QUIET)
    db_url, course_id = grader.coursedir.db_url, grader.coursedir.course_id
    root = Path(grader.coursedir.root) / grader.coursedir.submitted_directory
    graded = []                 # (student, notebook): the gradebook is opened once for all
    with Gradebook(db_url, course_id) as gb:
        for student in students:
            timestamp = grader.coursedir.get_existing_timestamp(str(root / student / lab))
            try:
                submission = gb.find_submission(lab, student)
            except MissingEntry:
                continue
            if timestamp is not None and submission.timestamp != timestamp:
                gb.update_or_create_submission(lab, student, timestamp=timestamp)
            graded += [(student, notebook.name) for notebook in submission.notebooks]
    for student, notebook in graded:
        assign.preprocess(nbformat.v4.new_notebook(), {"nbgrader": {
            "notebook": notebook, "assignment": lab, "student": student, "db_url": db_url}})
