"""The student half of the hidden checks: the only part of the grader that runs beside student code.

A hidden check has two halves (design.md, "Grading").  Its grader half (``autograder.checks``)
draws the inputs, computes the expected values with the full mini and decides the verdict, in a
process that never runs student code.  What it sends here, per drawn case, is a *task*: the name
of a probe and the probe's inputs as plain data.  A probe (one of this package's modules, one per
lab) builds what the inputs describe (arrays, graph nodes, a program), calls the student's
functions on it, and returns what it observed as plain data.  Nothing here computes an expected
value, and nothing here imports the checks: where student code runs, the answers are neither in
mini (a student edition) nor in the grader's code.

Some checks need a stand-in for a fill-in they do not test (``backward_pass``'s check needs a
toposort).  A probe then gets it as data from the task (an order, a pre-traced graph) or asks the
grader for it while the case runs (:class:`Grader`): the grader answers for that case only, and
only what that stand-in computes on that case's inputs.

Plain data is what ``json`` writes, with arrays, tuples, slices and dicts with any keys spelt out
as one-key dicts (:func:`to_plain`, :func:`from_plain`): nothing with behaviour crosses.
"""
import contextlib
import importlib
import json
import math

import numpy as np

PROBES = {}
"""``(lab short name, probe name) -> probe``: filled as the labs' modules are imported."""

MIME = "application/vnd.mini.hidden-checks"
"""The type of the one output a graded test cell shows its outcomes in (nbgrader path)."""


def probe(function):
    """Register ``function(student, grader, **inputs)`` as a probe of its module's lab."""
    PROBES[(function.__module__.rsplit(".", 1)[-1].split("_")[0], function.__name__)] = function
    return function


def lab_probes(lab):
    """Import the probes of ``lab`` (``"lab3_autodiff"`` or ``"lab3"``); the module's name."""
    name = f"autograder.probes.{lab.split('_')[0]}"
    importlib.import_module(name)
    return name


class Student:
    """The names a submission defined, as attributes; a missing one raises a readable error."""

    def __init__(self, namespace):
        self._namespace = namespace

    def __getattr__(self, name):
        try:
            return self._namespace[name]
        except KeyError:
            raise NameError(f"your notebook does not define '{name}': run the cell that defines "
                            "it, and keep the function's name as given") from None

    @contextlib.contextmanager
    def using(self, **stand_ins):
        """The notebook's names ``stand_ins`` replaced for the duration: a check of one fill-in
        hands the student's code stand-ins (data, or calls the grader answers) for the others."""
        missing = object()
        saved = {name: self._namespace.get(name, missing) for name in stand_ins}
        self._namespace.update(stand_ins)
        try:
            yield self
        finally:
            for name, value in saved.items():
                if value is missing:
                    self._namespace.pop(name, None)
                else:
                    self._namespace[name] = value


class StandInRefused(RuntimeError):
    """The grader would not answer a stand-in's question (not this case's, or malformed)."""


class Grader:
    """A probe's line to the grader during one case: the stand-ins the grader computes.

    ``ask(question) -> reply`` carries plain data both ways; how depends on the path (a pipe to
    the grader for the pytest path's worker, the kernel's input channel on the nbgrader path, a
    plain call where both halves share a process).
    """

    def __init__(self, ask, case):
        self._ask, self._case = ask, case

    def stand_in(self, name, *args):
        """What the grader's stand-in ``name`` returns for ``args`` in this case."""
        reply = self._ask({"case": self._case, "stand_in": name, "args": to_plain(list(args))})
        if not isinstance(reply, dict) or "result" not in reply:
            problem = reply.get("refused") if isinstance(reply, dict) else None
            raise StandInRefused(f"the grader's stand-in for {name} gave no answer"
                                 + (f": {problem}" if problem else ""))
        return from_plain(reply["result"])


def run(lab, task, namespace, ask, case=0):
    """Run one task in this process: ``{"result": plain data}``, or ``{"error": "..."}`` when the
    student's code raised (any error there is a verdict, not a crash)."""
    try:
        function = PROBES[(lab.split("_")[0], task["probe"])]
        result = function(Student(namespace), Grader(ask, case), **from_plain(task["inputs"]))
        return {"result": to_plain(result)}
    except Exception as error:
        return {"error": f"{type(error).__name__}: {error}"}


def report(lab, fill_in, tasks, nonce, namespace, run=run):
    """nbgrader path, in the kernel: run ``tasks`` (JSON) and show their outcomes as ONE output
    of type :data:`MIME`; the grader decides (``autograder.hidden.judge``).  Stand-ins ask the
    grader through the kernel's input channel, which the grader opens for test cells only.
    ``run`` is the one this module was imported with, as the pytest path's worker holds it: a
    notebook that replaces ``probes.run`` changes the outcomes on neither path."""
    from IPython import get_ipython
    from IPython.display import display
    kernel = get_ipython().kernel

    def ask(question):
        try:
            return json.loads(kernel.raw_input(json.dumps(question)))
        except Exception as error:      # no channel, or no JSON: the stand-in gives no answer
            return {"refused": f"{type(error).__name__}: {error}"}

    lab_probes(lab)     # imported already where the kernel was sealed; not in a plain one
    outcomes = [run(lab, task, namespace, ask, n) for n, task in enumerate(json.loads(tasks))]
    display({MIME: json.dumps({"nonce": nonce, "fill_in": fill_in, "outcomes": outcomes})},
            raw=True)


# ---------------------------------------------------------------------------------------------
# Plain data
# ---------------------------------------------------------------------------------------------

DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"}
"""The array types that cross: numbers only."""

MAX_ENTRIES = 10_000_000

_PLAIN = {type(None), bool, int, float, str}
"""The types :func:`to_plain` keeps as they are (exactly these: a subclass may be anything)."""


def to_plain(value):
    """``value`` as JSON-ready data.  Numbers, strings, None and lists stay; numpy arrays and
    numpy numbers become ``{"$array": [...], "$shape": [...], "$dtype": "float32"}`` (numbers
    only: anything else is refused with TypeError); tuples, slices, Ellipsis and dicts become
    one-key dicts.  An object with an odd ``__eq__`` or ``__float__`` cannot survive the trip."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, list):
        return [to_plain(item) for item in value]
    if isinstance(value, str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.name not in DTYPES:
            raise TypeError(f"an array of {array.dtype} values (only numbers are reported)")
        return {"$array": array.ravel().tolist(), "$shape": list(array.shape),
                "$dtype": array.dtype.name}
    if isinstance(value, tuple):
        return {"$tuple": [to_plain(item) for item in value]}
    if isinstance(value, dict):
        return {"$dict": [[to_plain(key), to_plain(item)] for key, item in value.items()]}
    if isinstance(value, slice):
        return {"$slice": [to_plain(value.start), to_plain(value.stop), to_plain(value.step)]}
    if value is Ellipsis:
        return {"$ellipsis": None}
    raise TypeError(f"{type(value).__name__} {value!r:.80} is not plain data (numbers, arrays, "
                    "strings, None, or lists, tuples and dicts of them)")


def from_plain(data):
    """The inverse of :func:`to_plain`.  ``data`` may come from student code: anything that is
    not what :func:`to_plain` writes raises ValueError."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [from_plain(item) for item in data]
    if isinstance(data, dict) and len(data) == 1:
        (tag, inner), = data.items()
        if tag == "$tuple" and isinstance(inner, list):
            return tuple(from_plain(item) for item in inner)
        if tag == "$dict" and isinstance(inner, list) and all(
                isinstance(pair, list) and len(pair) == 2 for pair in inner):
            return {_key(from_plain(key)): from_plain(item) for key, item in inner}
        if tag == "$slice" and isinstance(inner, list) and len(inner) == 3:
            return slice(*map(from_plain, inner))
        if tag == "$ellipsis":
            return Ellipsis
    if isinstance(data, dict) and set(data) == {"$array", "$shape", "$dtype"}:
        return _array(data["$array"], data["$shape"], data["$dtype"])
    raise ValueError(f"not plain data: {str(data)[:80]}")


def _key(key):
    if isinstance(key, list):
        raise ValueError("a list cannot be a key")
    return key


def _array(entries, shape, dtype):
    if (dtype not in DTYPES or not isinstance(shape, list) or not isinstance(entries, list)
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
            or math.prod(shape) != len(entries) or len(entries) > MAX_ENTRIES
            or not all(isinstance(x, (int, float)) for x in entries)):
        raise ValueError("not an array of numbers")
    try:
        return np.array(entries, dtype=dtype).reshape(shape)
    except (OverflowError, TypeError) as error:
        raise ValueError(f"not an array of {dtype} numbers ({error})") from None
