"""The grader half of the hidden checks, one module per lab; shared by every grading path.

A check is a function ``check(rng) -> Case``.  It draws inputs from ``rng`` and returns a
:class:`Case`: the *task* for the student half (a probe of ``autograder.probes.<lab>`` and its
inputs, plain data), and, for the grader alone, how to compute the expected result with the full
mini or with central differences, and how to read what the probe observed.  The two halves never
share a process where grading runs: the task goes to the student's worker or kernel, its outcome
(plain data) comes back, and :func:`verify` decides here.  A self-learner's own run of a hidden
test cell runs both in one process (``autograder.hidden.grade``).

Each lab module defines ``CHECKS = {fill_in_name: [check, ...]}``; the test cell of that fill-in
has nbgrader id ``test_<fill_in_name>``.  The random programs that checks (and tests) run come from
:mod:`autograder.checks.programs`.
"""
import dataclasses
import functools
import importlib
import os
import secrets
import zlib
from typing import Any, Callable

import numpy as np

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

    def task(self):
        """What the student half receives: the probe's name and its inputs, as plain data."""
        return {"probe": self.probe, "inputs": to_plain(self.inputs)}


@functools.cache
def lab_module(lab):
    """The checks module of a lab (its ``CHECKS``)."""
    return importlib.import_module(f"autograder.checks.{short_name(lab_name(lab))}")


def checks_of(lab):
    """``{fill_in_name: [check, ...]}`` for a lab (``"lab3_autodiff"`` or ``"lab3"``)."""
    return lab_module(lab).CHECKS


def new_seed():
    """The seed for one grading run: ``AUTOGRADER_SEED`` if set (to reproduce a run), else random."""
    return int(os.environ.get("AUTOGRADER_SEED") or secrets.randbits(32))


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
    return [case_for(check, seed, fill_in, n) for n, check in enumerate(checks_of(lab)[fill_in])]


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
