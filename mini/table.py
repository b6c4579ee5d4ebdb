"""The derivative table: what a primitive is, and its VJPs and JVPs, one entry per argument.

A primitive is a function mini knows how to differentiate.  Its derivative is stored twice over,
as the two products with its Jacobian ``J`` (L05 slides 22-23):

* a VJP per argument, ``vjp(g, ans, *args, **kwargs) -> J^T g``, for reverse mode: given ``g``,
  the gradient of the final output with respect to the primitive's output ``ans``, it returns the
  gradient with respect to that argument.  For ``y = W x`` that is ``x_bar = W^T y_bar``;
* a JVP per argument, ``jvp(t, ans, *args, **kwargs) -> J t``, for forward mode: given a tangent
  ``t`` of that argument, it returns the tangent of the output.  For ``y = W x``, ``y_dot = W t``.

Both are written with mini's primitives, so they can themselves be traced: that is what gives
derivatives of derivatives, and the static framework's backward graph.
"""
import functools
import math

import numpy as np

from mini.answers import answer, answers, registered


class Traced:
    """A value that records the primitives applied to it instead of only computing them.

    Subclasses (an eager ``Box``, a forward-mode ``Dual``, a framework ``Tensor``) define
    ``apply(primitive, args, kwargs)``.
    """

    __slots__ = ()


class Primitive:
    """A function with entries in :data:`vjp_table` and :data:`jvp_table`.

    Called on plain numbers or arrays it just computes.  Called with a traced value among its
    positional arguments (or in an object array among them, as ``np.array`` of traced values
    makes), it hands itself to that value's ``apply``, which records the call.
    ``piecewise_constant`` primitives (comparisons, ``zeros_like``) have zero derivative wherever
    they have one, so traced values pass through them untraced.
    """

    def __init__(self, fun, name=None):
        self.fun = fun
        self.__name__ = name or fun.__name__
        self.__doc__ = fun.__doc__
        self.piecewise_constant = False

    def __call__(self, *args, **kwargs):
        for arg in args:        # a plain array first: the commonest argument by far
            if type(arg) is np.ndarray:
                if arg.dtype.hasobject:                             # np.array of traced values
                    for entry in arg.flat:
                        if isinstance(entry, Traced):
                            return entry.apply(self, args, kwargs)
            elif isinstance(arg, Traced):
                return arg.apply(self, args, kwargs)
        return self.fun(*args, **kwargs)

    def __repr__(self):
        return f"<primitive {self.__name__}>"


def primitive(fun):
    """Make ``fun`` a primitive; register its derivatives with :func:`defvjp` and :func:`defjvp`."""
    return Primitive(fun)


vjp_table = {}
"""primitive -> {argument position: vjp(g, ans, *args, **kwargs)}."""

jvp_table = {}
"""primitive -> {argument position: jvp(t, ans, *args, **kwargs)}."""


def defvjp(prim, *vjps, broadcasting=False):
    """Register the VJPs of ``prim``, one per positional argument (``None`` for "not differentiable").

    With ``broadcasting=True`` (elementwise binary operations) each result is summed back to its
    argument's shape, so a VJP never has to think about numpy broadcasting: it is handled here, once.
    """
    if broadcasting:
        vjps = [_summed_to_argument(vjp, argnum) if vjp else None for argnum, vjp in enumerate(vjps)]
    vjp_table[prim] = {argnum: vjp for argnum, vjp in enumerate(vjps) if vjp is not None}
    registered(*vjp_table[prim].values())


def defjvp(prim, *jvps, broadcasting=False):
    """Register the JVPs of ``prim``, one per positional argument (``None`` for "not differentiable").

    With ``broadcasting=True`` each tangent of the output is broadcast to the output's shape (the
    tangent of ``x + y`` along ``x`` alone has ``x``'s shape until it is).
    """
    if broadcasting:
        jvps = [_broadcast_to_answer(jvp) if jvp else None for jvp in jvps]
    jvp_table[prim] = {argnum: jvp for argnum, jvp in enumerate(jvps) if jvp is not None}
    registered(*jvp_table[prim].values())


def defvjp_every_argument(prim, vjp):
    """Register one ``vjp(argnum, g, ans, *args, **kwargs)`` serving every argument position."""
    vjp_table[prim] = _EveryArgument(vjp)
    registered(vjp)


def defjvp_every_argument(prim, jvp):
    """Register one ``jvp(argnum, t, ans, *args, **kwargs)`` serving every argument position."""
    jvp_table[prim] = _EveryArgument(jvp)
    registered(jvp)


def defvjp_zero(prim):
    """Register a primitive whose output is piecewise constant: every argument gets zero gradient.

    Traced values pass through it untraced: its output is a plain array, a constant of the trace.
    """
    prim.piecewise_constant = True
    defvjp_every_argument(prim, lambda argnum, g, ans, *args, **kwargs: zeros_like(args[argnum]))
    defjvp_every_argument(prim, lambda argnum, t, ans, *args, **kwargs: zeros_like(ans))


def shape_only(argnum):
    """The VJP of an argument read only for its shape (the ``like`` of ``sum_to_like``): zeros."""
    return lambda g, ans, *args, **kwargs: zeros_like(args[argnum])


def no_tangent(t, ans, *args, **kwargs):
    """The JVP of an argument read only for its shape: the output does not move."""
    return zeros_like(ans)


def vjp_of(prim, argnum):
    """The VJP of ``prim`` for argument ``argnum``; an error naming both if there is none."""
    try:
        return vjp_table[prim][argnum]
    except KeyError:
        raise _missing(vjp_table, "VJP", "mini.defvjp", prim, argnum) from None


def jvp_of(prim, argnum):
    """The JVP of ``prim`` for argument ``argnum``; an error naming both if there is none."""
    try:
        return jvp_table[prim][argnum]
    except KeyError:
        raise _missing(jvp_table, "JVP", "mini.defjvp", prim, argnum) from None


def _missing(table, kind, register, prim, argnum):
    if prim not in table:
        return NotImplementedError(
            f"primitive '{getattr(prim, '__name__', prim)}' has no {kind}s in mini's table; "
            f"register them with {register} before differentiating through it")
    return NotImplementedError(
        f"primitive '{prim.__name__}' has no {kind} for argument {argnum}: mini cannot "
        f"differentiate with respect to that argument")


class _EveryArgument:
    def __init__(self, rule):
        self.rule = rule

    def __getitem__(self, argnum):
        return functools.partial(self.rule, argnum)


def _summed_to_argument(vjp, argnum):
    @answer("lab3", "unbroadcast")
    def summed(g, ans, *args, **kwargs):
        share, like = vjp(g, ans, *args, **kwargs), args[argnum]
        if type(share) in _PLAIN and type(like) in _PLAIN and shape_of(share) == shape_of(like):
            return share                # nothing was broadcast: skip the primitive call
        return sum_to_like(share, like)
    return summed


_PLAIN = (np.ndarray, np.float64, float, int)
"""Types whose shape is known now (not framework nodes, not traced values)."""


def _broadcast_to_answer(jvp):
    @answer("lab3", "forward_mode")
    def broadcast(t, ans, *args, **kwargs):
        return broadcast_to_like(jvp(t, ans, *args, **kwargs), ans)
    return broadcast


# ---------------------------------------------------------------------------------------------
# The primitives the table itself needs: undoing broadcasting, and zeros
# ---------------------------------------------------------------------------------------------

@answer("lab3", "unbroadcast")
@primitive
def sum_to_like(g, like):
    """Undo broadcasting: sum ``g`` down to the shape of ``like``."""
    shape = shape_of(like)
    return g if shape_of(g) == shape else sum_to_shape(g, shape)


@answer("lab3", "shape_vjps")
@primitive
def broadcast_to_like(g, like):
    """Broadcast ``g`` to the shape of ``like`` (the adjoint of :func:`sum_to_like`)."""
    shape = shape_of(like)
    return g if shape_of(g) == shape else np.broadcast_to(g, shape)


def shape_of(x):
    """``np.shape(x)``, without numpy's dispatch for the common cases: it runs once per edge of
    every reverse pass."""
    if isinstance(x, np.ndarray):
        return x.shape
    return () if isinstance(x, (float, int)) else np.shape(x)


@primitive
def zeros_like(x):
    """Zeros shaped like ``x``, in ``x``'s float type."""
    return np.zeros_like(x, dtype=np.result_type(x, 1.0))


@answer("lab3", "unbroadcast")
def sum_to_shape(g, shape):
    """Sum the leading axes broadcasting added, then the axes it stretched from length 1.

    A bias's gradient passes here every step: its rows are summed.  numpy's ``add.reduce`` (what
    ``np.sum`` calls) over a first axis adds one row at a time, so float rows are summed instead
    as one product with a vector of ones, which BLAS computes 2.5 times faster for 640 rows of
    64 and 10 times faster for rows of 2 or 3 (a classifier's output layer).  A sum of every
    entry (``shape`` is ``()``) has no rows to keep apart: numpy's own is fast.
    """
    g = np.asarray(g)
    leading = g.ndim - len(shape)
    if leading > 0 and shape and g.dtype.kind == "f":
        rows, kept = math.prod(g.shape[:leading]), g.shape[leading:]
        g = (np.ones(rows, g.dtype) @ g.reshape(rows, math.prod(kept))).reshape(kept)
    elif leading > 0:
        g = np.add.reduce(g, axis=tuple(range(leading)))
    if g.shape == shape:                        # a bias: nothing was stretched
        return g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return np.add.reduce(g, axis=axes, keepdims=True) if axes else g


with answers("lab3", "shape_vjps"):
    defvjp(sum_to_like, lambda g, ans, x, like: broadcast_to_like(g, x), shape_only(1))
    defvjp(broadcast_to_like, lambda g, ans, x, like: sum_to_like(g, x), shape_only(1))
with answers("lab3", "forward_mode"):
    defjvp(sum_to_like, lambda t, ans, x, like: sum_to_like(t, like), no_tangent)
    defjvp(broadcast_to_like, lambda t, ans, x, like: broadcast_to_like(t, like), no_tangent)
defvjp_zero(zeros_like)
