"""Demo cells (plots, training runs, timings) are skipped by both grading paths, the same ones.

A cell tagged ``demo`` runs when grading only if it binds a name that a visible test reads; what
it does inside a function of its own, or to objects by attribute, does not count as binding.  The
submission below is lab 2's solution with one extra demo cell that would break ``toposort`` if it
ran: skipped, it costs nothing on either path, and the nbgrader path leaves it without outputs.
"""
import nbformat
import pytest
from nbformat import v4

from autograder import cli, notebooks
from autograder.nbgrader_path import batch
from autograder.pytest_path import runner
from autograder.demo import samples
from autograder.labs import LABS

LAB = "lab2_graphs"
BREAKS_TOPOSORT = 'globals()["toposort"] = lambda end_node: []   # a sneaky demo\n'


def _cell(source, demo=True):
    return v4.new_code_cell(source, metadata={"tags": ["demo"]} if demo else {})


@pytest.mark.parametrize("source, demo, skipped", [
    ("def draw():\n    a, b = 1, 2\n    return a + b\n\ndraw();", True, True),   # a, b: local
    (BREAKS_TOPOSORT, True, True),
    ("import matplotlib.pyplot as plt\nplt.plot([1, 2]);", True, True),
    (BREAKS_TOPOSORT, False, False),                       # not tagged: always runs
    ("qa = None", True, False),                            # the visible tests read `qa`
    ("def f():\n    global qa\n    qa = None\nf()", True, False),
    ("for qa in range(3):\n    pass", True, False),
    ("this does not parse (", True, False),                # it may bind anything: it runs
])
def test_which_demo_cells_grading_skips(source, demo, skipped):
    read = notebooks.names_tests_read(LAB)
    assert {"a", "b", "qa"} <= read
    assert notebooks.skips_demo(_cell(source, demo), read) is skipped


def _with_sneaky_demo(release):
    nb = samples.make("full", LAB, release)
    at = next(i for i, cell in enumerate(nb.cells)
              if cell.metadata.get("nbgrader", {}).get("grade_id") == "toposort")
    nb.cells.insert(at + 1, _cell(BREAKS_TOPOSORT))
    return nb


def test_both_paths_skip_a_demo_cell_that_would_cost_points(tmp_path, monkeypatch):
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("MINI_RELEASE_DIR", str(tmp_path / "release"))
    assert cli.main(["release", LAB, "--reveal", "needs"]) == 0
    path = tmp_path / "inbox" / "ada" / f"{LAB}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(_with_sneaky_demo(tmp_path / "release"), path)

    assert runner.grade_submission(path, LAB, "ada", seed=5).score == 100

    # the same cell, run: toposort is broken, so the demo cell is what the skip saved
    ran = nbformat.read(path, 4)
    for cell in ran.cells:
        if cell.source == BREAKS_TOPOSORT:
            cell.metadata["tags"] = []
    nbformat.write(ran, tmp_path / "ran.ipynb")
    assert runner.grade_submission(tmp_path / "ran.ipynb", LAB, "ada", seed=5).score < 100

    assert cli.main(["collect", str(tmp_path / "inbox")]) == 0
    outcome = batch.autograde([LAB], workers=1, progress=False)[LAB]
    assert outcome.graded == ["ada"] and not outcome.failed
    assert batch.feedback(LAB) == {}
    autograded = nbformat.read(tmp_path / "course" / "autograded" / "ada" / LAB / f"{LAB}.ipynb", 4)
    sneaky = [cell for cell in autograded.cells if cell.source == BREAKS_TOPOSORT]
    assert len(sneaky) == 1 and sneaky[0].outputs == []
    assert any(cell.get("outputs") for cell in autograded.cells if cell.cell_type == "code"), \
        "the other cells ran"
    html = (tmp_path / "course" / "feedback" / "ada" / LAB / f"{LAB}.html").read_text()
    assert f"{LAB} (Score: 100.0 / 100.0)" in html


@pytest.mark.parametrize("lab", LABS)
def test_what_grading_runs_of_a_complete_notebook_raises_nothing(lab, tmp_path):
    """No demo cell that grading runs needs one it skips (lab 3's feedback once showed a
    NameError for plt under full marks: its central-difference plot bound x1, which a test
    reads, so it ran, and the cell that imports matplotlib did not)."""
    path = samples.write("full", lab, None, tmp_path / f"{lab}.ipynb")
    result = runner.grade_submission(path, lab, "full", seed=3)
    assert result.score == 100
    assert [note for note in result.notes if note.startswith("cell ")] == []
