"""The five labs: they run, they release as nbgrader makes them, and they grade as promised."""
import json
import time
from pathlib import Path

import nbformat
import pytest

from autograder import course, runner
from autograder.checks import LABS, checks_of

ROOT = Path(__file__).resolve().parent.parent
TIME_LIMIT = {"lab5_kernels": 120}            # seconds; 60 for the others


def _notebook(folder, lab):
    return ROOT / folder / lab / f"{lab}.ipynb"


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
    for secret in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "autograder.checks"):
        assert secret not in text, f"labs/{lab} contains {secret!r}"


@pytest.mark.parametrize("lab", LABS)
def test_points_add_up_to_100_and_every_test_cell_has_checks(lab):
    cells = runner.test_cells(lab)
    assert sum(points for _, points in cells) == 100
    checks = checks_of(lab)
    assert sorted(checks) == sorted(grade_id[len("test_"):] for grade_id, _ in cells)
    assert all(checks[name] for name in checks)


def _solution_with(lab, broken=None):
    """The solution notebook, with the answer of fill-in ``broken`` replaced by the release stub."""
    nb = nbformat.read(_notebook("solutions", lab), as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade_id") == broken:
            lines, out, skipping = cell.source.split("\n"), [], False
            for line in lines:
                if "### BEGIN SOLUTION" in line:
                    indent = line[: len(line) - len(line.lstrip())]
                    out.append(f"{indent}raise NotImplementedError()")
                    skipping = True
                elif "### END SOLUTION" in line:
                    skipping = False
                elif not skipping:
                    out.append(line)
            cell.source = "\n".join(out)
    return nb


def _fill_ins(lab):
    nb = nbformat.read(_notebook("solutions", lab), as_version=4)
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("solution") and "### BEGIN SOLUTION" in c.source]


@pytest.mark.parametrize("lab", LABS)
def test_grades_solution_release_and_each_broken_fill_in(lab, tmp_path):
    """Solution 100, release 0, and each fill-in broken alone loses exactly its own points."""
    points = dict(runner.test_cells(lab))
    solution = tmp_path / "solution.ipynb"
    nbformat.write(_solution_with(lab), solution)
    assert runner.grade_submission(solution, lab, "s", seed=7).score == 100

    released = runner.grade_submission(_notebook("labs", lab), lab, "r", seed=7)
    assert released.score == 0, [(t.name, t.score) for t in released.tests]

    for fill_in in _fill_ins(lab):
        path = tmp_path / f"{fill_in}.ipynb"
        nbformat.write(_solution_with(lab, broken=fill_in), path)
        result = runner.grade_submission(path, lab, fill_in, seed=7)
        lost = {t.name: t.max_score - t.score for t in result.tests if t.score < t.max_score}
        assert lost == {f"test_{fill_in}": points[f"test_{fill_in}"]}, (fill_in, lost)
