"""Running the graders again: after an interruption, and for no reason at all.

An ``autograde`` batch stopped half-way, by Ctrl-C or by ``kill -9``, resumes where it stopped.
The batch runs as the instructor would run it, ``python -m autograder autograde`` in its own
process group; once some submissions are graded the whole group gets the signal.  The gradebook
must still be a sound SQLite file holding the finished submissions' scores, and a second run must
grade exactly the rest (the finished ones' markers untouched) and end with every score right; a
forced third run changes no score.  A changed resubmission is graded again without ``--force``,
an unchanged one is not.  ``grade`` run twice with one seed writes the same files.
"""
import csv
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder import notebooks
from autograder.sandbox import cgroups
from autograder.pytest_path import runner
from autograder.demo import samples

LAB = "lab2_graphs"
KINDS = ["full", "bug", "full", "bug"]


def _expected(kind):
    return 100 - (dict(notebooks.test_cells(LAB))["test_" + samples.BUGS[LAB][0]]
                  if kind == "bug" else 0)


def _autograder(env, *arguments, **options):
    return subprocess.run([sys.executable, "-m", "autograder", *arguments], env=env,
                          capture_output=True, text=True, timeout=600, **options)


def _scores(env, folder):
    assert _autograder(env, "export", "--to", str(folder / "grades.csv")).returncode == 0
    with open(folder / "grades.csv") as file:
        return {row["student_id"]: float(row["raw_score"]) for row in csv.DictReader(file)
                if row["assignment"] == LAB and row["raw_score"]}


def _left_running(folder, seconds=20):
    """Processes still working in ``folder`` (kernels of the stopped batch) after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        left = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and Path(os.readlink(entry / "cwd")).is_relative_to(folder):
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:4]
                    command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                    left.append(f"{entry.name} {' '.join(state)} {command[:200]}")
            except OSError:
                continue
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def _markers(course):
    return {path.parent.parent.name: path.stat().st_mtime_ns
            for path in (course / "autograded").glob(f"*/{LAB}/.mini-graded")}


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill"])
def test_an_interrupted_batch_resumes_without_regrading(tmp_path, signal_number):
    course = tmp_path / "course"
    env = dict(os.environ, MINI_COURSE_DIR=str(course), MINI_RELEASE_DIR=str(tmp_path / "release"),
               MINI_CELL_TIMEOUT="20")
    assert _autograder(env, "release", LAB).returncode == 0
    students = {f"student{n}": kind for n, kind in enumerate(KINDS)}
    for student, kind in students.items():
        samples.write(kind, LAB, tmp_path / "release",
                      tmp_path / "inbox" / student / f"{LAB}.ipynb")
    assert _autograder(env, "collect", str(tmp_path / "inbox")).returncode == 0

    batch = subprocess.Popen([sys.executable, "-m", "autograder", "autograde", LAB,
                              "--workers", "2"], env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not _markers(course):
        assert batch.poll() is None and time.monotonic() < deadline, "nothing was graded"
        time.sleep(0.05)
    os.killpg(batch.pid, signal_number)
    batch.wait(timeout=60)
    assert batch.returncode == (130 if signal_number == signal.SIGINT else -signal.SIGKILL)
    assert _left_running(course / "autograded") == []
    finished = _markers(course)
    assert 0 < len(finished) < len(students), "the batch was not stopped half-way"
    with sqlite3.connect(course / "gradebook.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    scores = _scores(env, tmp_path)
    for student in finished:
        assert scores[student] == _expected(students[student])

    again = _autograder(env, "autograde", LAB, "--workers", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"graded {len(students) - len(finished)} submission(s)" in again.stdout
    # a batch killed before it could remove its cgroups (as root): the next batch removed them
    assert not [group for base in cgroups._bases()
                for group in base.glob(f"{cgroups.PREFIX}-{batch.pid}-*")]
    markers = _markers(course)
    assert set(markers) == set(students)
    assert {student: markers[student] for student in finished} == finished
    assert _scores(env, tmp_path) == {s: _expected(kind) for s, kind in students.items()}
    if signal_number == signal.SIGINT:        # and --force regrades every one of them, once
        assert _autograder(env, "autograde", LAB, "--workers", "2", "--force").returncode == 0
        assert _scores(env, tmp_path) == {s: _expected(kind) for s, kind in students.items()}
        assert _markers(course).keys() == markers.keys()
        assert all(_markers(course)[s] != markers[s] for s in students)


def test_a_changed_resubmission_is_regraded_and_an_unchanged_one_is_not(tmp_path):
    course = tmp_path / "course"
    env = dict(os.environ, MINI_COURSE_DIR=str(course), MINI_RELEASE_DIR=str(tmp_path / "release"),
               MINI_CELL_TIMEOUT="20")
    assert _autograder(env, "release", LAB).returncode == 0
    inbox = tmp_path / "inbox"
    for student, kind in (("student0", "bug"), ("student1", "full")):
        samples.write(kind, LAB, tmp_path / "release", inbox / student / f"{LAB}.ipynb")
    assert _autograder(env, "collect", str(inbox)).returncode == 0
    first = _autograder(env, "autograde", LAB, "--workers", "2")
    assert first.returncode == 0 and "graded 2 submission(s)" in first.stdout, first.stderr
    assert _scores(env, tmp_path) == {"student0": _expected("bug"), "student1": 100}
    before = _markers(course)

    samples.write("full", LAB, tmp_path / "release", inbox / "student0" / f"{LAB}.ipynb")
    assert _autograder(env, "collect", str(inbox)).returncode == 0    # both, one of them changed
    again = _autograder(env, "autograde", LAB, "--workers", "2")
    assert again.returncode == 0 and "graded 1 submission(s)" in again.stdout, again.stderr
    assert _scores(env, tmp_path) == {"student0": 100, "student1": 100}
    after = _markers(course)
    assert after["student1"] == before["student1"]      # not regraded
    assert after["student0"] != before["student0"]


def test_grading_twice_with_one_seed_writes_the_same_files(tmp_path):
    env = dict(os.environ, MINI_COURSE_DIR=str(tmp_path / "course"))
    labs = Path(runner.REPO) / "labs"
    for n, kind in enumerate(["full", "bug", "untouched"]):
        samples.write(kind, LAB, labs, tmp_path / "inbox" / f"student{n}" / f"{LAB}.ipynb")
    for run in ("first", "second"):
        done = _autograder(env, "grade", LAB, "--submissions", str(tmp_path / "inbox"),
                           "--out", str(tmp_path / run), "--seed", "7", "--workers", "2")
        assert done.returncode == 0, done.stdout + done.stderr
    first, second = (_files(tmp_path / run) for run in ("first", "second"))
    assert len(first) == 4 and first == second


def _files(folder):
    return {str(path.relative_to(folder)): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file()}
