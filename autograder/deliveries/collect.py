"""Bring submitted notebooks into the course folder, whatever shape they arrive in.

Accepted, in a folder or a zip file:

* ``<student>/<lab>.ipynb`` or ``<student>/<lab>/<lab>.ipynb`` (one folder per student);
* nbgrader's exchange: ``<student>+<lab>+<time>/<lab>.ipynb`` with its ``timestamp.txt``;
* Canvas downloads: ``<login>_<userid>_<submissionid>_<lab>.ipynb`` (``_LATE_`` allowed);
* Moodle downloads: ``<Full Name>_<id>_assignsubmission_file_<lab>.ipynb``, flat or in a folder.

``<lab>`` may be the full name (``lab3_autodiff``) or the short one (``lab3``), and LMS suffixes
such as ``-1`` are ignored.  Each notebook lands in ``submitted/<student>/<lab>/<lab>.ipynb`` with
a ``timestamp.txt``, as nbgrader expects, and a ``submission_secret.txt`` like the one ``nbgrader
submit`` leaves (nbgrader's ``release_feedback`` names each feedback file with it, and stops at the
first submission without one).  A file whose name says no lab or no student is reported, not fatal.

**Each submission's own time**, first found of:

1. the ``timestamp.txt`` beside the notebook in the source (nbgrader's exchange writes it when the
   student submits; a copy of an exchange folder or of a course's ``submitted/`` keeps it);
2. for a zip, the entry's time: its UTC time where the zip has one (the "extended timestamp"
   that Info-ZIP and most archivers add), else its date and time, read in this machine's zone; an
   entry dated 1980-01-01 00:00 (a zip's "no date") has no time;
3. for a folder, the file's modification time.

``collected.json`` beside ``timestamp.txt`` records that time, where it came from, and whether
the LMS marked the submission late (Canvas's ``_LATE_``).  ``timestamp.txt``, which nbgrader
reads, holds that time, except for a submission marked late whose time is unknown or not after
the lab's due date: it is then counted one second late (``autograder.nbgrader_path.late``).

**Resubmissions.** A student's newer submission of a lab replaces the one collected before; an
older one does not (both are reported).  Newer means a later own time; when either time is
unknown, the one collected later counts as newer; at equal times the one already there stays.
A file identical to the one already there changes nothing.  Of several submissions of one student
and lab in one batch, the newest is taken.

What the LMS's names say of a student (a Moodle download's full name, a Canvas user id) goes into
the course's ``students.json`` and the gradebook (``autograder.nbgrader_path.exports``).
"""
import collections
import dataclasses
import datetime
import json
import os
import re
import secrets
import shutil
import struct
import tempfile
import zipfile
from pathlib import Path

from autograder.labs import LABS, short_name
from autograder.nbgrader_path import course, exports, late

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")
CANVAS = re.compile(r"^(?P<login>[^_]+)_(?P<late>LATE_)?(?P<user>\d+)_(?P<submission>\d+)_.+$")
MOODLE = re.compile(r"^(?P<name>.+)_(?P<id>\d+)_assignsubmission_[a-z]+_")
NO_DATE = (1980, 1, 1, 0, 0, 0)         # a zip entry's date when it was given none

Collected = collections.namedtuple("Collected", "collected problems replaced kept")
"""What :func:`gather` did: ``collected`` ``[(student, lab)]`` now in the course;
``problems`` ``[(file, reason)]``; ``replaced`` ``[(student, lab, old, new)]``, the descriptions of
a submission collected before and of the newer one that replaced it; ``kept`` ``[(student, lab,
kept, refused)]``, a submission that stayed and an older one that did not replace it."""


@dataclasses.dataclass
class Submission:
    student: str
    lab: str
    path: Path          # the notebook, where it is read from
    name: str           # its name in the source, as reported
    time: datetime.datetime | None     # its own time (aware, UTC), None when unknown
    time_from: str      # where that time comes from
    late: bool = False  # the LMS marked it late
    lms: str | None = None

    def describe(self):
        return describe(self.name, self.time, self.time_from)


def describe(name, time, time_from):
    when = f"{time:%Y-%m-%d %H:%M:%S} UTC" if time is not None else "time unknown"
    return f"{name} ({when}, {time_from})"


def collect(source):
    """Copy every notebook under ``source`` (a folder or a .zip) into the course.

    Returns ``(collected, problems)``: ``[(student, lab)]`` and ``[(file, reason)]``.
    """
    done = gather(source)
    return done.collected, done.problems


def gather(source):
    """:func:`collect`, with what it replaced and what it kept: a :data:`Collected`."""
    source = Path(source)
    if not source.exists():
        raise FileNotFoundError(f"nothing to collect: {source} does not exist")
    if source.suffix == ".zip":
        with tempfile.TemporaryDirectory() as folder:
            try:
                with zipfile.ZipFile(source) as archive:
                    times = {_member_path(info): _entry_time(info)
                             for info in archive.infolist() if not info.is_dir()}
                    archive.extractall(folder)
            except zipfile.BadZipFile:
                raise ValueError(f"{source} is not a readable zip file") from None
            return _gather_folder(Path(folder), times)
    return _gather_folder(source, None)


def _gather_folder(folder, zip_times):
    found, problems, facts = [], [], {}
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts or "__MACOSX" in path.parts:
            continue
        relative = path.relative_to(folder)
        student, lab = parse(relative)
        if lab is None:
            problems.append((str(relative), f"the name names none of the labs ({', '.join(LABS)})"))
        elif student is None:
            problems.append((str(relative), "cannot tell the student from the name: use "
                                            "<student>/<lab>.ipynb or an LMS download name"))
        else:
            time, time_from = _own_time(path, relative, zip_times)
            lms, late_mark, learned = lms_facts(relative, lab)
            found.append(Submission(student, lab, path, str(relative), time, time_from,
                                    late_mark, lms))
            if learned:
                facts.setdefault(student, {}).update(learned)
    done = Collected([], problems, [], [])
    if not found:
        return done
    due = late.due_dates(course.load_config())
    batches = collections.defaultdict(list)
    for submission in found:
        batches[submission.student, submission.lab].append(submission)
    for (student, lab), submissions in sorted(batches.items()):
        newest = submissions[0]
        for other in submissions[1:]:
            if _newer(other, newest):
                newest = other
        done.kept.extend((student, lab, f"{newest.describe()}, in the same batch",
                          other.describe()) for other in submissions if other is not newest)
        outcome = _bring_in(newest, due.get(lab))
        if outcome is not None:
            kind, old = outcome
            if kind == "replaced":
                done.replaced.append((student, lab, old, newest.describe()))
            else:
                done.kept.append((student, lab, old, newest.describe()))
        done.collected.append((student, lab))
    exports.learn(facts)
    return done


def _newer(one, other):
    """Whether ``one`` is newer than ``other`` (each has ``time``): by their own times where both
    are known, else ``one`` (collected later) is."""
    if one.time is not None and other.time is not None:
        return one.time > other.time
    return True


def _bring_in(submission, due):
    """Copy ``submission`` into the course unless the one there is newer or the same file.
    Returns None (brought in, nothing replaced, or nothing to do), ``("replaced", old)`` or
    ``("kept", old)`` with ``old`` describing the submission collected before."""
    target = course.place("submitted", submission.student, submission.lab)
    notebook = target / f"{submission.lab}.ipynb"
    before = _collected_before(target, notebook)
    outcome = None
    if before is not None:
        if notebook.read_bytes() == submission.path.read_bytes():
            return None
        if not _newer(submission, before):
            return "kept", before.describe()
        outcome = "replaced", before.describe()
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(submission.path, notebook)
    now = datetime.datetime.now(datetime.timezone.utc)
    record = {"file": submission.name,
              "time": submission.time.isoformat() if submission.time else None,
              "time_from": submission.time_from, "late": submission.late, "lms": submission.lms,
              "collected_at": now.isoformat()}
    if before is not None:
        record["replaces"] = before.describe()
    (target / late.RECORD).write_text(json.dumps(record, indent=1) + "\n")
    late.stamp(target, due)
    (target / "submission_secret.txt").write_text(secrets.token_hex(16))
    return outcome


def _collected_before(target, notebook):
    """The submission already in ``target`` (a :class:`Submission` without a path), or None."""
    if not notebook.is_file():
        return None
    record = late.read_record(target)
    if record is not None:
        return Submission("", "", notebook, record.get("file") or notebook.name,
                          late.utc(record.get("time")), record.get("time_from", "collected"))
    return Submission("", "", notebook, "the notebook collected before",
                      _timestamp_in(target), "its timestamp.txt")


def _timestamp_in(folder):
    """The time in a ``timestamp.txt`` of ``folder`` (nbgrader's format), or None."""
    from nbgrader.utils import parse_utc
    try:
        return late.utc(parse_utc((Path(folder) / late.TIMESTAMP).read_text().strip()))
    except (OSError, ValueError, OverflowError):
        return None


def _own_time(path, relative, zip_times):
    """``(time, where it comes from)`` of the notebook at ``path`` (see the module's text)."""
    if len(relative.parts) > 1:
        stamped = _timestamp_in(path.parent)
        if stamped is not None:
            return stamped, "the exchange's timestamp.txt"
    if zip_times is not None:
        time, kind = zip_times.get(relative, (None, None))
        return (time, kind) if time is not None else (None, "a zip entry without a date")
    mtime = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc)
    return mtime, "the file's modification time"


def _member_path(info):
    """Where ``zipfile.extractall`` puts an entry, relative to the folder it extracts to (the
    same clean-up of the name as ``ZipFile._extract_member``)."""
    name = info.filename.replace("/", os.path.sep)
    if os.path.altsep:
        name = name.replace(os.path.altsep, os.path.sep)
    name = os.path.splitdrive(name)[1]
    return Path(*[part for part in name.split(os.path.sep)
                  if part not in ("", os.path.curdir, os.path.pardir)])


def _entry_time(info):
    """``(UTC time, kind)`` of a zip entry, ``(None, None)`` when it has no date."""
    extra, at = info.extra, 0
    while at + 4 <= len(extra):                    # the extended timestamp field, 0x5455 ("UT")
        kind, size = struct.unpack("<HH", extra[at:at + 4])
        data = extra[at + 4:at + 4 + size]
        if kind == 0x5455 and len(data) >= 5 and data[0] & 1:
            seconds = struct.unpack("<i", data[1:5])[0]
            return (datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc),
                    "the zip entry's UTC time")
        at += 4 + size
    if tuple(info.date_time) == NO_DATE:
        return None, None
    try:
        local = datetime.datetime(*info.date_time).astimezone()  # a zip's times are local
    except (ValueError, OverflowError):                          # a date no calendar has
        return None, None
    return local.astimezone(datetime.timezone.utc), "the zip entry's time"


def lms_facts(relative, lab):
    """``(lms, marked late, {facts of the student})`` from an LMS download name."""
    relative = Path(relative)
    first = relative.parts[0]
    moodle = MOODLE.match(first)
    if moodle:
        full = moodle["name"].strip()
        first_name, _, last_name = full.rpartition(" ")
        return "moodle", False, {"lms": "moodle", "name": full,
                                 "first_name": first_name or full, "last_name": last_name,
                                 "moodle_participant": {lab: moodle["id"]}}
    canvas = CANVAS.match(relative.name) if len(relative.parts) == 1 else None
    if canvas:
        return "canvas", bool(canvas["late"]), {
            "lms": "canvas", "canvas_user_id": canvas["user"],
            "canvas_submission": {lab: canvas["submission"]}}
    return None, False, {}


def parse(relative):
    """``(student, lab)`` from a path relative to the collected folder; None where unknown."""
    relative = Path(relative)
    lab = _lab_in(relative.stem)
    first = relative.parts[0]
    if "_assignsubmission_" in first:                 # Moodle, flat or a folder per student
        student = first.split("_assignsubmission_")[0].rsplit("_", 1)[-1]
    elif len(relative.parts) > 1:                     # <student>/, or <student>+<lab>+<time>/
        student = first.split("+", 1)[0]
    else:
        student = relative.name.split("_", 1)[0] if "_" in relative.name else None
    if student is not None and (not STUDENT_ID.match(student) or _lab_in(student)):
        student = None
    return student, lab


def _lab_in(stem):
    stem = stem.lower()
    for name in LABS:
        if name in stem:
            return name
    for name in LABS:
        if re.search(rf"(^|[_\-\s]){short_name(name)}($|[_\-\s])", stem):
            return name
    return None
