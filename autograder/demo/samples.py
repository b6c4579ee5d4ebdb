"""Sample submissions made from the lab notebooks, for the demo and the tests.

Each kind is what instructors meet in a real batch:

* ``full``      the complete solution notebook, as if a student solved everything;
* ``untouched`` the released notebook, submitted without an answer;
* ``bug``       the solution with one realistic mistake in one fill-in (the edits in :data:`BUGS`);
* ``loops``     the solution with one fill-in cell that never finishes;
* ``no_test``   the solution with one test cell deleted (nbgrader puts it back).
"""
from pathlib import Path

import nbformat

from autograder.labs import test_cell_of
from autograder.notebooks import is_test_cell, source_notebook, test_cells

KINDS = ("full", "untouched", "bug", "loops", "no_test")

# lab -> (fill-in cell id, code in its solution block, replacement): one plausible slip per lab
BUGS = {
    "lab1_learning": ("softmax_loss_grad", "-= 1.0", "+= 1.0"),                # sign of I_y
    "lab2_graphs": ("toposort", "if waiting[reader] == 0:",                      # a node queued
                    "if waiting[reader] < len(reader.parents):"),               # too early
    "lab3_autodiff": ("backward_pass", "reversed(toposort(end_node))",           # forward order
                      "toposort(end_node)"),
    "lab4_framework": ("session_run", "toposort", "reachable"),                 # no order at all
    "lab5_kernels": ("matmul_tiled", "b_row = t * TILE + ty",                  # B's tile read
                     "b_row = t * TILE + tx"),                                  # transposed
}


def make(kind, lab, release_folder):
    """The notebook a student of this ``kind`` would submit for ``lab``."""
    if kind == "untouched":
        return nbformat.read(Path(release_folder) / lab / f"{lab}.ipynb", as_version=4)
    nb = nbformat.read(source_notebook(lab), as_version=4)
    if kind == "bug":
        grade_id, old, new = BUGS[lab]
        cell = _cell(nb, grade_id)
        head, marker, answer = cell.source.partition("### BEGIN SOLUTION")
        if old not in answer:
            raise ValueError(f"samples.BUGS[{lab!r}] expects {old!r} in the solution of cell "
                             f"{grade_id!r}")
        cell.source = head + marker + answer.replace(old, new, 1)
    elif kind == "loops":           # stuck before it defines anything: one time limit is spent
        cell = next(c for c in nb.cells if c.cell_type == "code"
                    and c.metadata.get("nbgrader", {}).get("solution")
                    and "### BEGIN SOLUTION" in c.source)
        cell.source = "while True:   # waiting for something that never comes\n    pass\n" \
            + cell.source
    elif kind == "no_test":
        tests = [c for c in nb.cells if is_test_cell(c)]
        nb.cells.remove(tests[-1])
    elif kind != "full":
        raise ValueError(f"unknown sample kind {kind!r}; the kinds are {', '.join(KINDS)}")
    return nb


def expected_score(kind, lab):
    """What a sample of this ``kind`` must score for ``lab`` (out of 100): the points its broken
    fill-in carries are lost, nothing else."""
    points = dict(test_cells(lab))
    if kind in ("full", "no_test"):
        return 100
    if kind == "untouched":
        return 0
    if kind == "bug":
        return 100 - points[test_cell_of(BUGS[lab][0])]
    nb = nbformat.read(source_notebook(lab), as_version=4)       # "loops": its first fill-in
    first = next(c for c in nb.cells if c.cell_type == "code"
                 and c.metadata.get("nbgrader", {}).get("solution")
                 and "### BEGIN SOLUTION" in c.source)
    return 100 - points[test_cell_of(first.metadata["nbgrader"]["grade_id"])]


def write(kind, lab, release_folder, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(make(kind, lab, release_folder), path)
    return path


def _cell(nb, grade_id):
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            return cell
    raise ValueError(f"no cell with nbgrader id {grade_id!r}")
