"""Gradient checking: is what autodiff computes the derivative? (L05 slide 30)

The check compares reverse-mode gradients with central differences,
``df/dx_i ~ (f(x + h e_i) - f(x - h e_i)) / 2h``, computed in float64 with ``h = 1e-6``: the
truncation error is O(h^2) and the rounding error O(eps / h), both around 1e-10 for well-scaled
functions.  :func:`diagnose` goes one step further and checks every node's VJP on its own, so that a
wrong gradient is traced to the primitive that produced it.
"""
import itertools
import linecache
import sys
from pathlib import Path

import numpy as np

from mini import autodiff
from mini.answers import answer
from mini.graph import toposort
from mini.primitives import vjp_of
from mini.tracing import new_trace

H = 1e-6
_MINI_DIR = str(Path(__file__).resolve().parent)


@answer("lab3", "numerical_grad")
def numerical_grad(fun, *args, argnum=0, h=H):
    """Central-difference gradient of scalar-valued ``fun`` with respect to ``args[argnum]``."""
    x = np.array(args[argnum], dtype=np.float64)
    grad = np.zeros_like(x)

    def f_at(value):
        new_args = list(args)
        new_args[argnum] = value if x.ndim else float(value)
        return float(np.asarray(fun(*new_args), dtype=np.float64))

    for index in np.ndindex(x.shape):
        shifted = x.copy()
        shifted[index] = x[index] + h
        f_plus = f_at(shifted)
        shifted[index] = x[index] - h
        grad[index] = (f_plus - f_at(shifted)) / (2 * h)
    return grad


@answer("lab3", "numerical_grad")
def check_grads(fun, *args, argnums=None, rtol=1e-5, atol=1e-7):
    """Assert that mini's gradient of ``fun`` equals central differences for each argument.

    ``fun`` may return an array: it is then checked through ``sum(r * fun(*args))`` for a fixed
    random ``r``, which tests every output entry at once.  ``argnums`` defaults to every argument
    holding floats.

    Raises:
        AssertionError: naming the argument and index where they disagree, expected vs got.
    """
    args = [np.asarray(a, dtype=np.float64) if _is_float(a) else a for a in args]
    if argnums is None:
        argnums = [i for i, a in enumerate(args) if _is_float(a)]
    projection = np.random.default_rng(0).standard_normal(np.shape(fun(*args)))
    scalar_fun = (lambda *a: np.sum(projection * np.asarray(_value(fun(*a))))) if projection.ndim \
        else fun

    for argnum in argnums:
        got = np.asarray(autodiff.grad(lambda *a: _project(fun(*a), projection), argnum)(*args))
        expected = numerical_grad(scalar_fun, *args, argnum=argnum)
        if got.shape != expected.shape:
            raise AssertionError(f"gradient with respect to argument {argnum} has shape {got.shape}"
                                 f", but the argument has shape {expected.shape}")
        bad = ~np.isclose(got, expected, rtol=rtol, atol=atol)
        if bad.any():
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            raise AssertionError(
                f"gradient of {getattr(fun, '__name__', 'the function')} with respect to argument "
                f"{argnum} (shape {expected.shape}) is wrong at index {index}: central differences "
                f"give {expected[index]:.10g}, autodiff gave {got[index]:.10g} "
                f"({int(bad.sum())} of {bad.size} entries differ)")


@answer("lab3", "numerical_grad")
def diagnose(fun, *args, argnum=0, rtol=1e-5, atol=1e-7, seed=0):
    """Find the first node of ``fun``'s graph whose VJP disagrees with a numerical derivative.

    The program is traced once; then, node by node in the order the program created them, each
    VJP is checked by a dot-product test: for random ``g`` (shaped like the node's output) and
    random direction ``v`` (shaped like the input), ``<vjp(g), v>`` must equal the central
    difference of ``<g, f(x + h v)>``.  A correct VJP passes however wrong the others are, so the
    first failure is where the gradient goes wrong.

    Returns:
        None if every VJP agrees, else a message naming the node: its primitive, the argument, its
        position in the program (n-th operation, file and line) and the two numbers.
    """
    rng = np.random.default_rng(seed)
    boxed = list(args)
    boxed[argnum] = SourceBox(np.asarray(args[argnum], dtype=np.float64), name="input",
                              trace=new_trace())
    end = fun(*boxed)
    if not isinstance(end, SourceBox):
        return None
    nodes = [node for node in toposort(end) if node.fun is not None]
    nodes.sort(key=lambda node: node.source[0])
    for position, node in enumerate(nodes, start=1):
        for argnum_, parent in zip(node.parent_argnums, node.parents):
            finding = _check_vjp(node, argnum_, rng, rtol, atol)
            if finding:
                _, where, line = node.source
                return (f"operation {position} of {len(nodes)}, '{node.fun.__name__}' (argument "
                        f"{argnum_}) at {where}" + (f" `{line}`" if line else "") + f": {finding}")
    return None


@answer("lab3", "numerical_grad")
class SourceBox(autodiff.Box):
    """A Box whose operations remember where in the program they were made: ``source`` is
    (creation index, "file:line", source line) of the first frame outside mini."""

    __slots__ = ()
    _created = itertools.count(1)

    def record(self, prim, kwargs, values, traced, argnums, outer):
        node = super().record(prim, kwargs, values, traced, argnums, outer)
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith(_MINI_DIR):
            frame = frame.f_back
        where, line = "?", ""
        if frame is not None:
            where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
        node.source = next(self._created), where, line
        return node


@answer("lab3", "numerical_grad")
def _check_vjp(node, argnum, rng, rtol, atol):
    ans, args = node.vjp_operands()
    x = np.asarray(args[argnum], dtype=np.float64)
    g = rng.standard_normal(np.shape(ans))
    v = rng.standard_normal(x.shape)
    try:
        got = float(np.sum(np.asarray(vjp_of(node.fun, argnum)(g, ans, *args, **node.kwargs)) * v))
    except Exception as error:  # a broken VJP is exactly what this function is looking for
        return f"its VJP raised {type(error).__name__}: {error}"

    def along(t):
        shifted = list(args)
        shifted[argnum] = x + t * v
        return float(np.sum(g * node.fun.fun(*shifted, **node.kwargs)))

    expected = (along(H) - along(-H)) / (2 * H)
    if not np.isclose(got, expected, rtol=max(rtol, 1e-4), atol=max(atol, 1e-6)):
        return (f"its VJP gives <vjp(g), v> = {got:.10g} but central differences give {expected:.10g} "
                f"(input shape {x.shape}, output shape {np.shape(ans)})")
    return None


def _is_float(a):
    return np.asarray(a).dtype.kind == "f" if not isinstance(a, (str, bytes)) else False


def _value(x):
    return x.value if isinstance(x, autodiff.Box) else x


def _project(out, projection):
    return out if not projection.ndim else (out * projection).sum()
