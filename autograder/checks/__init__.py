"""The grader half of the hidden checks, one module per lab; shared by every grading path.

A check is a function ``check(rng) -> Case``.  It draws inputs from ``rng`` and returns a
:class:`Case`: the *task* for the student half (a probe of ``autograder.probes.<lab>`` and its
inputs, plain data), and, for the grader alone, how to compute the expected result with the full
mini or with central differences, and how to read what the probe observed.  The two halves never
share a process where grading runs: the task goes to the student's worker or kernel, its outcome
(plain data) comes back, and :func:`verify` decides here.  A self-learner's own run of a hidden
test cell runs both in one process (``autograder.hidden.grade``).

Each lab module defines ``CHECKS = {fill_in_name: {behaviour: (parts, [check, ...])}}``: what the
fill-in must do, split into behaviours (the main case, an edge case, a rule such as leaving the
inputs unchanged), each tested by its checks and worth ``parts`` of the fill-in's points.  The test
cell of that fill-in has nbgrader id ``test_<fill_in_name>``; it earns the share of each behaviour
all of whose checks pass (:func:`tally`), on every grading path alike.  The random programs that
checks (and tests) run come from :mod:`autograder.checks.programs`.
"""
import dataclasses
import functools
import importlib
import secrets
import zlib
from typing import Any, Callable

import numpy as np

from autograder import settings
from autograder.labs import LABS, lab_name, short_name  # noqa: F401 (the checks' lab names)
from autograder.probes import from_plain, to_plain


@dataclasses.dataclass
class Case:
    """One drawn instance of a check.

    Attributes:
        what: the call in the lab's terms, e.g. ``"backward_pass on a chain of 5 nodes"``.
        probe: the name of the probe (``autograder.probes.<lab>``) that runs the student's code.
        inputs: the probe's keyword arguments: plain data (numbers, arrays, strings, None, and
            lists, tuples and dicts of them).  A student may see them.
        expected: ``expected() -> result`` from the reference; run by the grader only.
        interpret: ``interpret(observed) -> result``: what the probe's plain observation means
            (a report of an order, say), made by the grader; None keeps it as it is.
        stand_ins: ``{name: function}``: what the grader computes when the probe asks for the
            stand-in ``name`` during this case (:class:`autograder.probes.Grader`).
        rtol, atol: tolerances for numbers.
        hint: a sentence added to the failure message (what to look at).
        behaviour, parts: the behaviour of the fill-in the check tests, and its parts of the
            fill-in's points (set by :func:`cases`).
    """

    what: str
    probe: str
    inputs: dict
    expected: Callable[[], Any]
    interpret: Callable[[Any], Any] = None
    stand_ins: dict = dataclasses.field(default_factory=dict)
    rtol: float = 1e-6
    atol: float = 1e-8
    hint: str = ""
    behaviour: str = ""
    parts: int = 1

    def task(self):
        """What the student half receives: the probe's name and its inputs, as plain data."""
        return {"probe": self.probe, "inputs": to_plain(self.inputs)}


@functools.cache
def lab_module(lab):
    """The checks module of a lab (its ``CHECKS``)."""
    return importlib.import_module(f"autograder.checks.{short_name(lab_name(lab))}")


def behaviours_of(lab):
    """``{fill_in_name: {behaviour: (parts, [check, ...])}}`` for a lab (``"lab3_autodiff"`` or
    ``"lab3"``)."""
    return lab_module(lab).CHECKS


def checks_of(lab):
    """``{fill_in_name: [check, ...]}`` for a lab, each fill-in's checks in the order they run."""
    return {fill_in: [check for _, checks in behaviours.values() for check in checks]
            for fill_in, behaviours in behaviours_of(lab).items()}


def new_seed():
    """The seed for one grading run: ``AUTOGRADER_SEED`` if set (to reproduce a run), else random."""
    return int(settings.SEED.get() or secrets.randbits(32))


def case_for(check, seed, fill_in="", number=0):
    """Draw the case of ``check`` for ``seed``; the same on every machine and in every process.

    Check ``number`` of ``fill_in`` draws from the seed, the fill-in's name and its number
    together: no two fill-ins draw the same inputs, so a stand-in one check hands out (an
    order, a table of values) is never the answer to another check of the run."""
    entropy = [seed, zlib.crc32(fill_in.encode()), number]
    return check(np.random.default_rng(np.random.SeedSequence(entropy)))


def cases(lab, fill_in, seed):
    """Every case of ``fill_in``'s checks in a run with ``seed``, in order: the one rule that the
    student's own run, both grading paths and the grader's verdicts share."""
    drawn = []
    for behaviour, (parts, checks) in behaviours_of(lab)[fill_in].items():
        for check in checks:
            case = case_for(check, seed, fill_in, len(drawn))
            case.behaviour, case.parts = behaviour, parts
            drawn.append(case)
    return drawn


@dataclasses.dataclass
class Tally:
    """A test cell's hidden checks, scored: ``score`` of ``points``, and the first failure of
    each behaviour that lost its share (``{behaviour: message}``)."""

    score: float
    points: float
    failed: dict
    shares: dict

    def report(self, fill_in, seed):
        """The verdict as the student reads it, one line per behaviour that lost its share."""
        if not self.failed:
            return f"hidden checks for {fill_in} passed (seed {seed})"
        lines = [f"hidden checks for {fill_in} (seed {seed}): {self.score:g} of {self.points:g} "
                 "points"]
        lines += [f"- {behaviour} ({self.shares[behaviour]:g} points): "
                  + message.replace("\n", "\n  ") for behaviour, message in self.failed.items()]
        passed = [behaviour for behaviour in self.shares if behaviour not in self.failed]
        if passed:
            lines.append("passed: " + "; ".join(passed))
        return "\n".join(lines)


def tally(drawn, outcomes, points):
    """Score ``drawn`` cases (from :func:`cases`) by their ``outcomes`` (what the student half
    sent back, in the same order): each behaviour earns its share of ``points`` when every one of
    its checks passes.  Shares and score are rounded to hundredths, the same on every path."""
    failed, parts = {}, {}
    for case, outcome in zip(drawn, outcomes, strict=True):
        parts[case.behaviour] = case.parts
        if case.behaviour not in failed:
            try:
                verify(case, outcome)
            except AssertionError as error:
                failed[case.behaviour] = str(error)
    total = sum(parts.values())
    shares = {behaviour: round(points * share / total, 2) for behaviour, share in parts.items()}
    earned = sum(share for behaviour, share in parts.items() if behaviour not in failed)
    return Tally(round(points * earned / total, 2), points, failed, shares)


def focused(check, keep, name):
    """``check`` judged on the entries of its result (a dict) whose keys ``keep(key)`` accepts:
    one behaviour of a check whose result reports several (values, and what was left behind)."""
    def focused_check(rng):
        case = check(rng)
        interpret, expected = case.interpret or (lambda observed: observed), case.expected
        case.interpret = lambda observed: _entries(interpret(observed), keep)
        case.expected = lambda: _entries(expected(), keep)
        return case
    focused_check.__name__ = focused_check.__qualname__ = name
    return focused_check


def _entries(result, keep):
    return {key: value for key, value in result.items() if keep(key)} \
        if isinstance(result, dict) else result


def answer(case, question):
    """Grader side of a stand-in: what ``case``'s stand-in computes for ``question`` (from
    :class:`autograder.probes.Grader`), as plain data, or why it is refused."""
    try:
        stand_in = case.stand_ins[question["stand_in"]]
        args = from_plain(question["args"])
        if not isinstance(args, list):
            raise ValueError("arguments must be a list")
    except (KeyError, TypeError, ValueError) as error:
        return {"refused": f"not a question of this case ({type(error).__name__})"}
    try:
        return {"result": to_plain(stand_in(*args))}
    except Exception as error:      # the student's code asked with arguments that do not fit
        return {"refused": f"{type(error).__name__}: {error}"[:500]}


def verify(case, outcome):
    """Raise AssertionError, in the lab's terms, unless ``outcome`` (what the student half sent
    back) is right.  ``outcome`` is untrusted: anything that is not a result fails the check."""
    hint = f"\nHint: {case.hint}" if case.hint else ""
    if not isinstance(outcome, dict) or not ({"error"} == set(outcome) or {"result"} == set(outcome)):
        raise AssertionError(f"{case.what}: the student side sent back something that is not a "
                             "result; check not passed")
    if "error" in outcome:
        raise AssertionError(f"{case.what} raised {str(outcome['error'])[:2000]}{hint}")
    try:
        got = from_plain(outcome["result"])
        if case.interpret is not None:
            got = case.interpret(got)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as error:
        raise AssertionError(f"{case.what}: the result could not be read ({error}){hint}") from None
    problem = _difference(got, case.expected(), case.rtol, case.atol)
    if problem:
        raise AssertionError(f"{case.what}: {problem}{hint}")


def _is_numeric_sequence(value):
    try:
        return np.array(value).dtype.kind in "biuf"
    except (ValueError, TypeError):
        return False


def _difference(got, expected, rtol, atol, path="the result"):
    """A sentence saying how ``got`` differs from ``expected``, or None if it does not.

    Containers must match exactly (the same keys, the same number of items), strings, None and
    booleans must be equal, and numbers must have exactly the expected shape (``np.isclose`` would
    broadcast a (1, n) answer against (n,)) and agree within the tolerances; NaN matches NaN.
    """
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{path} should be a dict with keys {_keys(expected)}, got {_describe(got)}"
        missing, extra = set(expected) - set(got), set(got) - set(expected)
        if missing or extra:
            return (f"{path} should be a dict with keys {_keys(expected)}, got one "
                    + " and ".join(([f"without {_keys(missing)}"] if missing else [])
                                   + ([f"with unexpected {_keys(extra)}"] if extra else [])))
        for key in expected:
            problem = _difference(got[key], expected[key], rtol, atol, f"{path}[{_shown(key)}]")
            if problem:
                return problem
        return None
    if isinstance(expected, (list, tuple)) and not _is_numeric_sequence(expected):
        if not isinstance(got, (list, tuple)) or len(got) != len(expected):
            return f"{path} should be a sequence of {len(expected)} items, got {_describe(got)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            problem = _difference(g, e, rtol, atol, f"{path}[{i}]")
            if problem:
                return problem
        return None
    if _exact_kind(expected):
        if _exact_kind(got) == _exact_kind(expected) and got == expected:
            return None
        return f"{path} should be {_shown(expected)}, got {_describe(got)}"
    expected = np.asarray(expected, dtype=np.float64)
    if isinstance(got, (list, tuple)) and _is_numeric_sequence(got):
        got = np.asarray(got)
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (np.ndarray, float, int)) or (
            isinstance(got, np.ndarray) and got.dtype.kind not in "iuf"):
        return f"{path} should be a number or an array of shape {expected.shape}, got {_describe(got)}"
    got = np.asarray(got, dtype=np.float64)
    if got.shape != expected.shape:
        return f"{path} has shape {got.shape}, expected shape {expected.shape}"
    bad = ~np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        where = f" at index {index}" if index else ""
        return (f"{path} is wrong{where}: expected {expected[index]:.10g}, got {got[index]:.10g} "
                f"({int(bad.sum())} of {bad.size} entries differ)")
    return None


def _exact_kind(value):
    """What a value compared by equality is (None, a string, a boolean); None for anything else."""
    if value is None:
        return "None"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    return None


def _keys(keys):
    return sorted(map(str, keys))


def _describe(value):
    if isinstance(value, np.ndarray):
        numeric = value.dtype.kind in "iuf"
        return f"an array of shape {value.shape}" + ("" if numeric else f" of {value.dtype} values")
    if isinstance(value, (list, tuple)):
        return f"a sequence of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return f"a dict with keys {_keys(value)}"
    return f"{type(_python(value)).__name__} {_shown(value):.300}"


def _shown(value):
    """``repr(value)`` with numpy's numbers written as Python's (``0``, not ``np.int64(0)``)."""
    return repr(_python(value))


def _python(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return [_python(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_python(item) for item in value)
    return value
