"""Both grading paths give every sample submission the same score, for five seeds.

The checks draw their inputs from the seed, and the two paths run the student's side of each
check in different processes (an nbgrader kernel, a pytest-path worker): a check whose verdict
depended on the draw, or a path that ran a case differently, would show as a score that moves
with the seed or differs between the paths.  Labs 2 and 3 (their checks draw the most: random
graphs and programs, shapes, axes), every sample kind but the one that loops (it only waits out
timeouts).
"""
import csv

import nbformat

import pytest

from autograder import cli
from autograder.demo import samples
from autograder.demo import STUDENTS

SEEDS = (1, 2, 3, 4, 5)
KINDS = [kind for kind in STUDENTS if kind != "loops"]


@pytest.fixture(scope="module", params=["lab2_graphs", "lab3_autodiff"])
def course_root(request, tmp_path_factory):
    lab = request.param
    root = tmp_path_factory.mktemp("parity")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MINI_COURSE_DIR", str(root / "course"))
        env.setenv("MINI_RELEASE_DIR", str(root / "release"))
        assert cli.main(["release", lab, "--reveal", "needs"]) == 0
        for kind in KINDS:
            samples.write(kind, lab, root / "release", root / "inbox" / STUDENTS[kind]
                          / f"{lab}.ipynb")
        assert cli.main(["collect", str(root / "inbox")]) == 0
        yield root, env, lab


@pytest.mark.parametrize("seed", SEEDS)
def test_both_paths_give_each_sample_its_score_for_this_seed(course_root, seed):
    root, env, lab = course_root
    env.setenv("AUTOGRADER_SEED", str(seed))        # the seed nbgrader's test cells are given
    try:
        assert cli.main(["autograde", lab, "--workers", "2", "--force"]) == 0
    finally:
        env.delenv("AUTOGRADER_SEED")
    graded = nbformat.read(root / "course" / "autograded" / STUDENTS["full"] / lab
                           / f"{lab}.ipynb", as_version=4)
    assert f"passed (seed {seed})" in str(graded.cells)           # the seed it was given
    assert cli.main(["export", "--to", str(root / "grades.csv")]) == 0
    with open(root / "grades.csv") as file:
        on_nbgrader = {row["student_id"]: float(row["raw_score"] or 0)
                       for row in csv.DictReader(file) if row["assignment"] == lab}
    out = root / f"results-{seed}"
    assert cli.main(["grade", lab, "--submissions", str(root / "inbox"), "--out", str(out),
                     "--seed", str(seed)]) == 0
    with open(out / "grades.csv") as file:
        on_pytest = {row["student"]: float(row["score"]) for row in csv.DictReader(file)}
    expected = {STUDENTS[kind]: samples.expected_score(kind, lab) for kind in KINDS}
    assert on_nbgrader == expected and on_pytest == expected, (on_nbgrader, on_pytest)
