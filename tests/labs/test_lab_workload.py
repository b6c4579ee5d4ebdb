"""How much each lab asks the student to write, measured on the solution notebooks.

A lab teaches by making the student build, so its points must not sit on one-line fill-ins whose
answer the text already gives away. ``python tests/labs/test_lab_workload.py`` prints the table.
"""
import statistics
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]     # support.ROOT, but this file also runs as a script
sys.path.insert(0, str(ROOT))

from autograder import notebooks
from autograder.checks import LABS  # noqa: E402

SHORT = 2                                    # lines: a fill-in this short is a formula, not a build
MOST_POINTS_ON_SHORT = 10                    # percent of a lab's points
LEAST_LINES = {"lab3_autodiff": 120, "lab4_framework": 110}    # lab 4: rebuilt is given plumbing


def solution_blocks(source):
    """The non-blank line counts of each ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` block."""
    blocks, inside = [], False
    for line in source.split("\n"):
        if "### BEGIN SOLUTION" in line:
            inside = True
            blocks.append(0)
        elif "### END SOLUTION" in line:
            inside = False
        elif inside and line.strip():
            blocks[-1] += 1
    return blocks


def workload(lab):
    """``[(fill-in name, lines of one solution block, that block's share of the points)]``: a
    cell's points are split evenly over its blocks."""
    nb = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    points = dict(notebooks.test_cells(lab))
    rows = []
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            name = cell.metadata["nbgrader"]["grade_id"]
            blocks = solution_blocks(cell.source)
            rows += [(name, lines, points.get("test_" + name, 0) / len(blocks))
                     for lines in blocks]
    return rows


def summary(lab):
    rows = workload(lab)
    lines = [n for _, n, _ in rows]
    return {"blocks": len(rows), "median": statistics.median(lines) if lines else 0,
            "lines": sum(lines), "short_points": sum(p for _, n, p in rows if n <= SHORT)}


@pytest.mark.parametrize("lab", LABS)
def test_few_points_rest_on_fill_ins_of_two_lines_or_fewer(lab):
    short = {}
    for name, lines, points in workload(lab):
        if lines <= SHORT:
            short[name] = short.get(name, 0) + points
    assert sum(short.values()) <= MOST_POINTS_ON_SHORT, (
        f"{lab} puts {sum(short.values()):g} of 100 points on solution blocks of {SHORT} lines "
        f"or fewer: {short}")


@pytest.mark.parametrize("lab", sorted(LEAST_LINES))
def test_the_framework_labs_ask_for_a_real_amount_of_code(lab):
    written = summary(lab)["lines"]
    assert written >= LEAST_LINES[lab], f"{lab} asks for {written} lines of student code"


if __name__ == "__main__":
    print("| lab | fill-in blocks | median lines | student lines in all | points on fill-ins of "
          f"<= {SHORT} lines |\n|---|---|---|---|---|")
    for lab in LABS:
        row = summary(lab)
        print(f"| {lab} | {row['blocks']} | {row['median']:g} | {row['lines']} | "
              f"{row['short_points']:.0f}% |")
