"""The instructor's workflow end to end: release, collect, autograde (nbgrader), grade (pytest
path), feedback, export, resume, the formgrader over HTTP, and the demo's sample students."""
import csv
import json
import os
import subprocess
import sys

import pytest

from autograder import cli
from autograder.nbgrader_path import batch, course
from autograder.demo import samples
from autograder.demo import STUDENTS

from support.course import NBGRADER_LABS, course_in, formgrader


@pytest.fixture(scope="module")
def course_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("course-run")
    with course_in(root, MINI_CELL_TIMEOUT=10):     # the "loops" student waits it out per cell
        assert cli.main(["release", ",".join(NBGRADER_LABS), "--reveal", "needs"]) == 0
        for lab in NBGRADER_LABS:
            for kind, student in STUDENTS.items():
                samples.write(kind, lab, root / "release",
                              root / "inbox" / student / f"{lab}.ipynb")
        assert cli.main(["collect", str(root / "inbox")]) == 0
        assert cli.main(["autograde", ",".join(NBGRADER_LABS), "--workers", "2"]) == 0
        yield root


def _nbgrader_scores(root):
    assert cli.main(["export", "--to", str(root / "grades.csv")]) == 0
    with open(root / "grades.csv") as file:
        return {(r["student_id"], r["assignment"]): float(r["raw_score"] or 0)
                for r in csv.DictReader(file)}


def test_nbgrader_path_gives_each_sample_student_the_expected_score(course_folder):
    scores = _nbgrader_scores(course_folder)
    for lab in NBGRADER_LABS:
        for kind, student in STUDENTS.items():
            assert scores[(student, lab)] == samples.expected_score(kind, lab), (lab, kind)


def test_pytest_path_agrees_with_nbgrader_and_writes_gradescope_results(course_folder):
    out = course_folder / "results"
    assert cli.main(["grade", ",".join(NBGRADER_LABS), "--out", str(out), "--seed", "5",
                     "--cell-seconds", "10"]) == 0     # as the course's nbgrader run above
    nbgrader_scores = _nbgrader_scores(course_folder)
    with open(out / "grades.csv") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == len(NBGRADER_LABS) * len(STUDENTS)
    for row in rows:
        assert float(row["score"]) == nbgrader_scores[(row["student"], row["lab"])], row
    result = json.loads((out / "lab3_autodiff" / STUDENTS["bug"] / "results.json").read_text())
    assert {"score", "tests", "output"} <= set(result) and "seed 5" in result["output"]
    assert "The written answers (10 points) are graded by hand: this score, out of 100, leaves " \
        "them out." in result["output"]
    failed = [t for t in result["tests"] if t["status"] == "failed"]
    assert failed and all({"name", "score", "max_score", "output", "visibility"} <= set(t)
                          for t in result["tests"])
    assert "backward_pass" in failed[0]["output"]


def test_feedback_shows_results_but_no_hidden_test(course_folder):
    assert cli.main(["feedback", "lab3_autodiff"]) == 0
    html = (course_folder / "course" / "feedback" / STUDENTS["bug"] / "lab3_autodiff"
            / "lab3_autodiff.html").read_text()
    assert "backward_pass" in html
    for secret in ("BEGIN HIDDEN TESTS", "autograder.checks", "autograder.hidden",
                   "grade(&quot;lab3"):
        assert secret not in html


def test_a_second_autograde_resumes_instead_of_regrading(course_folder):
    graded, _, failed = batch.autograde(["lab2_graphs"], workers=1, progress=False)["lab2_graphs"]
    assert (graded, failed) == ([], {})
    marker = (course_folder / "course" / "autograded" / STUDENTS["full"] / "lab2_graphs"
              / batch.MARKER)
    marker.unlink()
    graded, _, failed = batch.autograde(["lab2_graphs"], workers=1, progress=False)["lab2_graphs"]
    assert (graded, failed) == ([STUDENTS["full"]], {})
    assert _nbgrader_scores(course_folder)[(STUDENTS["full"], "lab2_graphs")] == 100


def test_formgrader_lists_the_assignments_over_http(course_folder):
    with formgrader(course.course_dir().parent) as api:
        names = {a["name"]: a for a in api("assignments")}
        assert set(NBGRADER_LABS) <= set(names)
        assert names["lab3_autodiff"]["num_submissions"] == len(STUDENTS)
        # its Autograde button: tests/grading/test_formgrader.py


def test_formgrader_of_a_fresh_checkout_loads_without_the_venv_activated(tmp_path):
    """README's step on a checkout with no course folder yet, the venv's bin/ not on PATH."""
    from autograder.checks import LABS
    fresh = tmp_path / "course"
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    env.update(MINI_COURSE_DIR=str(fresh), PATH="/usr/bin:/bin")
    with formgrader(tmp_path, env) as api:
        listed = {a["name"]: a for a in api("assignments")}
    assert set(listed) == set(LABS)         # the sources, none released yet
    assert all(a["num_submissions"] == 0 for a in listed.values())
    assert (fresh / "gradebook.db").is_file()


def test_nbgrader_own_command_line_grades_as_ours_does(tmp_path, monkeypatch):
    """``nbgrader autograde`` run from autograder/ (an unsandboxed kernel with the full mini: the
    grading benchmark's baseline) gives the sample students their scores too."""
    lab = "lab1_learning"
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("MINI_RELEASE_DIR", str(tmp_path / "release"))
    assert cli.main(["release", lab]) == 0
    kinds = {"full": "s_full", "bug": "s_bug"}
    for kind, student in kinds.items():
        samples.write(kind, lab, tmp_path / "release",
                      tmp_path / "inbox" / student / f"{lab}.ipynb")
    assert cli.main(["collect", str(tmp_path / "inbox")]) == 0
    bin_folder = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": f"{bin_folder}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["nbgrader", "autograde", lab], cwd=course.CONFIG_FOLDER, env=env,
                   check=True, capture_output=True, timeout=600)
    scores = _nbgrader_scores(tmp_path)
    assert {kind: scores[(student, lab)] for kind, student in kinds.items()} == {
        kind: samples.expected_score(kind, lab) for kind in kinds}


@pytest.mark.parametrize("command", ["release", "collect", "autograde", "grade", "feedback",
                                     "export", "demo"])
def test_every_subcommand_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0 and "usage" in capsys.readouterr().out


def test_unknown_lab_is_a_usage_error(capsys):
    assert cli.main(["release", "lab9"]) == 2
    assert "unknown lab 'lab9'" in capsys.readouterr().err


def test_demo_on_one_lab_prints_the_table_and_keeps_its_files(tmp_path, capsys, monkeypatch):
    for variable in ("MINI_COURSE_DIR", "MINI_RELEASE_DIR", "MINI_CELL_TIMEOUT"):
        monkeypatch.delenv(variable, raising=False)     # restored afterwards: the demo sets them
    assert cli.main(["demo", "--labs", "lab2", "--keep", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[-3:] for line in printed.splitlines()
            if line.split() and line.split()[0] in STUDENTS.values()}
    for kind, student in STUDENTS.items():
        score = int(samples.expected_score(kind, "lab2_graphs"))
        assert rows[student] == [f"{score}", "/", f"{score}"], (kind, rows[student])
    for made in ("course/gradebook.db", "course/grades.csv", "course/results/grades.csv",
                 f"course/feedback/{STUDENTS['full']}/lab2_graphs/lab2_graphs.html"):
        assert (tmp_path / made).is_file(), made
    feedback = (tmp_path / made).read_text()
    assert "data:image/png;base64," in feedback          # the lab's pictures reach the student
