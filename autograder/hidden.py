"""The hidden part of a test cell when a notebook is graded: student side in the kernel, verdict
in the grader.

A test cell is the lab's visible tests followed by a hidden section (``### BEGIN/END HIDDEN
TESTS``) that calls :func:`grade`.  Run by a student or a self-learner, ``grade``
draws the checks and verifies them in their own kernel, which is all they need.  When nbgrader
grades a submission, though, the kernel runs the submission's code: an input transformer, a
patched numpy or a patched ``verify``, a custom exception handler, anything decided there can be
undone there.  So the grader (``autograder.preprocessors.VerdictsOutsideKernel``) executes each
test cell with its hidden section replaced by :func:`hidden_call`, which runs only the student's
side of each check (``run_case``) for a seed the grader drew a moment before, and shows the
outcomes as ONE output of type :data:`MIME` tagged with a nonce drawn with the seed.  The grader
then decides with :func:`judge`, in its own process: every outcome is verified against
``expected()`` computed there.  A report that is missing, malformed, repeated or tagged with
another nonce fails the cell, and a forged one passes only if it holds the right answers.

The pytest path runs the same two halves: :func:`visible_part` in the worker, the checks there,
the verdict in ``autograder.runner``.
"""
import json

from nbformat import v4

from autograder.checks import cases, new_seed, run_case, verify
from autograder.guard import reference_disabled

MIME = "application/vnd.mini.hidden-checks"
BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def visible_part(source):
    """A test cell's source without its hidden section (the markers included)."""
    kept, hidden = [], False
    for line in source.split("\n"):
        if line.strip() == BEGIN:
            hidden = True
        elif line.strip() == END:
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept).rstrip() + "\n"


def hidden_call(source, lab, fill_in, seed, nonce):
    """The test cell as the grader executes it: its visible part, then :func:`report`."""
    return (visible_part(source) + "\nfrom autograder.hidden import report\n"
            f"report({lab!r}, {fill_in!r}, globals(), seed={seed}, nonce={nonce!r})\n")


def grade(lab, fill_in, namespace, seed=None):
    """Run every check of one fill-in in this process (what a hidden test cell calls).

    Prints the seed, so that a failure can be reproduced with ``AUTOGRADER_SEED``.
    """
    seed = new_seed() if seed is None else seed
    print(f"hidden checks for {fill_in} (seed {seed})")
    for case in cases(lab, fill_in, seed):
        with reference_disabled(lab):
            outcome = run_case(case, namespace)
        verify(case, outcome)


def report(lab, fill_in, namespace, seed, nonce):
    """Kernel side: run the student's side of each check of ``fill_in`` and show the outcomes.

    Decides nothing: the outcomes (plain data, or the error the student's code raised) go to the
    grader as one display output of type :data:`MIME`, a JSON string that keeps NaN as NaN.
    """
    from IPython.display import display
    outcomes = []
    for case in cases(lab, fill_in, seed, answers=False):
        with reference_disabled(lab):
            outcomes.append(run_case(case, namespace))
    display({MIME: json.dumps({"nonce": nonce, "fill_in": fill_in, "outcomes": outcomes})},
            raw=True)


def judge(outputs, lab, fill_in, seed, nonce):
    """Grader side: the cell's outputs as they are to be scored.

    Reports are taken out.  An error already there (a visible test failed) stays first; else a
    failed or missing report puts an error output first, and a passing one leaves a line saying
    so.  A value the cell returned is shown, not scored (nbgrader would read it as partial credit).
    """
    kept = [_shown(out) for out in outputs if MIME not in out.get("data", {})]
    if any(out.get("output_type") == "error" for out in kept):
        return kept
    problem = _problem([out["data"][MIME] for out in outputs if MIME in out.get("data", {})],
                       lab, fill_in, seed, nonce)
    if problem:
        message = f"hidden checks for {fill_in} (seed {seed}): {problem}"
        return [v4.new_output("error", ename="HiddenCheckFailed", evalue=message,
                              traceback=[f"HiddenCheckFailed: {message}"])] + kept
    return kept + [v4.new_output("stream", name="stdout",
                                 text=f"hidden checks for {fill_in} passed (seed {seed})\n")]


def _shown(output):
    if output.get("output_type") != "execute_result":
        return output
    return v4.new_output("display_data", data=output.get("data", {}),
                         metadata=output.get("metadata", {}))


def _problem(reports, lab, fill_in, seed, nonce):
    """Why the reports of one execution do not pass, or None if they do."""
    if not reports:
        return ("the cell sent no report of its checks: something in the notebook stopped the "
                "hidden tests from running")
    if len(reports) > 1:
        return (f"the cell sent {len(reports)} reports of its checks where it runs them once: "
                "something in the notebook printed its own")
    drawn = cases(lab, fill_in, seed)
    try:
        data = json.loads(reports[0])
        fresh = data["nonce"] == nonce and data["fill_in"] == fill_in
        outcomes = data["outcomes"]
    except (TypeError, ValueError, KeyError):
        fresh, outcomes = False, None
    if not fresh or not isinstance(outcomes, list) or len(outcomes) != len(drawn) \
            or not all(isinstance(outcome, dict) for outcome in outcomes):
        return "the report of its checks is not the one this run of the cell made"
    for number, (case, outcome) in enumerate(zip(drawn, outcomes)):
        try:
            verify(case, outcome)
        except AssertionError as error:
            return str(error)
        except (TypeError, ValueError, KeyError, AttributeError) as error:    # not our JSON
            return (f"the report of check {number} is not a result ({type(error).__name__}); "
                    "check not passed")
    return None
