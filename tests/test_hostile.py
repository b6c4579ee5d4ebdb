"""Hostile and broken submissions on the pytest path: each costs its author points and nothing else.

Every case is built here from lab 3's notebooks, graded in ONE batch beside two honest students,
and must get exactly the score stated; the honest students' scores and every file of the course
folder other than the results must be unchanged.
"""
import csv
import hashlib
import json
import os
from pathlib import Path

import nbformat
import pytest

from autograder import cli, runner

LAB = "lab3_autodiff"
ROOT = Path(__file__).resolve().parent.parent

def _points(fill_in):
    return dict(runner.test_cells(LAB))[f"test_{fill_in}"]


def solution():
    return nbformat.read(ROOT / "solutions" / LAB / f"{LAB}.ipynb", as_version=4)


def cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def inside(fill_in, code):
    """The solution with ``code`` run first inside the fill-in's function."""
    nb = solution()
    target = cell(nb, fill_in)
    lines = target.source.split("\n")
    at = next(i for i, line in enumerate(lines) if "### BEGIN SOLUTION" in line)
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines[at + 1:at + 1] = [indent + line for line in code.split("\n")]
    target.source = "\n".join(lines)
    return nb


def with_cell(code, after="unary_vjps"):
    """The solution with a new code cell after the given fill-in."""
    nb = solution()
    position = nb.cells.index(cell(nb, after)) + 1
    nb.cells.insert(position, nbformat.v4.new_code_cell(code))
    return nb


def edited_tests():
    nb = solution()
    test = cell(nb, "test_backward_pass")
    test.source = "pass"
    test.metadata["nbgrader"]["points"] = 1000
    retyped = cell(nb, "test_grad")
    nb.cells[nb.cells.index(retyped)] = nbformat.v4.new_markdown_cell(
        retyped.source, metadata=retyped.metadata)
    nb.cells.append(nbformat.v4.new_code_cell("pass", metadata={"nbgrader": dict(
        cell(nb, "test_make_vjp").metadata["nbgrader"], points=500)}))
    nb.cells.remove(cell(nb, "test_numerical_grad"))
    nb.metadata["kernelspec"] = {"name": "evil", "display_name": "evil", "language": "python"}
    return nb


def broken_backward_pass_with_patches():
    nb = inside("backward_pass", "return {}")
    nb.cells.insert(2, nbformat.v4.new_code_cell(
        "import numpy as np\nnp.allclose = lambda *a, **k: True\nnp.isclose = lambda *a, **k: True\n"
        "try:\n    import autograder.checks as c\n    c.verify = lambda *a, **k: None\n"
        "except ImportError:\n    pass\n"
        "class Always(float):\n    def __eq__(self, other): return True\n"))
    return nb


def reference_backward_pass():
    nb = solution()
    target = cell(nb, "backward_pass")
    target.source = ("import mini\n\ndef backward_pass(g, end_node):\n"
                     "    return mini.backward_pass(g, end_node)\n")
    return nb


def reads_and_writes_course_files():
    return with_cell(
        "import os, glob\nstolen = []\n"
        f"for pattern in [{str(ROOT / 'solutions' / '*' / '*.ipynb')!r}, "
        "os.environ.get('MINI_COURSE_DIR', '/nonexistent') + '/**']:\n"
        "    for path in glob.glob(pattern, recursive=True):\n"
        "        try:\n            stolen.append(open(path).read()[:10])\n"
        "            open(path, 'a').write('tampered')\n        except OSError:\n            pass\n"
        f"open({str(ROOT / 'solutions' / 'tampered.txt')!r}, 'w').write('x')\n")


CASES = {
    # name: (builder, score lost, what it tests)
    "loops_in_a_fill_in": (lambda: inside("add_outgrads", "while True:\n    pass"), "add_outgrads"),
    "ignores_the_alarm_and_loops": (lambda: inside(
        "add_outgrads", "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                        "while True:\n    pass"), "add_outgrads"),
    "loops_at_top_level_after_a_correct_definition": (lambda: with_cell("while True:\n    pass"),
                                                      None),
    "allocates_without_bound": (lambda: inside(
        "add_outgrads", "import numpy\nhoard = []\nwhile True:\n"
                        "    hoard.append(numpy.ones(10**8))"), "add_outgrads"),
    "exits_the_worker": (lambda: inside("backward_pass", "import os\nos._exit(3)"), "backward_pass"),
    "kills_the_worker": (lambda: inside("make_vjp", "import os, signal\n"
                                                    "os.kill(os.getpid(), signal.SIGKILL)"),
                         "make_vjp"),
    "segfaults": (lambda: inside("numerical_grad", "import ctypes\nctypes.string_at(0)"),
                  "numerical_grad"),
    "calls_input": (lambda: inside("add_outgrads", "input('answer? ')"), "add_outgrads"),
    "prints_megabytes": (lambda: with_cell("print('x' * 50_000_000)\nimport os\n"
                                           "os.write(1, b'y' * 10_000_000)"), None),
    "edits_deletes_duplicates_and_retypes_test_cells": (edited_tests, None),
    "monkeypatches_numpy_and_the_checks": (broken_backward_pass_with_patches, "backward_pass"),
    "calls_the_reference_solution": (reference_backward_pass, "backward_pass"),
    "reads_and_writes_course_files": (reads_and_writes_course_files, None),
}
BROKEN_FILES = {"invalid_json": b"{ this is not json", "empty_file": b"",
                "nbformat_3": json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {},
                                          "worksheets": []}).encode()}


def _digest(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    submissions = root / "submissions"
    nbformat.write(solution(), _path(submissions, "honest_full"))
    released = nbformat.read(ROOT / "labs" / LAB / f"{LAB}.ipynb", as_version=4)
    nbformat.write(released, _path(submissions, "honest_untouched"))
    for name, (build, _) in CASES.items():
        nbformat.write(build(), _path(submissions, name))
    for name, content in BROKEN_FILES.items():
        _path(submissions, name).write_bytes(content)
    (submissions / "missing_notebook").mkdir()
    other = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "def toposort(end_node):\n    return []", metadata={"nbgrader": {
            "grade_id": "some_other_lab_fill_in", "solution": True, "grade": False,
            "locked": False, "schema_version": 3}})])
    nbformat.write(other, _path(submissions, "another_lab"))

    course = Path(os.environ["MINI_COURSE_DIR"])
    (course / "gradebook.db").parent.mkdir(parents=True, exist_ok=True)
    (course / "gradebook.db").write_bytes(b"pretend gradebook")
    before = _digest(course), _digest(ROOT / "solutions"), _digest(submissions)
    out = root / "results"
    assert cli.main(["grade", LAB, "--submissions", str(submissions), "--out", str(out),
                     "--seed", "11", "--workers", "2", "--cell-seconds", "3",
                     "--check-seconds", "10", "--worker-seconds", "40"]) == 0
    after = _digest(course), _digest(ROOT / "solutions"), _digest(submissions)
    with open(out / "grades.csv") as file:
        scores = {row["student"]: float(row["score"]) for row in csv.DictReader(file)}
    return scores, before, after, out


def _path(folder, student):
    path = folder / student / f"{LAB}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_honest_students_are_graded_as_usual(batch):
    scores, *_ = batch
    assert scores["honest_full"] == 100 and scores["honest_untouched"] == 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_submission_costs_only_its_own_points(batch, name):
    scores, *_ = batch
    lost = CASES[name][1]
    assert scores[name] == 100 - (_points(lost) if lost else 0)


@pytest.mark.parametrize("name", sorted(BROKEN_FILES) + ["missing_notebook", "another_lab"])
def test_a_broken_file_gets_zero_and_a_message(batch, name):
    scores, _, _, out = batch
    assert scores[name] == 0
    report = json.loads((out / LAB / name / "results.json").read_text())["output"]
    assert any(word in report for word in ("not a readable notebook", "nbformat 3", "missing",
                                           "not a lab3_autodiff notebook")), report


def test_nothing_outside_the_results_changed(batch):
    _, before, after, _ = batch
    assert before == after
    assert not (ROOT / "solutions" / "tampered.txt").exists()


def test_printed_output_is_cut(batch):
    *_, out = batch
    report = json.loads((out / LAB / "prints_megabytes" / "results.json").read_text())["output"]
    assert len(report) < 100_000 and "more characters cut" in report
