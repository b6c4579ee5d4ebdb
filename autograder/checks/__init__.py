"""The hidden checks, one module per lab, shared by the nbgrader path and the pytest path.

A check is a function ``check(rng) -> Case``.  It draws random inputs from ``rng`` and returns a
:class:`Case` holding two closures over them:

* ``call(student)`` runs the student's code on the inputs and returns plain numbers (arrays,
  floats, strings, or lists/dicts of them).  This is the only part that touches student code.
* ``expected()`` computes the right answer with mini's reference implementation or with central
  differences.  It never touches student code.

Because both sides draw the inputs from the same seed, the two halves can run in different
processes: the grader sends the seed to the worker, the worker returns the JSON of ``call``'s result
(:func:`to_plain`), and the grader compares it with ``expected()`` in its own process
(:func:`verify`), which never imported student code.  In a notebook's hidden test cell run by a
student both halves run in the kernel (``autograder.hidden.grade``).

Each lab module defines ``CHECKS = {fill_in_name: [check, ...]}``; the test cell of that fill-in
has nbgrader id ``test_<fill_in_name>``.  The random programs that checks (and tests) run come from
:mod:`autograder.checks.programs`.
"""
import contextlib
import dataclasses
import functools
import importlib
import os
import secrets
from typing import Any, Callable

import numpy as np

LABS = ("lab1_learning", "lab2_graphs", "lab3_autodiff", "lab4_framework", "lab5_kernels")


@dataclasses.dataclass
class Case:
    """One drawn instance of a check.

    Attributes:
        what: the call in the lab's terms, e.g. ``"backward_pass on a chain of 5 nodes"``.
        call: ``call(student) -> plain result``; ``student`` exposes the notebook's names.
        expected: ``expected() -> plain result`` from the reference.
        rtol, atol: tolerances for numbers.
        hint: a sentence added to the failure message (what to look at).
    """

    what: str
    call: Callable[["Student"], Any]
    expected: Callable[[], Any]
    rtol: float = 1e-6
    atol: float = 1e-8
    hint: str = ""


class Student:
    """The names a submission defined, as attributes; missing ones raise a readable error."""

    def __init__(self, namespace):
        self._namespace = namespace

    def __getattr__(self, name):
        try:
            return self._namespace[name]
        except KeyError:
            raise NameError(f"your notebook does not define '{name}': run the cell that defines "
                            "it, and keep the function's name as given") from None

    @contextlib.contextmanager
    def using(self, **replacements):
        """Temporarily give the notebook reference versions of other fill-ins, so that a check of
        one function does not fail because another one is wrong."""
        saved = {name: self._namespace.get(name, _MISSING) for name in replacements}
        self._namespace.update(replacements)
        try:
            yield self
        finally:
            for name, value in saved.items():
                if value is _MISSING:
                    self._namespace.pop(name, None)
                else:
                    self._namespace[name] = value


_MISSING = object()


def lab_name(lab):
    """A lab's full name from its full or short name (``"lab3"`` is ``"lab3_autodiff"``): the one
    place lab names are read, for the command line, the checks and the reference stubs."""
    for name in LABS:
        if lab in (name, short_name(name)):
            return name
    raise ValueError(f"unknown lab {lab!r}; the labs are {', '.join(LABS)}")


def short_name(lab):
    """``"lab3_autodiff"`` -> ``"lab3"``: the name of the lab's checks module here."""
    return lab.split("_")[0]


@functools.cache
def lab_module(lab):
    """The checks module of a lab (its ``CHECKS``, and the ``REFERENCE`` the guard switches off);
    once imported, found here even where student code can no longer import the autograder
    (:func:`autograder.guard.hide_autograder`)."""
    return importlib.import_module(f"autograder.checks.{short_name(lab_name(lab))}")


def checks_of(lab):
    """``{fill_in_name: [check, ...]}`` for a lab (``"lab3_autodiff"`` or ``"lab3"``)."""
    return lab_module(lab).CHECKS


def new_seed():
    """The seed for one grading run: ``AUTOGRADER_SEED`` if set (to reproduce a run), else random."""
    return int(os.environ.get("AUTOGRADER_SEED") or secrets.randbits(32))


def case_for(check, seed):
    """Draw the case of ``check`` for ``seed``; the same on every machine and in every process."""
    return check(np.random.default_rng(seed))


def cases(lab, fill_in, seed, answers=True):
    """Every case of ``fill_in``'s checks in a run with ``seed``, in order: check ``n`` draws with
    ``seed + n``, the one rule that the student's own run, both grading paths and the grader's
    verdicts share (so a case drawn in a worker or a kernel is the case the grader verifies).

    Without ``answers`` each case's ``expected`` is None: where student code runs while grading,
    nothing it can reach (its callers' frames included) computes the right answer.
    """
    drawn = [case_for(check, seed + n) for n, check in enumerate(checks_of(lab)[fill_in])]
    if not answers:
        for case in drawn:
            case.expected = None
    return drawn


def run_case(case, namespace):
    """Worker side: the student's result as plain data, or the exception they raised."""
    try:
        return {"result": to_plain(case.call(Student(namespace)))}
    except Exception as error:  # any error in student code is a verdict, not a crash
        return {"error": f"{type(error).__name__}: {error}"}


def verify(case, outcome):
    """Grader side: raise AssertionError, in the lab's terms, unless ``outcome`` is right."""
    if "error" in outcome:
        raise AssertionError(f"{case.what} raised {outcome['error'][:2000]}"
                             + (f"\nHint: {case.hint}" if case.hint else ""))
    problem = _difference(from_plain(outcome["result"]), case.expected(), case.rtol, case.atol)
    if problem:
        raise AssertionError(f"{case.what}: {problem}" + (f"\nHint: {case.hint}" if case.hint else ""))


def to_plain(value):
    """Arrays and numbers to JSON-ready data: floats, lists, dicts, strings, None.

    Arrays become ``{"array": [...], "shape": [...]}`` of float64, so that an object with an odd
    ``__eq__`` or ``__float__`` cannot survive the trip: only numbers come back.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, dict):
        return {str(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)) and not _is_numeric_sequence(value):
        return [to_plain(item) for item in value]
    array = np.array(value, dtype=np.float64)
    return {"array": [float(x) for x in array.ravel()], "shape": list(array.shape)}


def from_plain(data):
    """The inverse of :func:`to_plain`: arrays back as float64 numpy arrays."""
    if isinstance(data, dict) and set(data) == {"array", "shape"}:
        return np.array(data["array"], dtype=np.float64).reshape(data["shape"])
    if isinstance(data, dict):
        return {key: from_plain(item) for key, item in data.items()}
    if isinstance(data, list):
        return [from_plain(item) for item in data]
    return data


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
            problem = _difference(got[key], expected[key], rtol, atol, f"{path}[{key!r}]")
            if problem:
                return problem
        return None
    if isinstance(expected, (list, tuple)) and not _is_numeric_sequence(expected):
        if not isinstance(got, list) or len(got) != len(expected):
            return f"{path} should be a sequence of {len(expected)} items, got {_describe(got)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            problem = _difference(g, e, rtol, atol, f"{path}[{i}]")
            if problem:
                return problem
        return None
    if _exact_kind(expected):
        if _exact_kind(got) == _exact_kind(expected) and got == expected:
            return None
        return f"{path} should be {expected!r}, got {_describe(got)}"
    expected = np.asarray(expected, dtype=np.float64)
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
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return f"a dict with keys {_keys(value)}"
    return f"{type(value).__name__} {value!r:.80}"
