"""Reverse-mode automatic differentiation by tracing (the dynamic front end, like PyTorch/autograd).

``grad(f)(x)`` runs ``f`` on a boxed ``x``.  Every primitive applied to a box returns a new box that
remembers the primitive, its arguments and its parent boxes, so running the program records its
computation graph (L05 slide 13).  The reverse pass (slide 27, ``mini.reverse``, which the static
framework runs too) then walks that graph from the output back to the input, asking each node's
VJP (``mini.primitives.vjp_table``) for its parents' shares of the gradient and summing the shares
of nodes with several outgoing edges (slide 20).
"""
import gc
import warnings

import numpy as np

from mini.answers import answer
from mini.graph import Node
from mini.primitives import reshape, stack, zeros_like
from mini.primitives import sum as total
from mini.reverse import backward_pass
from mini.tracing import TracedValue, holds_traced, joined, new_trace, raw

@answer("lab3", "tracer")
class Box(Node, TracedValue):
    """A value being traced: a graph node that behaves like the number or array it holds.

    ``trace`` says which ``make_vjp`` records it; boxes made by hand share trace 0.
    """

    __slots__ = ("trace",)

    def __init__(self, value=None, fun=None, args=(), kwargs=None, parents=(), parent_argnums=(),
                 name=None, trace=0):
        # Node.__init__'s assignments, written out: this runs once per traced operation
        self.value, self.fun, self.args, self.kwargs = value, fun, args, kwargs or {}
        self.parents, self.parent_argnums = tuple(parents), tuple(parent_argnums)
        self.name, self.source, self.trace = name, None, trace

    def record(self, prim, kwargs, values, traced, argnums, outer):
        """Compute ``prim`` on the unboxed arguments and return the result boxed as a new node."""
        value = prim(*values, **kwargs) if outer else prim.fun(*values, **kwargs)
        return type(self)(value, prim, tuple(values), kwargs, traced, argnums, None, self.trace)

    def vjp_operands(self):
        """What the VJPs read: the output value and the unboxed arguments."""
        return self.value, self.args

    def __repr__(self):
        return f"Box({self.value!r}, from {self.label})"


@answer("lab3", "make_vjp")
def make_vjp(fun, *args, argnum=0):
    """Trace ``fun(*args)`` and return ``(vjp, value)`` (L05 slide 28).

    ``vjp(g)`` is the gradient, with respect to ``args[argnum]``, of ``sum(g * fun(*args))``: the
    vector-Jacobian product ``J^T g``.  Tracing happens once; ``vjp`` may be called many times.
    ``args[argnum]`` may be an array or a dict/list/tuple of arrays (a model's parameters); the
    gradient then has the same structure.  ``argnum`` may be a tuple of positions: the gradient is
    then a tuple, one entry per position.

    Called inside another ``make_vjp`` (``grad(grad(f))``), the reverse pass is itself traced by
    the outer one, because every VJP is written with mini's primitives.
    """
    trace, starts = new_trace(), []
    many = isinstance(argnum, (list, tuple))
    argnums = tuple(argnum) if many else (argnum,)
    boxed = list(args)
    for i in map(_position, argnums, [args] * len(argnums)):
        boxed[i] = _box_leaves(args[i], i, starts, trace)
    with _CollectorPaused():
        end = fun(*boxed)
    if holds_traced(end):                       # np.array of traced values
        end = joined(end)
    traced = isinstance(end, Box) and end.trace == trace
    if not traced:
        _refuse_untraceable_output(fun, end)

    inputs = set(starts)

    def vjp(g):
        with _CollectorPaused():       # the inputs' gradients alone: the others are freed as it goes
            grads = backward_pass(g, end, only=inputs) if traced else {}
        if not grads:
            warnings.warn(f"{_name(fun)}: the output does not depend on argument {argnum}, so its "
                          "gradient is zero", stacklevel=2)
        leaf_grads = iter([_own(grads[s]) if s in grads else zeros_like(s.value)
                           for s in starts])
        grads = tuple(_rebuild(args[i], leaf_grads) for i in argnums)
        return grads if many else grads[0]
    return vjp, end.value if traced else end


class _CollectorPaused:
    """Hold off CPython's cycle collector while a graph is traced or walked back.

    The graph has no reference cycles (a node points only at its parents), so reference counting
    frees it; yet every full collection walks all of it again, with every other object of the
    process, and a growing graph of Python objects triggers one after another (they took half
    the time of a 10,000-step chain).  Cyclic garbage the traced function makes meanwhile is
    collected once the pass is over.  A class, not a generator (``contextlib``), because each
    gradient enters it twice and a generator takes several times longer to enter and leave.
    """

    def __enter__(self):
        self.pausing = gc.isenabled()       # not when paused by an outer trace, or by the caller
        gc.disable()

    def __exit__(self, *exc_info):
        if self.pausing:
            gc.enable()


def _own(gradient):
    """A gradient the caller may change in place: not a read-only view (``np.broadcast_to``'s,
    which sum's VJP gives) of an array mini keeps."""
    if isinstance(gradient, np.ndarray) and not gradient.flags.writeable:
        return gradient.copy()
    return gradient


def _position(argnum, args):
    if not isinstance(argnum, int) or not -len(args) <= argnum < len(args):
        raise TypeError(f"argnum {argnum!r} does not name an argument: the function was called "
                        f"with {len(args)} positional argument(s)")
    return argnum


def _refuse_untraceable_output(fun, end):
    """An output holding traced values mini cannot follow (a list, a dict, an object array)."""
    if not isinstance(end, TracedValue) and _holds_boxes(end):
        raise TypeError(f"{_name(fun)} returned {type(end).__name__} holding traced values; mini "
                        "differentiates a single array output: combine them with mini.stack, "
                        "mini.concatenate or a sum")


def _holds_boxes(x):
    if isinstance(x, TracedValue):
        return True
    if isinstance(x, dict):
        return any(map(_holds_boxes, x.values()))
    if isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.dtype == object):
        return any(map(_holds_boxes, x))
    return False


def _box_leaves(x, argnum, starts, trace):
    """Box every array in a (possibly nested) dict/list/tuple, recording the boxes in order."""
    if isinstance(x, dict):
        return {key: _box_leaves(value, argnum, starts, trace) for key, value in x.items()}
    if isinstance(x, (list, tuple)) and _holds_parameters(x):
        return type(x)(_box_leaves(value, argnum, starts, trace) for value in x)
    starts.append(Box(_differentiable(x, argnum), name=f"argument {argnum}", trace=trace))
    return starts[-1]


def _rebuild(x, leaves):
    """``x``'s structure with its arrays replaced, in order, by ``leaves``."""
    if isinstance(x, dict):
        return {key: _rebuild(value, leaves) for key, value in x.items()}
    if isinstance(x, (list, tuple)) and _holds_parameters(x):
        return type(x)(_rebuild(value, leaves) for value in x)
    return next(leaves)


def _holds_parameters(x):
    """Whether the list or tuple ``x`` holds parameters (arrays, dicts, traced values), rather
    than being a nested list of numbers (itself one parameter)."""
    return not _is_numeric(x) or any(
        isinstance(v, (np.ndarray, dict, list, tuple, TracedValue)) for v in x)


@answer("lab3", "grad")
def grad(fun, argnum=0):
    """The gradient function of a scalar-valued ``fun`` with respect to argument ``argnum``.

    ``grad(grad(f))`` is the second derivative: the gradient may be differentiated again.
    """
    def gradfun(*args, **kwargs):
        return value_and_grad(fun, argnum)(*args, **kwargs)[1]
    gradfun.__name__ = f"grad_{_name(fun)}"
    return gradfun


@answer("lab3", "grad")
def value_and_grad(fun, argnum=0):
    """Like :func:`grad`, but returns ``(fun(*args), gradient)`` from one forward pass."""
    def value_and_gradfun(*args, **kwargs):
        vjp, ans = make_vjp(lambda *a: fun(*a, **kwargs), *args, argnum=argnum)
        value = np.asarray(raw(ans))
        if value.ndim != 0:
            raise TypeError(f"grad of {_name(fun)} needs a scalar output, but it returned an array "
                            f"of shape {value.shape}; use make_vjp or jacobian for non-scalar "
                            "outputs, or reduce the output (e.g. with mini.sum) first")
        if value.dtype.kind == "c":
            raise TypeError(f"grad of {_name(fun)} needs a real output, but it returned the complex "
                            f"number {value}; differentiate its real part or its absolute square")
        # d(output)/d(output): 1 in the output's float type (float64 for an integer output)
        return ans, vjp(np.array(1.0, value.dtype if value.dtype.kind == "f" else np.float64))
    return value_and_gradfun


@answer("lab3", "forward_mode")
def jacobian(fun, argnum=0):
    """The Jacobian of ``fun`` with respect to argument ``argnum``, one VJP per output entry.

    Row ``i`` is ``J^T e_i`` (L05 slides 21-23): the gradient of output entry ``i``.  The result has
    shape ``output.shape + input.shape``.  ``jacobian(grad(f))`` is the Hessian.
    """
    def jacobianfun(*args, **kwargs):
        vjp, ans = make_vjp(lambda *a: fun(*a, **kwargs), *args, argnum=argnum)
        out_shape, in_shape = np.shape(raw(ans)), np.shape(raw(args[argnum]))
        rows = []
        for i in range(int(np.prod(out_shape))):
            e_i = np.zeros(int(np.prod(out_shape)))
            e_i[i] = 1.0
            rows.append(reshape(vjp(e_i.reshape(out_shape)), in_shape))
        return reshape(stack(rows), out_shape + in_shape)
    return jacobianfun


@answer("lab3", "grad")
def hessian(fun, argnum=0):
    """The matrix of second derivatives of a scalar ``fun``: the Jacobian of its gradient."""
    return jacobian(grad(fun, argnum), argnum)


@answer("lab3", "grad")
def hessian_vector_product(fun, argnum=0):
    """``hvp(*args, v)``: the Hessian of scalar ``fun`` times ``v``, without forming the Hessian.

    ``H v`` is the gradient of ``<grad f(x), v>``: two reverse passes, each linear in the size of
    the program.
    """
    def hvp(*args_and_v):
        *args, v = args_and_v
        return grad(lambda *a: total(grad(fun, argnum)(*a) * v), argnum)(*args)
    return hvp


def _differentiable(x, argnum):
    if type(x) is np.ndarray and x.dtype.kind == "f":      # a model's parameter: nothing to do
        return x
    value = raw(x)
    kind = np.asarray(value).dtype.kind if _is_numeric(value) else None
    if kind not in ("f", "i", "u", "b"):
        raise TypeError(f"cannot differentiate with respect to argument {argnum}: expected a number "
                        f"or a numeric array, got {type(value).__name__} {value!r:.60} (mini "
                        "differentiates real numbers)")
    if isinstance(x, TracedValue):
        return x
    if kind == "f" and not isinstance(x, (list, tuple)):
        return x
    return np.asarray(x, dtype=None if kind == "f" else np.float64)   # a list of numbers too


def _is_numeric(x):
    try:
        return np.asarray(x).dtype != object
    except (ValueError, TypeError):
        return False


def _name(fun):
    return getattr(fun, "__name__", type(fun).__name__)
