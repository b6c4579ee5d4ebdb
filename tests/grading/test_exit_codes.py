"""Exit statuses of ``grade`` and ``autograde``: a student losing points is not a failure of the
grader, and a failure of the grader is never reported as a finished batch.

The documented statuses (``autograder.cli``): 0 when every submission was graded whatever its
score, 1 when some could not be or grading itself failed, 2 for a usage error, 130 after Ctrl-C.
"""
import csv
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from autograder import cli
from autograder.nbgrader_path import batch
from autograder.pytest_path import runner
from autograder.demo import samples

LAB = "lab2_graphs"
LABS = Path(runner.REPO) / "labs"


def _submissions(folder, *kinds):
    for n, kind in enumerate(kinds):
        samples.write(kind, LAB, LABS, folder / f"student{n}" / f"{LAB}.ipynb")
    return folder


def _grade(submissions, out, *extra):
    return cli.main(["grade", LAB, "--submissions", str(submissions), "--out", str(out),
                     "--seed", "3", "--workers", "1", *extra])


def test_grade_exits_0_when_students_only_lost_points(tmp_path, capsys):
    submissions = _submissions(tmp_path / "in", "bug")
    assert _grade(submissions, tmp_path / "out") == 0
    with open(tmp_path / "out" / "grades.csv") as file:
        scores = {row["student"]: float(row["score"]) for row in csv.DictReader(file)}
    assert 0 < scores["student0"] < 100
    assert f"results in {tmp_path / 'out'}" in capsys.readouterr().out
    assert not [name for name in os.environ if name.startswith("MINI_GRADE_")]  # a plugin took it


def test_grade_exits_1_when_the_grader_itself_fails(tmp_path, monkeypatch, capsys):
    submissions = _submissions(tmp_path / "in", "full")

    def broken(*args, **kwargs):
        raise RuntimeError("the sandbox could not start")
    monkeypatch.setattr(runner, "grade_submission", broken)
    assert _grade(submissions, tmp_path / "out") == 1
    printed = capsys.readouterr()
    assert "error: grading failed: RuntimeError: the sandbox could not start" in printed.err
    assert "results in" not in printed.out
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_grade_exits_1_when_the_results_cannot_be_written(tmp_path, capsys):
    submissions = _submissions(tmp_path / "in", "full")
    (tmp_path / "out").write_text("a file where the results folder should be")
    assert _grade(submissions, tmp_path / "out") == 1
    assert (f"error: grading failed: NotADirectoryError: [Errno 20] Not a directory: "
            f"'{tmp_path / 'out' / LAB / 'student0'}'" in capsys.readouterr().err)


def test_grade_with_no_submissions_is_an_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert _grade(tmp_path / "empty", tmp_path / "out") == 2
    assert (f"error: {tmp_path / 'empty'} holds no student folders (<student>/<lab>.ipynb)"
            in capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("make", [lambda path: None, lambda path: path.write_text("not a folder")],
                         ids=["missing", "a file"])
def test_grade_names_a_submissions_folder_that_is_not_there(tmp_path, capsys, make):
    make(tmp_path / "inbox")
    assert _grade(tmp_path / "inbox", tmp_path / "out") == 2
    assert f"error: there is no folder of submissions {tmp_path / 'inbox'}" in capsys.readouterr().err


def test_autograde_without_collected_submissions_is_an_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    assert cli.main(["autograde", LAB]) == 2
    assert (f"error: there is no folder of submissions {tmp_path / 'course' / 'submitted'}"
            in capsys.readouterr().err)


def test_autograde_before_release_says_to_release_first(tmp_path):
    """A course whose lab was never released has no entry for it in the gradebook, against which
    nbgrader would fail every submission with an unhelpful BrokenProcessPool."""
    course = tmp_path / "course"
    samples.write("full", LAB, LABS, course / "submitted" / "student0" / LAB / f"{LAB}.ipynb")
    done = subprocess.run([sys.executable, "-m", "autograder", "autograde", LAB, "--workers", "1"],
                          env=dict(os.environ, MINI_COURSE_DIR=str(course)), cwd=runner.REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert (f"error: {LAB} has not been released in the course {course}: run "
            f"'python -m autograder release {LAB}' first") in done.stderr
    assert "BrokenProcessPool" not in done.stdout + done.stderr


def test_autograde_exits_1_when_a_submission_could_not_be_graded(monkeypatch, capsys):
    def one_lost(labs, **options):
        return {LAB: batch.Outcome(["student0"], {}, {"student1": "Traceback ...\nDeadKernelError"})}
    monkeypatch.setattr(batch, "autograde", one_lost)
    assert cli.main(["autograde", LAB]) == 1
    printed = capsys.readouterr().out
    assert f"{LAB}: graded 1 submission(s), 1 could not be graded:" in printed
    assert "student1: DeadKernelError" in printed


def test_ctrl_c_during_a_batch_sets_a_flag_instead_of_raising():
    # Python's own handler, as in `python -m autograder` (this test process may have another)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        interrupted = threading.Event()
        with batch._ctrl_c_sets(interrupted):
            os.kill(os.getpid(), signal.SIGINT)      # the handler runs before the next line
            assert interrupted.is_set()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)
