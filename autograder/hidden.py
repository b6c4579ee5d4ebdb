"""The hidden part of a test cell: what it runs for a self-learner, and for nbgrader's grader.

A test cell is the lab's visible tests followed by a hidden section (``### BEGIN/END HIDDEN
TESTS``) that calls :func:`grade`.  Run by a self-learner (or an instructor checking a solution)
with the full mini, ``grade`` runs both halves of each check in that one process: the grader half
draws the case and computes the expected value, the student half (``autograder.probes``) runs the
notebook's code on the case's inputs.

When nbgrader grades a submission, the two halves are split between two processes
(``autograder.nbgrader_path.preprocessors.VerdictsOutsideKernel``): the kernel, with a student
edition of mini, executes each test cell with its hidden section replaced by :func:`hidden_call`,
which runs the probes of the cases the grader drew a moment before (their inputs written into the
cell, plain data) and shows their outcomes as ONE output; the grader then decides with
:func:`judge`, in its own process.  A report that is missing, malformed, repeated or tagged with
another nonce fails the cell, and a forged one passes only if it holds what the student's code
should have computed.

The pytest path runs the same two halves: the probes in the worker, the verdict in
``autograder.pytest_path.runner``.
"""
import json

from nbformat import v4

from autograder import probes
from autograder.checks import answer, cases, new_seed, tally
from autograder.notebooks import visible_part


def grade(lab, fill_in, namespace, seed=None):
    """Run every check of one fill-in in this process (what a hidden test cell calls); raise
    AssertionError, naming each behaviour that failed, unless all pass.

    Prints the seed, so that a failure can be reproduced with ``AUTOGRADER_SEED``.
    """
    seed = new_seed() if seed is None else seed
    print(f"hidden checks for {fill_in} (seed {seed})")
    probes.lab_probes(lab)
    drawn = cases(lab, fill_in, seed)
    outcomes = [probes.run(lab, case.task(), namespace,
                           lambda question, case=case: answer(case, question), n)
                for n, case in enumerate(drawn)]
    verdict = tally(drawn, outcomes, 1.0)
    if verdict.failed:
        raise AssertionError(verdict.report(fill_in, seed))


def hidden_call(source, lab, fill_in, drawn, nonce):
    """The test cell as the kernel executes it: its visible part, then the probes of the cases
    ``drawn`` (their tasks, as a JSON string literal)."""
    tasks = json.dumps([case.task() for case in drawn])
    return (visible_part(source) + "\nfrom autograder.probes import report\n"
            f"report({lab!r}, {fill_in!r}, {tasks!r}, {nonce!r}, globals())\n")


def judge(outputs, fill_in, drawn, seed, nonce, points):
    """Grader side: the cell's outputs as they are to be scored, out of ``points``.

    Reports are taken out.  An error already there (a visible test failed) stays first and the
    cell scores 0; so does a report that is missing or not this run's.  Otherwise the checks are
    tallied (:func:`autograder.checks.tally`): all passed leaves a line saying so; some failed, a
    line per failed behaviour and the score as the cell's value, which nbgrader reads as partial
    credit; all failed, an error.  A value the cell itself returned is shown, not scored.
    """
    kept = [_shown(out) for out in outputs if probes.MIME not in out.get("data", {})]
    if any(out.get("output_type") == "error" for out in kept):
        return kept
    reports = [out["data"][probes.MIME] for out in outputs if probes.MIME in out.get("data", {})]
    problem, outcomes = _outcomes(reports, fill_in, drawn, nonce)
    if problem:
        return [_failure(f"hidden checks for {fill_in} (seed {seed}): {problem}")] + kept
    verdict = tally(drawn, outcomes, points)
    report = verdict.report(fill_in, seed)
    if verdict.failed and verdict.score == 0:
        return [_failure(report)] + kept
    shown = kept + [v4.new_output("stream", name="stdout", text=report + "\n")]
    if not verdict.failed:
        return shown
    return shown + [v4.new_output("execute_result", data={"text/plain": f"{verdict.score:g}"},
                                  execution_count=None)]


def _failure(message):
    return v4.new_output("error", ename="HiddenCheckFailed", evalue=message,
                         traceback=[f"HiddenCheckFailed: {message}"])


def _shown(output):
    if output.get("output_type") != "execute_result":
        return output
    return v4.new_output("display_data", data=output.get("data", {}),
                         metadata=output.get("metadata", {}))


def _outcomes(reports, fill_in, drawn, nonce):
    """``(why the reports of one execution cannot be scored, None)``, or ``(None, the
    outcomes of the cases drawn)``."""
    if not reports:
        return ("the cell sent no report of its checks: something in the notebook stopped the "
                "hidden tests from running"), None
    if len(reports) > 1:
        return (f"the cell sent {len(reports)} reports of its checks where it runs them once: "
                "something in the notebook printed its own"), None
    try:
        data = json.loads(reports[0])
        fresh = data["nonce"] == nonce and data["fill_in"] == fill_in
        outcomes = data["outcomes"]
    except (TypeError, ValueError, KeyError):
        fresh, outcomes = False, None
    if not fresh or not isinstance(outcomes, list) or len(outcomes) != len(drawn):
        return "the report of its checks is not the one this run of the cell made", None
    return None, outcomes
