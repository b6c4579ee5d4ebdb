"""Late work on the nbgrader path: each submission's own time, due dates, the late penalty, and
what the gradebook, the feedback and the Canvas and Moodle exports make of it.

The course folder's ``course_config.py`` (read last by ``autograder/config/nbgrader_config.py``)
gives lab 2 a due date, a policy of 3 points per hour late (or part of one) capped at 10, and a
Canvas assignment id.  Eight students hand in the full solution, on time or 3 hours late, the time
told each way ``collect`` knows: a zip entry's time, Canvas's ``_LATE_`` name (with the file's
time, or with none), the exchange's ``timestamp.txt`` (which beats the file's own time either way),
a Moodle download.  Ada resubmits: her newer notebook replaces the older, an older one then does
not.  After ``autograde`` the gradebook holds each penalty, the feedback page shows it, and the
three exports subtract it; moving the due date and running ``autograde`` again reassesses every
penalty without grading anything again.
"""
import csv
import datetime
import os
import struct
import zipfile

import nbformat
from nbgrader.api import Gradebook

from autograder import cli
from autograder.deliveries import collect
from autograder.demo import samples
from autograder.nbgrader_path import batch, course, exports, late

LAB = "lab2_graphs"
UTC = datetime.timezone.utc
DUE = datetime.datetime(2026, 3, 2, 12, 0, 0, tzinfo=UTC)
HOUR = datetime.timedelta(hours=1)
PER_HOUR, CAP, CANVAS_ID = 3.0, 10.0, "4242"
CONFIG = f"""c.DueDates.dates = {{"lab2": "{DUE:%Y-%m-%d %H:%M:%S}"}}
c.DueDates.timezone = "UTC"
c.HourlyPenalty.points_per_hour = {PER_HOUR}
c.HourlyPenalty.cap = {CAP}
c.CanvasExport.assignment_ids = {{"{LAB}": "{CANVAS_ID}"}}
"""
# student -> the penalty its time earns: 3 hours late is 3 * 3 points; Canvas's _LATE_ with no
# time of its own counts 1 second late, one hour's points
PENALTY = {"ada": 0.0, "bob": 9.0, "carol": 9.0, "dave": 3.0, "erin": 0.0, "frank": 9.0,
           "gina": 0.0, "4711": 0.0}


def _local(when):
    """A zip entry's ``date_time`` for ``when``: zips hold local times."""
    return datetime.datetime.fromtimestamp(when.timestamp()).timetuple()[:6]


def _write(kind, path, mtime, release):
    samples.write(kind, LAB, release, path)
    os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path


def _entry(archive, name, kind, release, date_time):
    archive.writestr(zipfile.ZipInfo(name, date_time=date_time),
                     nbformat.writes(samples.make(kind, LAB, release)))


def _rows(path):
    with open(path, newline="") as file:
        return list(csv.reader(file))


def test_the_policy_counts_each_hour_begun_up_to_its_cap():
    assert late.penalty(0, PER_HOUR, CAP) == 0.0
    assert late.penalty(1, PER_HOUR, CAP) == 3.0                  # a second late: one hour
    assert late.penalty(3 * 3600, PER_HOUR, CAP) == 9.0
    assert late.penalty(3 * 3600 + 1, PER_HOUR, CAP) == 10.0      # 4 hours begun: the cap
    plugin = late.HourlyPenalty(points_per_hour=PER_HOUR, cap=CAP)
    assert plugin.late_submission_penalty("ada", 100.0, 0) is None
    assert plugin.late_submission_penalty("ada", 100.0, 7200) == 6.0
    # a zip entry's UTC time (the extended timestamp field) wins over its local date and time
    info = zipfile.ZipInfo("ada/lab2.ipynb", date_time=(2000, 1, 1, 0, 0, 0))
    info.extra = struct.pack("<HHBi", 0x5455, 5, 1, int(DUE.timestamp()))
    assert collect._entry_time(info)[0] == DUE
    assert collect._entry_time(zipfile.ZipInfo("x", date_time=collect.NO_DATE)) == (None, None)
    assert late.parse_due("2026-03-02 13:00:00 Europe/Berlin") == DUE.replace(tzinfo=None)
    assert late.parse_due("2026-03-02 07:00", "America/New_York") == DUE.replace(tzinfo=None)


def test_late_submissions_lose_the_configured_points_everywhere(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("MINI_RELEASE_DIR", str(tmp_path / "release"))
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "course_config.py").write_text(CONFIG)
    release = tmp_path / "release"
    assert cli.main(["release", LAB]) == 0
    grader = course.api()
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        assert gb.find_assignment(LAB).duedate == DUE.replace(tzinfo=None)   # set at release

    # Ada hands in an empty notebook first; then a zip brings her solution, newer, and an older
    # draft of hers in the same zip, which it does not take; then an older notebook, refused.
    first = tmp_path / "first"
    _write("untouched", first / "ada" / f"{LAB}.ipynb", DUE - 3 * HOUR, release)
    assert cli.main(["collect", str(first)]) == 0
    submitted = tmp_path / "course" / "submitted"
    assert nbformat.read(submitted / "ada" / LAB / f"{LAB}.ipynb", 4) == samples.make(
        "untouched", LAB, release)
    capsys.readouterr()

    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        _entry(zf, f"ada/{LAB}.ipynb", "full", release, _local(DUE - HOUR))
        _entry(zf, f"ada/draft/{LAB}.ipynb", "bug", release, _local(DUE - 4 * HOUR))
        _entry(zf, f"bob/{LAB}.ipynb", "full", release, _local(DUE + 3 * HOUR))
        _entry(zf, f"dave_LATE_2001_3001_{LAB}.ipynb", "full", release, collect.NO_DATE)
    assert cli.main(["collect", str(archive)]) == 0
    out = capsys.readouterr().out
    assert "collected 3 notebook(s)" in out
    assert f"ada/{LAB}: replaced ada/{LAB}.ipynb (2026-03-02 09:00:00 UTC" in out
    assert f"with the newer ada/{LAB}.ipynb (2026-03-02 11:00:00 UTC, the zip entry's time)" in out
    assert f"instead of ada/draft/{LAB}.ipynb (2026-03-02 08:00:00 UTC" in out
    ada = submitted / "ada" / LAB
    assert nbformat.read(ada / f"{LAB}.ipynb", 4) == samples.make("full", LAB, release)
    assert late.read_record(ada)["replaces"].startswith(f"ada/{LAB}.ipynb (2026-03-02 09:00:00")

    older = tmp_path / "older"
    _write("bug", older / "ada" / f"{LAB}.ipynb", DUE - 2 * HOUR, release)
    done = collect.gather(older)
    assert done.replaced == [] and done.collected == [("ada", LAB)]
    (student, lab, stays, refused), = done.kept
    assert (student, lab) == ("ada", LAB) and "11:00:00" in stays and "10:00:00" in refused
    assert nbformat.read(ada / f"{LAB}.ipynb", 4) == samples.make("full", LAB, release)

    canvas = tmp_path / "canvas"
    _write("full", canvas / f"carol_LATE_2002_3002_{LAB}.ipynb", DUE + 3 * HOUR, release)
    _write("full", canvas / f"erin_2003_3003_{LAB}.ipynb", DUE - HOUR, release)
    _write("full", canvas / f"Hana Ito_4711_assignsubmission_file_{LAB}.ipynb", DUE - HOUR,
           release)
    # the exchange's timestamp.txt is the time, whatever the file's own time says
    exchange = tmp_path / "exchange"
    for name, stamped, touched in (("frank", DUE + 3 * HOUR, DUE - HOUR),
                                   ("gina", DUE - HOUR / 2, DUE + 5 * HOUR)):
        folder = exchange / f"{name}+{LAB}+{stamped:%Y-%m-%d %H:%M:%S.%f} UTC"
        _write("full", folder / f"{LAB}.ipynb", touched, release)
        (folder / "timestamp.txt").write_text(f"{stamped:%Y-%m-%d %H:%M:%S.%f} UTC")
    assert cli.main(["collect", str(canvas)]) == 0
    assert cli.main(["collect", str(exchange)]) == 0
    assert late.read_record(submitted / "dave" / LAB)["time"] is None
    assert late.read_record(submitted / "carol" / LAB)["late"] is True
    assert late.read_record(submitted / "frank" / LAB)["time_from"] == (
        "the exchange's timestamp.txt")
    known = exports.read_students()
    assert known["carol"]["canvas_user_id"] == "2002" and known["dave"]["lms"] == "canvas"
    assert (known["4711"]["first_name"], known["4711"]["last_name"]) == ("Hana", "Ito")

    capsys.readouterr()
    assert cli.main(["autograde", LAB, "--workers", "2"]) == 0
    assert f"graded {len(PENALTY)} submission(s)" in capsys.readouterr().out
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        scores = {s: (gb.find_submission(LAB, s).score,
                      gb.find_submission(LAB, s).late_submission_penalty) for s in PENALTY}
        assert gb.find_student("4711").first_name == "Hana"
    assert scores == {student: (100.0, penalty) for student, penalty in PENALTY.items()}

    assert batch.feedback(LAB) == {}
    page = {student: (submitted.parent / "feedback" / student / LAB / f"{LAB}.html").read_text()
            for student in ("ada", "bob", "dave")}
    assert f"{LAB} (Score: 91.0 / 100.0)" in page["bob"]
    assert "Late submission penalty (Score: -9.0)" in page["bob"]
    assert "Late submission penalty (Score: -3.0)" in page["dave"]
    assert f"{LAB} (Score: 100.0 / 100.0)" in page["ada"] and "Late submission" not in page["ada"]

    for fmt in exports.FORMATS:
        assert cli.main(["export", "--format", fmt]) == 0
    nbgrader_rows = {row["student_id"]: row for row in csv.DictReader(
        open(tmp_path / "course" / "grades.csv"))}
    assert (nbgrader_rows["bob"]["late_submission_penalty"], nbgrader_rows["bob"]["score"]) == (
        "9.0", "91.0")
    assert (nbgrader_rows["4711"]["first_name"], nbgrader_rows["4711"]["last_name"]) == (
        "Hana", "Ito")

    # Canvas's gradebook import: the student columns, one column per assignment named with its
    # Canvas id, then the points-possible row; a student found by Canvas user id, else SIS login
    header, possible, *rows = _rows(tmp_path / "course" / "grades-canvas.csv")
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                      f"{LAB} ({CANVAS_ID})"]
    assert possible == ["    Points Possible", "", "", "", "", "100"]
    canvas_rows = {row[0]: row for row in rows}
    assert canvas_rows["carol"] == ["carol", "2002", "", "", "", "91"]
    assert canvas_rows["dave"] == ["dave", "2001", "", "", "", "97"]
    assert canvas_rows["bob"] == ["bob", "", "", "bob", "", "91"]
    assert canvas_rows["Ito, Hana"] == ["Ito, Hana", "", "", "", "", "100"]
    assert len(rows) == len(PENALTY)

    # Moodle's grade import: the user fields of Moodle's own export, then one column per grade item
    header, *rows = _rows(tmp_path / "course" / "grades-moodle.csv")
    assert header == ["First name", "Last name", "ID number", "Institution", "Department",
                      "Email address", LAB]
    moodle_rows = {row[2]: row for row in rows}
    assert moodle_rows["4711"] == ["Hana", "Ito", "4711", "", "", "", "100"]
    assert moodle_rows["frank"] == ["", "", "frank", "", "", "", "91"]
    assert moodle_rows["gina"][-1] == "100" and len(rows) == len(PENALTY)

    # The due date moves 5 hours later: autograde grades nothing again, and reassesses each
    # penalty.  Bob and Frank are now on time; Carol's own time is too, but Canvas marked her late.
    (tmp_path / "course" / "course_config.py").write_text(CONFIG.replace(
        f"{DUE:%H:%M:%S}", f"{DUE + 5 * HOUR:%H:%M:%S}"))
    capsys.readouterr()
    assert cli.main(["autograde", LAB, "--workers", "2"]) == 0
    assert "graded 0 submission(s)" in capsys.readouterr().out
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        assert gb.find_assignment(LAB).duedate == (DUE + 5 * HOUR).replace(tzinfo=None)
        moved = {s: gb.find_submission(LAB, s).late_submission_penalty for s in PENALTY}
    assert moved == dict.fromkeys(PENALTY, 0.0) | {"carol": 3.0, "dave": 3.0}
