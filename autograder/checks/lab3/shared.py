"""Helpers several of lab 3's check modules use: drawing shapes, a call's arguments and a
gradient in words, the count of fun's runs a probe reports, comparing arguments within rounding
(the stand-ins' test of a question they answer) and the grader's vjp(g) of a program, the
stand-in of make_vjp's vjp for grad and jacobian_reverse."""
import numpy as np

import mini
from autograder.probes.lab3 import program_function


def _shape(rng, ndims=(0, 1, 2), low=1, high=5):
    ndim = int(rng.choice(ndims))
    return tuple(int(n) for n in rng.integers(low, high, size=ndim))


def _dims(rng, count, low=2, high=5):
    return (int(d) for d in rng.integers(low, high, size=count))


def _runs(count):
    return "once" if count == 1 else f"{count} times"


def _ran(result):
    """What a probe reported, its count of fun's runs in words."""
    result = dict(result)
    runs = result.pop("runs of fun")
    return {**result, "fun ran": _runs(runs)}


def _arguments(args):
    """A call's arguments in words: an array by its shape, an index as Python writes it
    (``np.s_[:, 1]``, ``np.s_[[0, 2, 0, 0]]``: a repeated entry shows), anything else by repr."""
    return ", ".join(map(_argument, args))


def _argument(arg):
    parts = arg if isinstance(arg, tuple) else (arg,)
    if isinstance(arg, np.ndarray) and (arg.dtype.kind not in "iu" or arg.size > 10):
        return f"an array of shape {arg.shape}"
    if any(isinstance(part, (slice, np.ndarray)) for part in parts):
        return "np.s_[" + ", ".join(map(_index_part, parts)) + "]"
    return repr(arg)


def _index_part(part):
    if isinstance(part, slice):
        text = f"{'' if part.start is None else part.start}:{'' if part.stop is None else part.stop}"
        return text if part.step is None else f"{text}:{part.step}"
    if isinstance(part, np.ndarray):
        return str(part.tolist())
    return repr(part)


def _describe(g):
    return f"{g:.4g}" if np.ndim(g) == 0 else f"an array of shape {np.shape(g)}"


def _x2(rng):
    return rng.standard_normal(tuple(_dims(rng, 2)))


def _x3(rng):
    return rng.standard_normal(tuple(_dims(rng, 3)))


def _same_arguments(given, known):
    """Whether ``given`` are the arguments ``known`` (numbers within rounding, anything else by
    its repr)."""
    def same(a, b):
        if isinstance(b, (int, float, np.ndarray)) and not isinstance(b, bool):
            a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
            return a.shape == b.shape and bool(np.all(
                (a == b) | (np.abs(a - b) <= 1e-12 + 1e-9 * np.abs(b))))
        return repr(a) == repr(b)
    try:
        return len(given) == len(known) and all(map(same, given, known))
    except (TypeError, ValueError):
        return False


def _vjp_of(steps, x):
    """The grader's vjp(g) of ``steps``' function at x (mini's make_vjp), for grad's and
    jacobian_reverse's stand-in make_vjp."""
    vjp, value = mini.make_vjp(program_function(steps), x)

    def answered(g):
        if np.shape(g) != np.shape(value):
            raise ValueError(f"vjp(g) was given g of shape {np.shape(g)}, but fun's output has "
                             f"shape {np.shape(value)}: g is shaped like the OUTPUT (a number "
                             "for a scalar function), not like x")
        return vjp(g)
    return answered
