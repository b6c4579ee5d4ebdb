"""The end-to-end demo (README's first command): a course run on generated submissions.

In a new folder (kept afterwards, its path printed) it releases every lab, writes five sample
students' submissions for each (``autograder.demo.samples``), collects them, autogrades them with
nbgrader and grades them with the pytest path, generates feedback, exports the gradebook, and prints
one table: each student's score per lab from both paths.
"""
import csv
import tempfile
import time
from pathlib import Path

from autograder import settings
from autograder.demo import samples

STUDENTS = {"full": "ada", "untouched": "ben", "bug": "cy", "loops": "dee", "no_test": "eve"}


def run(cli, keep=None, labs="all"):
    """The demo in ``keep`` (default: a new temporary folder), each step a command line given to
    ``cli`` (``autograder.cli.main``, which hands the ``demo`` command here) as a user would type
    it; returns 1 if a step failed."""
    from autograder.nbgrader_path import course

    root = Path(keep).resolve() if keep else Path(tempfile.mkdtemp(prefix="mini-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    settings.COURSE_DIR.set(root / "course")
    settings.RELEASE_DIR.set(root / "release")
    settings.CELL_TIMEOUT.set(settings.CELL_TIMEOUT.get() or 6)   # the looping sample waits it out
    names = course.expand(labs)
    started = time.monotonic()
    print(f"== course folder {root}")
    chosen = ",".join(names)
    _step(f"release {', '.join(names)}", cli, ["release", chosen, "--reveal", "needs"])
    inbox = root / "inbox"
    for lab in names:
        for kind, student in STUDENTS.items():
            samples.write(kind, lab, root / "release", inbox / student / f"{lab}.ipynb")
    _step("collect the sample submissions", cli, ["collect", str(inbox)])
    failed = _step("autograde with nbgrader", cli, ["autograde", chosen])
    _step("grade with the pytest path", cli, ["grade", chosen, "--seed", "1234",
                                              "--cell-seconds", "6", "--check-seconds", "10"])
    _step("feedback", cli, ["feedback", chosen])
    _step("export", cli, ["export"])
    _print_table(root / "course", names)
    print(f"\nfiles: gradebook {root / 'course' / 'gradebook.db'}\n"
          f"       nbgrader grades {root / 'course' / 'grades.csv'}\n"
          f"       pytest-path results {root / 'course' / 'results'} (results.json per "
          f"student, grades.csv)\n       feedback {root / 'course' / 'feedback'}\n"
          f"done in {time.monotonic() - started:.0f} s")
    return 1 if failed else 0


def _step(title, cli, argv):
    print(f"\n== {title}", flush=True)
    started = time.monotonic()
    failed = cli(argv) != 0
    print(f"   ({time.monotonic() - started:.0f} s)", flush=True)
    return failed


def _print_table(course_folder, labs):
    nbgrader = {}
    with open(course_folder / "grades.csv") as file:
        for row in csv.DictReader(file):
            nbgrader[(row["student_id"], row["assignment"])] = float(row["raw_score"] or 0)
    pytest_path = {}
    with open(course_folder / "results" / "grades.csv") as file:
        for row in csv.DictReader(file):
            pytest_path[(row["student"], row["lab"])] = float(row["score"])
    print("\n== grades: nbgrader / pytest path (out of 100 per lab)")
    print(f"{'student':<18}" + "".join(f"{lab:>16}" for lab in labs))
    for kind, student in STUDENTS.items():
        cells = [f"{nbgrader.get((student, lab), 0):5.0f} / {pytest_path.get((student, lab), 0):3.0f}"
                 for lab in labs]
        print(f"{student + ' (' + kind + ')':<18}" + "".join(f"{c:>16}" for c in cells))
