"""Each lab grades as promised on the pytest path: its solution 100, its release 0, and each
fill-in broken alone (its answer replaced by the release's stub) loses exactly its own points.

Apart from tests/labs/test_labs.py so that the suite's two workers can share the labs' cost.
"""
import nbformat
import pytest

from autograder import notebooks
from autograder.pytest_path import runner
from autograder.checks import LABS
from support.notebooks import notebook as _notebook


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
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
            and "### BEGIN SOLUTION" in c.source]


@pytest.mark.parametrize("lab", LABS)
def test_grades_solution_release_and_each_broken_fill_in(lab, tmp_path):
    """Solution 100, release 0, and each fill-in broken alone loses exactly its own points."""
    points = dict(notebooks.test_cells(lab))
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
