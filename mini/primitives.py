"""The primitive operations and their vector-Jacobian products, in ONE table.

A primitive is a function mini knows how to differentiate.  Its derivative is stored as one VJP per
argument (L05 slides 22-23): given ``g``, the gradient of the final output with respect to the
primitive's output ``ans``, the VJP returns the gradient with respect to that argument,
``x_bar = J^T g``.  For ``y = W x`` that is ``x_bar = W^T y_bar``.

Every VJP is written with mini's own primitives.  In eager mode (``mini.autodiff``) the arguments are
numpy arrays and the VJP simply computes; in the static framework (``mini.framework``) they are
graph nodes and the same VJP builds the backward graph.  No derivative is written twice.

Adding a primitive is two lines, exactly as mini does it for its own::

    sin = mini.primitive(np.sin)
    mini.defvjp(sin, lambda g, ans, x: g * mini.cos(x))
"""
import functools

import numpy as np

from mini import backend


class Primitive:
    """A function with an entry in :data:`vjp_table`.

    Called on plain numbers or arrays it just computes.  Called with a traced value among its
    positional arguments (an eager ``Box`` or a framework ``Tensor``), it hands itself to that
    value's ``apply``, which records a graph node.
    """

    def __init__(self, fun, name=None):
        self.fun = fun
        self.__name__ = name or fun.__name__
        self.__doc__ = fun.__doc__

    def __call__(self, *args, **kwargs):
        for arg in args:
            if isinstance(arg, Traced):
                return arg.apply(self, args, kwargs)
        return self.fun(*args, **kwargs)

    def __repr__(self):
        return f"<primitive {self.__name__}>"


def primitive(fun):
    """Make ``fun`` a primitive; register its derivative with :func:`defvjp`."""
    return Primitive(fun)


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

vjp_table = {}
"""primitive -> {argument position: vjp(g, ans, *args, **kwargs)}."""


def defvjp(prim, *vjps, broadcasting=False):
    """Register the VJPs of ``prim``, one per positional argument (``None`` for "not differentiable").

    Each ``vjp(g, ans, *args, **kwargs)`` returns the gradient for its argument.  With
    ``broadcasting=True`` (elementwise binary operations) the result is summed back to that
    argument's shape, so a VJP never has to think about numpy broadcasting: it is handled here, once.
    """
    if broadcasting:
        vjps = [_summed_to_argument(vjp, argnum) if vjp else None for argnum, vjp in enumerate(vjps)]
    vjp_table[prim] = {argnum: vjp for argnum, vjp in enumerate(vjps) if vjp is not None}


def defvjp_every_argument(prim, vjp):
    """Register one ``vjp(argnum, g, ans, *args, **kwargs)`` serving every argument position."""
    vjp_table[prim] = _EveryArgument(vjp)


def defvjp_zero(prim):
    """Register a primitive whose output is piecewise constant: every argument gets zero gradient."""
    defvjp_every_argument(prim, lambda argnum, g, ans, *args, **kwargs: zeros_like(args[argnum]))


def vjp_of(prim, argnum):
    """The VJP of ``prim`` for argument ``argnum``; an error naming both if there is none."""
    vjps = vjp_table.get(prim)
    if vjps is None:
        raise NotImplementedError(
            f"primitive '{getattr(prim, '__name__', prim)}' has no VJPs in mini's table; "
            "register them with mini.defvjp before differentiating through it")
    try:
        return vjps[argnum]
    except KeyError:
        raise NotImplementedError(
            f"primitive '{prim.__name__}' has no VJP for argument {argnum}: mini cannot "
            f"differentiate with respect to that argument") from None


class _EveryArgument:
    def __init__(self, vjp):
        self.vjp = vjp

    def __getitem__(self, argnum):
        return functools.partial(self.vjp, argnum)


def _summed_to_argument(vjp, argnum):
    def summed(g, ans, *args, **kwargs):
        return sum_to_like(vjp(g, ans, *args, **kwargs), args[argnum])
    return summed


# ---------------------------------------------------------------------------------------------
# Arithmetic (routed through the backend)
# ---------------------------------------------------------------------------------------------

@primitive
def add(x, y):
    """x + y, broadcasting."""
    return backend.ops.add(x, y)


@primitive
def subtract(x, y):
    """x - y, broadcasting."""
    return backend.ops.subtract(x, y)


@primitive
def multiply(x, y):
    """x * y elementwise, broadcasting."""
    return backend.ops.multiply(x, y)


@primitive
def divide(x, y):
    """x / y elementwise, broadcasting."""
    return backend.ops.divide(x, y)


@primitive
def negative(x):
    """-x."""
    return np.negative(x)


@primitive
def power(x, y):
    """x ** y elementwise; the gradient with respect to y needs x > 0."""
    return np.power(x, y)


@primitive
def exp(x):
    return backend.ops.exp(x)


@primitive
def log(x):
    """Natural logarithm."""
    return backend.ops.log(x)


@primitive
def tanh(x):
    return backend.ops.tanh(x)


@primitive
def sigmoid(x):
    """1 / (1 + e^-x), computed as (tanh(x/2) + 1) / 2 so that it never overflows."""
    return 0.5 * (backend.ops.tanh(0.5 * x) + 1)


@primitive
def relu(x):
    """max(x, 0) elementwise."""
    return backend.ops.maximum(x, 0)


@primitive
def maximum(x, y):
    """Elementwise maximum, broadcasting."""
    return backend.ops.maximum(x, y)


@primitive
def matmul(a, b):
    """Matrix product with numpy's rules: (..., m, k) @ (..., k, n) -> (..., m, n); 1-D allowed."""
    return backend.ops.matmul(a, b)


dot = matmul


defvjp(add, lambda g, ans, x, y: g, lambda g, ans, x, y: g, broadcasting=True)
defvjp(subtract, lambda g, ans, x, y: g, lambda g, ans, x, y: -g, broadcasting=True)
defvjp(multiply, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x, broadcasting=True)
defvjp(divide, lambda g, ans, x, y: g / y, lambda g, ans, x, y: -g * ans / y, broadcasting=True)
defvjp(negative, lambda g, ans, x: -g)
defvjp(power,
       lambda g, ans, x, y: g * y * x ** (y - 1),
       lambda g, ans, x, y: g * ans * log(x), broadcasting=True)
defvjp(exp, lambda g, ans, x: g * ans)
defvjp(log, lambda g, ans, x: g / x)
defvjp(tanh, lambda g, ans, x: g * (1 - ans * ans))
defvjp(sigmoid, lambda g, ans, x: g * ans * (1 - ans))
defvjp(relu, lambda g, ans, x: g * greater(x, 0))
defvjp(maximum,  # ties share the gradient equally, as autograd does
       lambda g, ans, x, y: g * (greater(x, y) + 0.5 * equal(x, y)),
       lambda g, ans, x, y: g * (greater(y, x) + 0.5 * equal(x, y)), broadcasting=True)
defvjp(matmul,
       lambda g, ans, a, b: matmul_adjoint_a(g, a, b),
       lambda g, ans, a, b: matmul_adjoint_b(g, a, b))


# ---------------------------------------------------------------------------------------------
# Reductions and shapes
# ---------------------------------------------------------------------------------------------

@primitive
def sum(x, axis=None, keepdims=False):  # noqa: A001 (the numpy name, on purpose)
    """Sum over ``axis`` (an int, a tuple, or None for all)."""
    return backend.ops.sum(x, axis=axis, keepdims=keepdims)


@primitive
def mean(x, axis=None, keepdims=False):
    """Mean over ``axis``: the sum divided by the number of entries summed."""
    return backend.ops.sum(x, axis=axis, keepdims=keepdims) / _count(np.shape(x), axis)


@primitive
def reshape(x, shape):
    return np.reshape(x, shape)


@primitive
def transpose(x, axes=None):
    """Permute the axes (reverse them when ``axes`` is None)."""
    return np.transpose(x, axes)


@primitive
def getitem(x, index):
    """x[index] for any numpy index: ints, slices, arrays (the method behind ``box[...]``)."""
    return x[index]


@primitive
def take(x, indices, axis=0):
    """Rows of ``x`` picked by an integer array: the embedding lookup (L05 slide 4)."""
    return np.take(x, indices, axis=axis)


def concatenate(arrays, axis=0):
    """Join a sequence of arrays along ``axis``."""
    return concatenate_args(axis, *arrays)


@primitive
def concatenate_args(axis, *arrays):
    return np.concatenate(arrays, axis=axis)


defvjp(sum, lambda g, ans, x, axis=None, keepdims=False: broadcast_like(g, x, axis, keepdims))
defvjp(mean, lambda g, ans, x, axis=None, keepdims=False:
       broadcast_like(g, x, axis, keepdims) / axis_size(x, axis))
defvjp(reshape, lambda g, ans, x, shape: reshape_like(g, x))
defvjp(transpose, lambda g, ans, x, axes=None:
       transpose(g, None if axes is None else tuple(np.argsort(axes))))
defvjp(getitem, lambda g, ans, x, index: scatter_add(g, index, x))
defvjp(take, lambda g, ans, x, indices, axis=0: untake(g, indices, x, axis),
       lambda g, ans, x, indices, axis=0: zeros_like(indices))   # integer ids: a framework feed
defvjp_every_argument(concatenate_args, lambda argnum, g, ans, axis, *arrays:
                      concatenate_part(g, axis, argnum - 1, *arrays))


# ---------------------------------------------------------------------------------------------
# Softmax family, numerically stable (the max is subtracted before exponentiating)
# ---------------------------------------------------------------------------------------------

@primitive
def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) without overflow: m + log(sum(exp(x - m))) with m = max(x)."""
    m = np.max(x, axis=axis, keepdims=True)
    out = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


@primitive
def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along ``axis``."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@primitive
def log_softmax(x, axis=-1):
    """x - logsumexp(x) along ``axis``."""
    return x - logsumexp.fun(x, axis=axis, keepdims=True)


defvjp(logsumexp, lambda g, ans, x, axis=None, keepdims=False:
       broadcast_like(g, x, axis, keepdims) * exp(x - broadcast_like(ans, x, axis, keepdims)))
defvjp(softmax, lambda g, ans, x, axis=-1:
       ans * (g - sum(g * ans, axis=axis, keepdims=True)))
defvjp(log_softmax, lambda g, ans, x, axis=-1:
       g - exp(ans) * sum(g, axis=axis, keepdims=True))


# ---------------------------------------------------------------------------------------------
# Piecewise-constant helpers (zero gradient everywhere they have one)
# ---------------------------------------------------------------------------------------------

@primitive
def greater(x, y):
    """1.0 where x > y, else 0.0 (in x's float type): a mask to multiply gradients by."""
    return np.greater(x, y).astype(np.result_type(x, y, 1.0))


@primitive
def equal(x, y):
    """1.0 where x == y, else 0.0."""
    return np.equal(x, y).astype(np.result_type(x, y, 1.0))


@primitive
def zeros_like(x):
    return np.zeros_like(x, dtype=np.result_type(x, 1.0))


@primitive
def ones_like(x):
    return np.ones_like(x, dtype=np.result_type(x, 1.0))


@primitive
def one_hot(labels, num_classes):
    """Rows of the identity: one_hot([2, 0], 3) = [[0, 0, 1], [1, 0, 0]]."""
    return np.eye(num_classes)[np.asarray(labels)]


@primitive
def axis_size(x, axis=None):
    """How many entries a reduction over ``axis`` adds up, as a float."""
    return float(_count(np.shape(x), axis))


for _prim in (greater, equal, zeros_like, ones_like, one_hot, axis_size):
    defvjp_zero(_prim)


# ---------------------------------------------------------------------------------------------
# Shape-aware linear maps used by the VJPs above.  They read the shape of a "like" argument when
# they run, which is what lets the same VJP work on framework nodes whose shapes are known only
# when a Session runs them.  Each is linear in g; where registered, its VJP is its adjoint (the
# matmul adjoints have none: mini differentiates once, not twice).
# ---------------------------------------------------------------------------------------------

@primitive
def sum_to_like(g, like):
    """Undo broadcasting: sum ``g`` down to the shape of ``like``."""
    shape = np.shape(like)
    if np.shape(g) == shape:
        return g
    return _sum_to_shape(g, shape)


@primitive
def broadcast_to_like(g, like):
    return np.broadcast_to(g, np.shape(like))


@primitive
def broadcast_like(g, like, axis=None, keepdims=False):
    """Spread the result of a reduction over ``axis`` back to the shape of the array reduced."""
    shape = np.shape(like)
    if not keepdims and axis is not None:
        g = np.expand_dims(g, axis)
    return np.broadcast_to(g, shape)


@primitive
def reshape_like(g, like):
    return np.reshape(g, np.shape(like))


@primitive
def scatter_add(g, index, like):
    """zeros shaped like ``like`` with ``g`` added at ``index``; repeated indices add up."""
    out = np.zeros(np.shape(like), dtype=np.result_type(g, like))
    np.add.at(out, index, g)
    return out


@primitive
def untake(g, indices, like, axis=0):
    """The adjoint of ``take``: add each row of ``g`` into the row of ``like`` it was taken from.

    Rows picked several times get the sum of their gradients.  Instead of ``np.add.at`` (slow, one
    row at a time) the indices are sorted and each run of equal indices summed with
    ``np.add.reduceat``, several times faster for an embedding's gradient.
    """
    out = np.zeros(np.shape(like), dtype=np.result_type(g, like))
    indices = np.asarray(indices)
    rows = out.shape[axis]
    flat = np.where(indices < 0, indices + rows, indices).ravel()
    picked = range(axis, axis + indices.ndim)
    flat_g = np.moveaxis(g, picked, range(indices.ndim)).reshape((flat.size,) + out.shape[:axis]
                                                                  + out.shape[axis + 1:])
    if flat.size:
        order = np.argsort(flat, kind="stable")
        sorted_rows = flat[order]
        run_starts = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1]])
        np.moveaxis(out, axis, 0)[sorted_rows[run_starts]] = np.add.reduceat(
            flat_g[order], run_starts, axis=0)
    return out


@primitive
def concatenate_part(g, axis, position, *arrays):
    """The slice of ``g`` that came from ``arrays[position]`` in a concatenation."""
    sizes = [np.shape(a)[axis] for a in arrays]
    start = int(np.sum(sizes[:position]))
    return np.take(g, range(start, start + sizes[position]), axis=axis)


@primitive
def matmul_adjoint_a(g, a, b):
    """The gradient of ``a @ b`` with respect to ``a``: g @ b^T, summed over broadcast batches."""
    if np.ndim(a) >= 2 and np.ndim(b) == 2:       # a layer: one matrix product over all rows
        return np.reshape(np.reshape(g, (-1, np.shape(b)[1])) @ np.transpose(b), np.shape(a))
    a2, b2, g2 = _as_matrices(g, a, b)
    return _sum_to_shape(np.matmul(g2, np.swapaxes(b2, -1, -2)), a2.shape).reshape(np.shape(a))


@primitive
def matmul_adjoint_b(g, a, b):
    """The gradient of ``a @ b`` with respect to ``b``: a^T @ g, summed over broadcast batches."""
    if np.ndim(a) >= 2 and np.ndim(b) == 2:       # rows of all batches at once: (N, k)^T (N, n)
        return np.transpose(np.reshape(a, (-1, np.shape(b)[0]))) @ np.reshape(g, (-1, np.shape(b)[1]))
    a2, b2, g2 = _as_matrices(g, a, b)
    return _sum_to_shape(np.matmul(np.swapaxes(a2, -1, -2), g2), b2.shape).reshape(np.shape(b))


defvjp(sum_to_like, lambda g, ans, x, like: broadcast_to_like(g, x))
defvjp(broadcast_to_like, lambda g, ans, x, like: sum_to_like(g, x))
defvjp(broadcast_like, lambda g, ans, x, like, axis=None, keepdims=False:
       sum(g, axis=axis, keepdims=keepdims))
defvjp(reshape_like, lambda g, ans, x, like: reshape_like(g, x))
defvjp(scatter_add, lambda g, ans, x, index, like: getitem(g, index))
defvjp(untake, lambda g, ans, x, indices, like, axis=0: take(g, indices, axis))


def _sum_to_shape(g, shape):
    g = np.sum(g, axis=tuple(range(np.ndim(g) - len(shape)))) if np.ndim(g) > len(shape) else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and np.shape(g)[i] != 1)
    return np.sum(g, axis=axes, keepdims=True) if axes else g


def _as_matrices(g, a, b):
    """View 1-D operands of a matmul as 1 x k and k x 1 matrices, and g to match."""
    a2 = np.reshape(a, (1, -1)) if np.ndim(a) == 1 else np.asarray(a)
    b2 = np.reshape(b, (-1, 1)) if np.ndim(b) == 1 else np.asarray(b)
    out_shape = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]) + (a2.shape[-2], b2.shape[-1])
    return a2, b2, np.reshape(g, out_shape)


def _count(shape, axis):
    if axis is None:
        return int(np.prod(shape))
    axes = (axis,) if isinstance(axis, int) else axis
    return int(np.prod([shape[a] for a in axes]))


# ---------------------------------------------------------------------------------------------
# Traced values: operators and numpy functions applied to them become primitive calls
# ---------------------------------------------------------------------------------------------

UFUNCS = {np.add: add, np.subtract: subtract, np.multiply: multiply, np.divide: divide,
          np.negative: negative, np.power: power, np.exp: exp, np.log: log, np.tanh: tanh,
          np.maximum: maximum, np.matmul: matmul, np.greater: greater, np.equal: equal}

FUNCTIONS = {np.sum: sum, np.mean: mean, np.reshape: reshape, np.transpose: transpose,
             np.take: take, np.concatenate: concatenate, np.dot: matmul,
             np.zeros_like: zeros_like, np.ones_like: ones_like}


class Traced:
    """What eager ``Box`` values and framework ``Tensor`` nodes share: arithmetic operators and
    numpy functions applied to them call mini's primitives, so ordinary numpy-style code builds a
    graph.  Subclasses define ``apply(primitive, args, kwargs)``, which records the node.
    """

    __slots__ = ()
    __array_priority__ = 100.0

    def __add__(self, other): return add(self, other)
    def __radd__(self, other): return add(other, self)
    def __sub__(self, other): return subtract(self, other)
    def __rsub__(self, other): return subtract(other, self)
    def __mul__(self, other): return multiply(self, other)
    def __rmul__(self, other): return multiply(other, self)
    def __truediv__(self, other): return divide(self, other)
    def __rtruediv__(self, other): return divide(other, self)
    def __pow__(self, other): return power(self, other)
    def __rpow__(self, other): return power(other, self)
    def __matmul__(self, other): return matmul(self, other)
    def __rmatmul__(self, other): return matmul(other, self)
    def __neg__(self): return negative(self)
    def __gt__(self, other): return greater(self, other)
    def __lt__(self, other): return greater(other, self)
    def __getitem__(self, index): return getitem(self, index)

    @property
    def T(self):
        return transpose(self)

    def sum(self, axis=None, keepdims=False):
        return sum(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return mean(self, axis=axis, keepdims=keepdims)

    def reshape(self, *shape):
        return reshape(self, shape[0] if len(shape) == 1 else shape)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and ufunc in UFUNCS and not kwargs:
            return UFUNCS[ufunc](*inputs)
        raise TypeError(f"mini cannot trace numpy.{ufunc.__name__}"
                        f"{'' if method == '__call__' else '.' + method}: use a mini primitive, "
                        "or add one with mini.primitive and mini.defvjp")

    def __array_function__(self, func, types, args, kwargs):
        if func in FUNCTIONS:
            return FUNCTIONS[func](*args, **kwargs)
        raise TypeError(f"mini cannot trace numpy.{func.__name__}: use a mini primitive, "
                        "or add one with mini.primitive and mini.defvjp")
