"""The hidden checks' verdicts are decided outside student code, on both grading paths.

Every attack below is built from the released lab 2: the quiz answered (20 points, earned), a
``build_running_example`` that only works at the visible test's inputs (it passes the visible
tests and should fail the hidden checks: 0 of its 20 points), and one cell that attacks the
verdict.  All of them are graded in ONE nbgrader batch on one worker, attackers first, then the
same notebook without an attack and a lab 3 solution whose numerical_grad fails only a visible
test, and each on the pytest path.  Each must score exactly what its honest part earns.
``judge``'s rules (a missing, repeated, stale or malformed report) are tested on their own.
"""
import concurrent.futures
import json

import nbformat
import pytest
from nbformat import v4
from nbgrader.utils import determine_grade

from autograder import cli, hidden, notebooks, probes, sandbox
from autograder.nbgrader_path import course
from autograder.pytest_path import runner
from autograder.checks import cases, lab2
from autograder.probes import MIME
from support.notebooks import cell as _cell

LAB = "lab2_graphs"
EARNED = 20                                   # the quiz's two cells

TRANSFORM_GRADE = """
def neuter(lines):
    return ["pass\\n"] if "grade(" in "".join(lines) else lines
get_ipython().input_transformers_post.append(neuter)
"""
TRANSFORM_ALL = TRANSFORM_GRADE.replace('"grade(" in', 'any(word in "".join(lines) for word in '
                                        '("assert", "grade(", "report(")) or "" in')
PATCH_NUMPY = """
import numpy as np
np.allclose = np.isclose = np.array_equal = lambda *args, **kwargs: True
"""
PATCH_CHECKS = """
import sys
import mini
mini.check_grads = lambda *args, **kwargs: None
probes = sys.modules["autograder.probes"]     # the grader's one part in a kernel: its student half
probes.run = lambda *args, **kwargs: {"result": 0.0}
probes.verify = probes.judge = lambda *args, **kwargs: None
"""
SWALLOW_ERRORS = """
get_ipython().set_custom_exc((BaseException,), lambda shell, *error, **kwargs: None)
"""
FORGE_REPORT = """
import json, re
from IPython.display import display
def forged(cell=""):
    nonce = re.search(r"report\\('lab2_graphs', 'build_running_example', '.*', '([0-9a-f]+)'", cell)
    return {%(mime)r: json.dumps({"nonce": nonce.group(1) if nonce else "0", "outcomes": [],
                                  "fill_in": "build_running_example"})}
display(forged(), raw=True)
get_ipython().events.register("pre_run_cell", lambda info: display(forged(info.raw_cell), raw=True)
                              if "build_running_example" in info.raw_cell else None)
""" % {"mime": MIME}

# attacker: (attack cell, score on the nbgrader path, score on the pytest path)
ATTACKS = {
    "a_transforms_grade_cells": (TRANSFORM_GRADE, EARNED, EARNED),
    # neutering every test cell also neuters its report: the notebook loses the quiz's points on
    # nbgrader; on the pytest path there is no IPython to transform anything
    "b_transforms_every_test_cell": (TRANSFORM_ALL, 0, EARNED),
    "c_patches_numpy": (PATCH_NUMPY, EARNED, EARNED),
    "d_patches_the_checks": (PATCH_CHECKS, EARNED, EARNED),
    "e_swallows_errors": (SWALLOW_ERRORS, EARNED, EARNED),
    "f_forges_reports": (FORGE_REPORT, EARNED, EARNED),
    "z_honest": ("", EARNED, EARNED),        # the same notebook without an attack, graded after
}
SHIFTS_X = "shifts_x"                          # lab 3, graded after all of them


def attacker(release, attack):
    """The released lab with the quiz answered, a build_running_example fixed to the visible
    test's inputs, and ``attack`` in a cell after the imports."""
    nb = nbformat.read(release / LAB / f"{LAB}.ipynb", as_version=4)
    solution = nbformat.read(notebooks.source_notebook(LAB), as_version=4)
    for grade_id in ("quiz_graph", "quiz_values", "build_running_example"):
        _cell(nb, grade_id).source = _cell(solution, grade_id).source
    fill_in = _cell(nb, "build_running_example")
    fill_in.source = fill_in.source.replace("    ### BEGIN SOLUTION\n",
                                            "    ### BEGIN SOLUTION\n    x1, x2 = 3.0, 0.5\n")
    nb.cells.insert(2, v4.new_code_cell(attack))
    return nb


def shifts_x():
    """lab 3's solution, but numerical_grad leaves x shifted by h: only a visible test sees it."""
    nb = nbformat.read(notebooks.source_notebook("lab3_autodiff"), as_version=4)
    fill_in = _cell(nb, "numerical_grad")
    for old, new in (("x = np.array(x, dtype=np.float64)", "x = np.asarray(x, dtype=np.float64)"),
                     ("        x[i] = original\n", "        x[i] = original + h\n")):
        assert old in fill_in.source
        fill_in.source = fill_in.source.replace(old, new)
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """``{student: (nbgrader score, pytest score)}`` and the nbgrader path's autograded folder.

    One autograde batch on one worker: lab 2's attackers, then the honest lab 2 notebook, then
    lab 3's ``shifts_x``; the pytest path grades the same files meanwhile.
    """
    root = tmp_path_factory.mktemp("verdicts-outside")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MINI_COURSE_DIR", str(root / "course"))
        env.setenv("MINI_RELEASE_DIR", str(root / "release"))
        env.setenv("MINI_CELL_TIMEOUT", "20")
        env.delenv("AUTOGRADER_SEED", raising=False)
        assert cli.main(["release", "lab2,lab3", "--reveal", "needs"]) == 0
        notebooks = {(name, LAB): attacker(root / "release", code)
                     for name, (code, *_) in ATTACKS.items()}
        notebooks[SHIFTS_X, "lab3_autodiff"] = shifts_x()
        for (name, lab), nb in notebooks.items():
            (root / "inbox" / name).mkdir(parents=True)
            nbformat.write(nb, root / "inbox" / name / f"{lab}.ipynb")
        limits = sandbox.Limits(cell_seconds=20, check_seconds=20, worker_seconds=120)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            on_pytest = {key: pool.submit(runner.grade_submission, root / "inbox" / key[0]
                                          / f"{key[1]}.ipynb", key[1], key[0], 5, limits)
                         for key in notebooks}
            assert cli.main(["collect", str(root / "inbox")]) == 0
            assert cli.main(["autograde", "lab2,lab3", "--workers", "1"]) == 0
            from nbgrader.api import Gradebook
            grader = course.api()
            with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
                on_nbgrader = {key: gb.find_submission(key[1], key[0]).score for key in notebooks}
            scores = {key[0]: (on_nbgrader[key], on_pytest[key].result().score)
                      for key in notebooks}
        yield scores, root / "course" / "autograded"


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_an_attack_on_the_verdict_gains_nothing(graded, name):
    scores, _ = graded
    assert scores[name] == ATTACKS[name][1:]


def test_a_visible_test_failure_costs_the_cell_on_both_paths(graded):
    scores, _ = graded
    expected = 100 - dict(notebooks.test_cells("lab3_autodiff"))["test_numerical_grad"]
    assert scores[SHIFTS_X] == (expected, expected)


def test_a_failed_hidden_check_says_why_in_the_cell(graded):
    _, autograded = graded
    nb = nbformat.read(autograded / "d_patches_the_checks" / LAB / f"{LAB}.ipynb", as_version=4)
    errors = [out for out in _cell(nb, "test_build_running_example").outputs
              if out.output_type == "error"]
    assert [out.ename for out in errors] == ["HiddenCheckFailed"]
    assert errors[0].evalue.startswith("hidden checks for build_running_example (seed ")
    source = nbformat.read(notebooks.source_notebook(LAB), as_version=4)
    assert _cell(nb, "test_build_running_example").source == _cell(
        source, "test_build_running_example").source          # the cell keeps its own source


def test_the_report_never_reaches_the_autograded_notebook(graded):
    _, autograded = graded
    nb = nbformat.read(autograded / "z_honest" / LAB / f"{LAB}.ipynb", as_version=4)
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not any(MIME in out.get("data", {}) for out in outputs)
    assert "hidden checks for quiz_graph passed" in "".join(out.get("text", "") for out in outputs)


# judge's rules, on lab 2's checks of build_running_example (drawn inputs, two checks)

def _report(nonce="n1", outcomes=None, fill_in="build_running_example"):
    data = {"nonce": nonce, "fill_in": fill_in, "outcomes": outcomes}
    return v4.new_output("display_data", data={MIME: json.dumps(data)})


def _drawn(seed):
    return cases(LAB, "build_running_example", seed)


def _right(seed):
    """The outcomes the solution's build_running_example gives on the cases of ``seed``."""
    solution = nbformat.read(notebooks.source_notebook(LAB), as_version=4)
    namespace = {}
    exec("import mini\nfrom mini import Node\n" + _cell(solution, "build_running_example").source,
         namespace)
    probes.lab_probes(LAB)
    return [probes.run(LAB, case.task(), namespace, lambda question: {}) for case in _drawn(seed)]


def _verdict(outputs, seed=9, nonce="n1"):
    judged = hidden.judge(outputs, "build_running_example", _drawn(seed), seed, nonce, 15.0)
    assert not any(MIME in out.get("data", {}) for out in judged)
    errors = [out.evalue for out in judged if out.output_type == "error"]
    return errors[0] if errors else "passed"


def test_judge_passes_one_fresh_report_with_the_right_answers():
    assert _verdict([_report(outcomes=_right(9))]) == "passed"


@pytest.mark.parametrize("outputs, why", [
    ([], "sent no report"),
    ([_report(outcomes=_right(9))] * 2, "sent 2 reports"),
    ([_report(nonce="stale", outcomes=_right(9))], "not the one this run of the cell made"),
    ([_report(outcomes=_right(9), fill_in="quiz_values")], "not the one this run of the cell made"),
    ([_report(outcomes=[])], "not the one this run of the cell made"),
    ([v4.new_output("display_data", data={MIME: "{not json"})], "not the one this run"),
    ([_report(outcomes=_right(10))], "is wrong"),                # right for another seed
    ([_report(outcomes=[{"error": "NameError: no Node"}] * 2)], "raised NameError: no Node"),
    ([_report(outcomes=[{"result": {"$array": [1]}}] * 2)], "could not be read"),
    ([_report(outcomes=[{"anything": 1}] * 2)], "not a result"),
])
def test_judge_fails_a_report_that_is_missing_repeated_stale_or_wrong(outputs, why):
    assert why in _verdict(outputs)


def test_judge_keeps_an_earlier_error_and_scores_no_returned_value():
    error = v4.new_output("error", ename="AssertionError", evalue="visible test", traceback=[])
    judged = hidden.judge([error, _report(outcomes=_right(9))], "build_running_example",
                          _drawn(9), 9, "n1", 15.0)
    assert [out.output_type for out in judged] == ["error"] and judged[0].evalue == "visible test"
    value = v4.new_output("execute_result", data={"text/plain": "20"}, execution_count=1)
    judged = hidden.judge([value, _report(outcomes=_right(9))], "build_running_example",
                          _drawn(9), 9, "n1", 15.0)
    assert [out.output_type for out in judged] == ["display_data", "stream"]


def test_judge_scores_the_behaviours_that_passed_as_the_cells_value():
    """quiz_values: two behaviours of 5 points each; the right value of e and a wrong df/da."""
    drawn = cases(LAB, "quiz_values", 9)
    probes.lab_probes(LAB)
    answers = {"quiz_value_e": lab2._quiz_answers()["quiz_value_e"], "quiz_grad_a": 1.5}
    outcomes = [probes.run(LAB, case.task(), answers, lambda question: {})
                for case in drawn]
    cell = v4.new_code_cell(metadata={"nbgrader": {"grade": True, "solution": False,
                                                   "points": 10, "grade_id": "test_quiz_values"}})
    cell.outputs = hidden.judge([_report(outcomes=outcomes, fill_in="quiz_values")],
                                "quiz_values", drawn, 9, "n1", 10.0)
    assert [out.output_type for out in cell.outputs] == ["stream", "execute_result"]
    assert "- quiz_grad_a (5 points): the quiz answer quiz_grad_a" in cell.outputs[0].text
    assert "passed: quiz_value_e" in cell.outputs[0].text
    assert determine_grade(cell) == (5.0, 10.0)           # nbgrader's own reading of the cell
    outcomes[0] = {"error": "NameError: quiz_value_e"}      # both wrong: an error, and 0
    cell.outputs = hidden.judge([_report(outcomes=outcomes, fill_in="quiz_values")],
                                "quiz_values", drawn, 9, "n1", 10.0)
    assert determine_grade(cell) == (0, 10.0)
    assert "0 of 10 points" in cell.outputs[0].evalue


def test_the_visible_part_leaves_out_the_hidden_section():
    source = "a = 1\n### BEGIN HIDDEN TESTS\ngrade('lab2', 'x', globals())\n### END HIDDEN TESTS\n"
    assert notebooks.visible_part(source) == "a = 1\n"
    call = hidden.hidden_call(source, LAB, "toposort", cases(LAB, "toposort", 4), "abc")
    assert "grade(" not in call
    tasks = json.dumps([case.task() for case in cases(LAB, "toposort", 4)])
    assert call.endswith(f"report('lab2_graphs', 'toposort', {tasks!r}, 'abc', globals())\n")
