"""How much each lab asks the student to write, measured on the solution notebooks.

A lab teaches by making the student build, so its points must not sit on one-line fill-ins whose
answer the text already gives away. ``python tests/labs/test_lab_workload.py`` prints the table.
"""
import re
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
SUBSTANCE = 12                               # characters: ``return out`` gives nothing away
MOST_GIVEN_AWAY = 3                          # percent of a lab's solution lines of substance


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


def _collapsed(text):
    return re.sub(r"\s+", " ", text).strip()


def lines_of_substance(source):
    """The code lines of a fill-in's solution blocks that say something: not blank, not a comment,
    and at least ``SUBSTANCE`` characters long, with runs of white space collapsed."""
    lines, inside = [], False
    for line in source.split("\n"):
        if "### BEGIN SOLUTION" in line:
            inside = True
        elif "### END SOLUTION" in line:
            inside = False
        elif inside:
            code = _collapsed(line.split("  #")[0])
            if len(code) >= SUBSTANCE and not code.startswith("#"):
                lines.append(code)
    return lines


def given_away(lab):
    """``(solution lines of substance, [(fill-in, line) found verbatim in the released notebook's
    text outside that fill-in's own cell])``: the lines a student could copy instead of write."""
    solution = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    released = nbformat.read(ROOT / "labs" / lab / f"{lab}.ipynb", as_version=4)
    total, found = 0, []
    for cell in solution.cells:
        name = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type != "code" or not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        elsewhere = _collapsed("\n".join(
            other.source for other in released.cells
            if other.metadata.get("nbgrader", {}).get("grade_id") != name))
        lines = lines_of_substance(cell.source)
        total += len(lines)
        found += [(name, line) for line in lines if line in elsewhere]
    return total, found


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


@pytest.mark.parametrize("lab", LABS)
def test_the_text_does_not_hold_the_lines_a_fill_in_asks_for(lab):
    total, found = given_away(lab)
    assert 100 * len(found) <= MOST_GIVEN_AWAY * total, (
        f"{len(found)} of the {total} solution lines of substance in {lab} appear verbatim in the "
        f"released notebook outside their own fill-in: " + "; ".join(
            f"{name}: {line!r}" for name, line in found))


@pytest.mark.parametrize("lab", sorted(LEAST_LINES))
def test_the_framework_labs_ask_for_a_real_amount_of_code(lab):
    written = summary(lab)["lines"]
    assert written >= LEAST_LINES[lab], f"{lab} asks for {written} lines of student code"


if __name__ == "__main__":
    print("| lab | fill-in blocks | median lines | student lines in all | points on fill-ins of "
          f"<= {SHORT} lines | solution lines in the text |\n|---|---|---|---|---|---|")
    for lab in LABS:
        row = summary(lab)
        total, found = given_away(lab)
        print(f"| {lab} | {row['blocks']} | {row['median']:g} | {row['lines']} | "
              f"{row['short_points']:.0f}% | {len(found)} of {total} "
              f"({100 * len(found) / max(total, 1):.0f}%) |")
