"""Hostile and broken submissions on the pytest path: each costs its author points and nothing else.

Every case of ``hostile_cases`` is built from lab 3's notebooks and graded in ONE batch beside two
honest students; each must get exactly the score stated, and no file outside the results (the
course folder, the solutions, the submissions, the sources of mini, the grader and numpy) may
change.
"""
import csv
import json
import os
from pathlib import Path

import pytest

from autograder import cli
from support import hostile_cases as cases
from support.residue import digest


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    submissions = root / "submissions"
    expected = cases.write_batch(submissions)
    course = Path(os.environ["MINI_COURSE_DIR"])
    (course / "gradebook.db").parent.mkdir(parents=True, exist_ok=True)
    (course / "gradebook.db").write_bytes(b"pretend gradebook")
    folders = (course, cases.ROOT / "solutions", submissions)
    before = [digest([folder]) for folder in folders] + [cases.grader_sources()]
    out = root / "results"
    assert cli.main(["grade", cases.LAB, "--submissions", str(submissions), "--out", str(out),
                     "--seed", "11", "--workers", "2", "--cell-seconds", "10",
                     "--check-seconds", "10", "--worker-seconds", "60"]) == 0
    after = [digest([folder]) for folder in folders] + [cases.grader_sources()]
    for planted in cases.PLANTED:       # so that a failure here does not spoil later runs
        planted.unlink(missing_ok=True)
    with open(out / "grades.csv") as file:
        scores = {row["student"]: float(row["score"]) for row in csv.DictReader(file)}
    return scores, expected, before, after, out


@pytest.mark.parametrize("name", sorted(cases.CASES) + ["ships_modules", "honest_full",
                                                        "honest_untouched"])
def test_a_hostile_submission_costs_only_its_own_points(batch, name):
    scores, expected, *_ = batch
    assert scores[name] == expected[name]


@pytest.mark.parametrize("name", sorted(cases.BROKEN_MESSAGES))
def test_a_broken_file_gets_zero_and_a_message(batch, name):
    scores, *_, out = batch
    assert scores[name] == 0
    result = json.loads((out / cases.LAB / name / "results.json").read_text())
    assert result["output"].splitlines()[0] == cases.BROKEN_MESSAGES[name]
    assert all("raised NotGraded: the notebook could not be run" in test["output"]
               for test in result["tests"])


def _printed(out, name):
    return json.loads((out / cases.LAB / name / "results.json").read_text())["output"].splitlines()


def test_reading_the_course_and_the_solutions_finds_nothing(batch):
    *_, out = batch
    assert cases.NOTHING_READ in _printed(out, "reads_and_writes_course_files")


def test_a_failed_cell_lets_go_of_its_objects(batch):
    *_, out = batch
    assert cases.FORGOTTEN in _printed(out, "fails_holding_an_object")


def test_importing_the_grader_from_a_submission_is_refused(batch):
    *_, out = batch
    assert cases.GRADER_IMPORT_BLOCKED in _printed(out, "monkeypatches_numpy_and_the_checks")


def test_nothing_outside_the_results_changed(batch):
    _, _, before, after, _ = batch
    assert before == after
    assert not (cases.ROOT / "solutions" / "tampered.txt").exists()


def test_printed_output_is_cut(batch):
    *_, out = batch
    results = out / cases.LAB / "prints_megabytes" / "results.json"
    report = json.loads(results.read_text())["output"]
    assert len(report) < 100_000 and "more characters cut" in report


def test_a_cell_that_blocks_its_alarm_is_stopped_at_its_own_limit(batch):
    """It costs its cell's limit and a grace (15 s here), not the submission's 60 s."""
    *_, out = batch
    printed = _printed(out, "ignores_alarms_and_interrupts_then_loops")
    assert any("one cell or check ran past 15 s, ignoring its time limit" in line
               for line in printed), printed
