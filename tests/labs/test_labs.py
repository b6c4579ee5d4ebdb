"""The five labs: they run, they release as nbgrader makes them, and their points add up (how
they grade: tests/labs/test_labs_grading.py)."""
import json
import time

import nbformat
import pytest

from autograder import labs, notebooks
from autograder.nbgrader_path import course
from autograder.checks import LABS, behaviours_of, checks_of
from support.notebooks import notebook as _notebook

TIME_LIMIT = {"lab5_kernels": 120}            # seconds; 60 for the others


@pytest.mark.parametrize("lab", LABS)
def test_solution_runs_top_to_bottom_and_passes_its_own_tests(lab):
    from nbgrader.validator import Validator
    started = time.monotonic()
    problems = Validator(config=course.load_config()).validate(str(_notebook("solutions", lab)))
    elapsed = time.monotonic() - started
    assert problems == {}, json.dumps(problems, indent=1)[:3000]
    assert elapsed < TIME_LIMIT.get(lab, 60), f"{lab} took {elapsed:.0f} s"


@pytest.mark.parametrize("folder", ["solutions", "labs"])
@pytest.mark.parametrize("lab", LABS)
def test_notebooks_are_valid_nbformat_4_without_outputs(folder, lab):
    nb = nbformat.read(_notebook(folder, lab), as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:80]


def test_labs_are_exactly_what_nbgrader_generates(tmp_path, monkeypatch):
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("MINI_RELEASE_DIR", str(tmp_path / "release"))
    course.release("all")
    for lab in LABS:
        fresh = json.loads((tmp_path / "release" / lab / f"{lab}.ipynb").read_text())
        committed = json.loads(_notebook("labs", lab).read_text())
        assert fresh == committed, f"labs/{lab} is stale: release it again from solutions/"


@pytest.mark.parametrize("lab", LABS)
def test_release_holds_no_solution_and_no_hidden_test(lab):
    text = _notebook("labs", lab).read_text()
    for secret in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "autograder.checks",
                   "autograder.hidden"):
        assert secret not in text, f"labs/{lab} contains {secret!r}"


@pytest.mark.parametrize("lab", LABS)
def test_points_add_up_to_100_and_every_test_cell_has_checks(lab):
    cells = notebooks.test_cells(lab)
    assert sum(points for _, points in cells) == 100
    checks = checks_of(lab)
    assert sorted(checks) == sorted(labs.fill_in_tested_by(grade_id) for grade_id, _ in cells)
    assert all(checks[name] for name in checks)


@pytest.mark.parametrize("lab", LABS)
def test_each_behaviour_of_a_fill_in_is_worth_a_readable_share_and_has_checks_of_its_own(lab):
    points = dict(notebooks.test_cells(lab))
    for fill_in, behaviours in behaviours_of(lab).items():
        total = sum(parts for parts, _ in behaviours.values())
        for behaviour, (parts, checks) in behaviours.items():
            assert behaviour and isinstance(parts, int) and parts > 0, (fill_in, behaviour)
            assert checks, (fill_in, behaviour)
            share = points[labs.test_cell_of(fill_in)] * parts / total
            assert share * 2 == round(share * 2), (fill_in, behaviour, share)  # halves at most
        names = [check.__name__ for check in checks_of(lab)[fill_in]]
        assert len(names) == len(set(names)), (fill_in, names)


WRITTEN = {"lab1_learning": 10, "lab3_autodiff": 10, "lab4_framework": 10}     # points graded by hand, beyond the 100


@pytest.mark.parametrize("lab", LABS)
def test_written_answers_are_graded_by_hand_with_a_rubric_only_graders_see(lab):
    def written(folder):
        return {c.metadata["nbgrader"]["grade_id"]: c
                for c in nbformat.read(_notebook(folder, lab), as_version=4).cells
                if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")}
    source, released = written("solutions"), written("labs")
    assert sum(c.metadata["nbgrader"]["points"] for c in source.values()) == WRITTEN.get(lab, 0)
    assert sorted(released) == sorted(source)
    for grade_id, cell in source.items():
        assert cell.metadata["nbgrader"]["solution"], grade_id        # the student's answer cell
        assert "**Model answer.**" in cell.source and "**Rubric" in cell.source, grade_id
        assert released[grade_id].source == "YOUR ANSWER HERE", grade_id
