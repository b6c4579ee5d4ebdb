"""The linear primitives (sums, reshapes, indexing, products) and their adjoints, in pairs.

A linear map ``y = A x`` has the VJP ``x_bar = A^T y_bar`` (L05 slide 23) and the JVP
``y_dot = A x_dot``: its JVP is the map itself, its VJP its adjoint.  So each primitive here comes
with a second primitive, its adjoint, and each of the two is the other's VJP: ``sum`` and
``broadcast_like``, ``take`` and ``untake``, ``getitem`` and ``scatter_add``, ``transpose`` and
``untranspose``.  The adjoints read the shape of a ``like`` argument when they run, which is what
lets the same VJP work on framework nodes whose shapes are known only when a Session runs them.
A matrix product is linear in each factor; its adjoints are bilinear in (g, other factor).
"""
import math

import numpy as np

from mini import backend
from mini.answers import answer, answers
from mini.table import (
    broadcast_to_like, defjvp, defjvp_every_argument, defvjp, defvjp_every_argument, defvjp_zero,
    no_tangent, primitive, shape_only, sum_to_like, sum_to_shape, zeros_like,
)


def _linear_in(prim, argnum):
    """The JVP of ``prim`` for an argument it is linear in: ``prim`` applied to the tangent."""
    @answer("lab3", "forward_mode")
    def jvp(t, ans, *args, **kwargs):
        args = list(args)
        args[argnum] = t
        return prim(*args, **kwargs)
    return jvp


# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------

@primitive
def sum(x, axis=None, keepdims=False):  # noqa: A001 (the numpy name, on purpose)
    """Sum over ``axis`` (an int, a tuple, or None for all)."""
    return backend.ops.sum(x, axis=axis, keepdims=keepdims)


@primitive
def mean(x, axis=None, keepdims=False):
    """Mean over ``axis``: the sum divided by the number of entries summed."""
    return backend.ops.sum(x, axis=axis, keepdims=keepdims) / count(np.shape(x), axis)


@answer("lab3", "shape_vjps")
@primitive
def broadcast_like(g, like, axis=None, keepdims=False):
    """Spread the result of a reduction over ``axis`` back to the shape of the array reduced."""
    if not keepdims and axis is not None:
        g = np.expand_dims(g, axis)
    return np.broadcast_to(g, np.shape(like))


@primitive
def axis_size(x, axis=None):
    """How many entries a reduction over ``axis`` adds up, as a float."""
    return float(count(np.shape(x), axis))


def count(shape, axis):
    if axis is None:
        return math.prod(shape)
    axes = (axis,) if isinstance(axis, int) else axis
    return math.prod(shape[a] for a in axes)


with answers("lab3", "shape_vjps"):
    defvjp(sum, lambda g, ans, x, axis=None, keepdims=False: broadcast_like(g, x, axis, keepdims))
    defvjp(mean, lambda g, ans, x, axis=None, keepdims=False:
           broadcast_like(g, x, axis, keepdims) / axis_size(x, axis))
    defvjp(broadcast_like, lambda g, ans, x, like, axis=None, keepdims=False:
           sum(g, axis=axis, keepdims=keepdims), shape_only(1))
with answers("lab3", "forward_mode"):
    defjvp(sum, _linear_in(sum, 0))
    defjvp(mean, _linear_in(mean, 0))
    defjvp(broadcast_like, _linear_in(broadcast_like, 0), no_tangent)
defvjp_zero(axis_size)


# ---------------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------------

@primitive
def reshape(x, shape):
    return np.reshape(x, shape)


@answer("lab3", "shape_vjps")
@primitive
def reshape_like(g, like):
    return np.reshape(g, np.shape(like))


@primitive
def transpose(x, axes=None):
    """Permute the axes (reverse them when ``axes`` is None); negative axes count from the end."""
    return np.transpose(x, axes)


@answer("lab3", "shape_vjps")
@primitive
def untranspose(g, axes=None):
    """Undo ``transpose(x, axes)``: permute by the inverse permutation, ``argsort(axes)``."""
    if axes is None:
        return np.transpose(g)
    return np.transpose(g, np.argsort([axis % np.ndim(g) for axis in axes]))


with answers("lab3", "shape_vjps"):
    defvjp(reshape, lambda g, ans, x, shape: reshape_like(g, x))
    defvjp(reshape_like, lambda g, ans, x, like: reshape_like(g, x), shape_only(1))
    defvjp(transpose, lambda g, ans, x, axes=None: untranspose(g, axes))
    defvjp(untranspose, lambda g, ans, x, axes=None: transpose(g, axes))
with answers("lab3", "forward_mode"):
    defjvp(reshape, _linear_in(reshape, 0))
    defjvp(reshape_like, _linear_in(reshape_like, 0), no_tangent)
    defjvp(transpose, _linear_in(transpose, 0))
    defjvp(untranspose, _linear_in(untranspose, 0))


# ---------------------------------------------------------------------------------------------
# Indexing
# ---------------------------------------------------------------------------------------------

@primitive
def getitem(x, index):
    """x[index] for any numpy index: ints, slices, integer and boolean arrays (``box[...]``)."""
    return x[index]


@answer("lab3", "shape_vjps")
@primitive
def scatter_add(g, index, like):
    """zeros shaped like ``like`` with ``g`` added at ``index``; repeated indices add up."""
    out = np.zeros(np.shape(like), dtype=np.result_type(g, like))
    np.add.at(out, index, g)
    return out


@primitive
def take(x, indices, axis=None):
    """numpy's ``take``: entries of the flattened ``x`` (``axis=None``), or along ``axis``.

    With ``axis=0`` it picks rows: the embedding lookup (L05 slide 4).
    """
    return np.asarray(x).take(indices, axis=axis)


@answer("lab3", "shape_vjps")
@primitive
def untake(g, indices, like, axis=None):
    """The adjoint of ``take``: add each slice of ``g`` into the slice of ``like`` it came from.

    Slices picked several times get the sum of their gradients.  Every entry of ``g`` lands on
    one entry of the output, so the whole sum is one ``np.bincount`` over those flat positions,
    weighted by ``g``: several times faster than ``np.add.at`` or sorting the indices and summing
    runs with ``np.add.reduceat``, which both add one row at a time (an embedding's gradient).
    """
    g, like = np.asarray(g), np.asarray(like)
    if axis is None:
        return untake.fun(g, indices, like.ravel(), 0).reshape(like.shape)
    shape = like.shape
    axis = axis % len(shape)
    rows, before, after = shape[axis], math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    picked = np.asarray(indices).ravel()
    if picked.size and np.minimum.reduce(picked) < 0:      # a negative index counts from the end
        picked = np.where(picked < 0, picked + rows, picked)
    # g is (before, picked, after) entries; entry (i, j, k) lands on (i, picked[j], k) of the
    # output: row i * rows + picked[j] of the output read as (before * rows, after)
    if before > 1:                              # an embedding's rows (axis 0) have no "before"
        picked = (np.arange(before)[:, None] * rows + picked).ravel()
    positions = (picked[:, None] * after + np.arange(after)).ravel()
    sums = np.bincount(positions, weights=g.ravel(), minlength=like.size)
    return sums.astype(np.promote_types(g.dtype, like.dtype), copy=False).reshape(shape)


with answers("lab3", "shape_vjps"):
    defvjp(getitem, lambda g, ans, x, index: scatter_add(g, index, x))
    defvjp(scatter_add, lambda g, ans, x, index, like: getitem(g, index), None, shape_only(2))
    defvjp(take, lambda g, ans, x, indices, axis=None: untake(g, indices, x, axis),
           shape_only(1))                                # integer ids (a framework feed): no gradient
    defvjp(untake, lambda g, ans, x, indices, like, axis=None: take(g, indices, axis),
           shape_only(1), shape_only(2))
with answers("lab3", "forward_mode"):
    defjvp(getitem, _linear_in(getitem, 0))
    defjvp(scatter_add, _linear_in(scatter_add, 0), None, no_tangent)
    defjvp(take, _linear_in(take, 0), no_tangent)
    defjvp(untake, _linear_in(untake, 0), no_tangent, no_tangent)


# ---------------------------------------------------------------------------------------------
# Joining
# ---------------------------------------------------------------------------------------------

def concatenate(arrays, axis=0):
    """Join a sequence of arrays along ``axis`` (``axis=None``: flatten each first, as numpy does)."""
    if axis is None:
        return concatenate_args(0, *[reshape(a, -1) for a in arrays])
    return concatenate_args(axis, *arrays)


def stack(arrays, axis=0):
    """Join a sequence of equal-shape arrays along a new axis ``axis``."""
    return stack_args(axis, *arrays)


@primitive
def concatenate_args(axis, *arrays):
    return np.concatenate(arrays, axis=axis)


@primitive
def stack_args(axis, *arrays):
    return np.stack(arrays, axis=axis)


@answer("lab3", "shape_vjps")
@primitive
def concatenate_part(g, axis, position, *arrays):
    """The slice of ``g`` that came from ``arrays[position]`` in a concatenation."""
    sizes = [np.shape(a)[axis] for a in arrays]
    start = int(np.sum(sizes[:position]))
    return np.take(g, range(start, start + sizes[position]), axis=axis)


@answer("lab3", "shape_vjps")
def _in_place_of(position, t, arrays):
    """``arrays`` with the one at ``position`` replaced by ``t`` and every other by zeros."""
    return [t if i == position else zeros_like(a) for i, a in enumerate(arrays)]


@answer("lab3", "shape_vjps")
def _concatenate_part_vjp(argnum, g, ans, x, axis, position, *arrays):
    if argnum == 0:
        return concatenate_args(axis, *_in_place_of(position, g, arrays))
    return zeros_like(arrays[argnum - 3])


@answer("lab3", "forward_mode")
def _concatenate_part_jvp(argnum, t, ans, x, axis, position, *arrays):
    return concatenate_part(t, axis, position, *arrays) if argnum == 0 else zeros_like(ans)


with answers("lab3", "shape_vjps"):
    defvjp_every_argument(concatenate_args, lambda argnum, g, ans, axis, *arrays:
                          concatenate_part(g, axis, argnum - 1, *arrays))
    defvjp_every_argument(stack_args, lambda argnum, g, ans, axis, *arrays:
                          take(g, argnum - 1, axis))
    defvjp_every_argument(concatenate_part, _concatenate_part_vjp)
with answers("lab3", "forward_mode"):
    defjvp_every_argument(concatenate_args, lambda argnum, t, ans, axis, *arrays:
                          concatenate_args(axis, *_in_place_of(argnum - 1, t, arrays)))
    defjvp_every_argument(stack_args, lambda argnum, t, ans, axis, *arrays:
                          stack_args(axis, *_in_place_of(argnum - 1, t, arrays)))
    defjvp_every_argument(concatenate_part, _concatenate_part_jvp)


# ---------------------------------------------------------------------------------------------
# Products: matmul (numpy's @) and dot (numpy's dot), each linear in either factor
# ---------------------------------------------------------------------------------------------

@primitive
def matmul(a, b):
    """Matrix product with numpy's rules: (..., m, k) @ (..., k, n) -> (..., m, n); 1-D allowed.

    A stack of rows times one matrix (a layer applied to every token) is one 2-D product.  The
    products and their adjoints run every step of a model: they read shapes from the arrays
    themselves, not through numpy's functions (``np.shape``, ``np.reshape``), each a Python call.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim > 2 and b.ndim == 2:
        return backend.ops.matmul(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + b.shape[1:])
    return backend.ops.matmul(a, b)


@answer("lab3", "shape_vjps")
@primitive
def matmul_adjoint_a(g, a, b):
    """The gradient of ``a @ b`` with respect to ``a``: g @ b^T, summed over broadcast batches."""
    g, a, b = np.asarray(g), np.asarray(a), np.asarray(b)
    if a.ndim >= 2 and b.ndim == 2:               # a layer: one matrix product over all rows
        return (g.reshape(-1, b.shape[1]) @ b.T).reshape(a.shape)
    a2, b2, g2 = _as_matrices(g, a, b)
    return sum_to_shape(np.matmul(g2, np.swapaxes(b2, -1, -2)), a2.shape).reshape(a.shape)


@answer("lab3", "shape_vjps")
@primitive
def matmul_adjoint_b(g, a, b):
    """The gradient of ``a @ b`` with respect to ``b``: a^T @ g, summed over broadcast batches."""
    g, a, b = np.asarray(g), np.asarray(a), np.asarray(b)
    if a.ndim >= 2 and b.ndim == 2:               # rows of all batches at once: (N, k)^T (N, n)
        return a.reshape(-1, b.shape[0]).T @ g.reshape(-1, b.shape[1])
    a2, b2, g2 = _as_matrices(g, a, b)
    return sum_to_shape(np.matmul(np.swapaxes(a2, -1, -2), g2), b2.shape).reshape(b.shape)


@primitive
def affine(x, W, b):
    """A layer's ``x @ W + b`` as one primitive: ``x`` (..., k), ``W`` (k, n), ``b`` (n,) give
    (..., n).

    ``matmul`` then ``add`` compute the same, as two nodes; one node saves, per layer and per
    step, a trace record and the reverse pass's check of which shapes were broadcast.  The
    product is ``matmul``'s own, and so are the VJPs for ``x`` and ``W`` (its adjoints); for ``b``
    the output's gradient is summed over the rows.
    """
    return backend.ops.add(matmul.fun(x, W), b)


def _as_matrices(g, a, b):
    """View 1-D operands of a matmul as 1 x k and k x 1 matrices, and g to match."""
    a2 = np.reshape(a, (1, -1)) if np.ndim(a) == 1 else np.asarray(a)
    b2 = np.reshape(b, (-1, 1)) if np.ndim(b) == 1 else np.asarray(b)
    out_shape = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]) + (a2.shape[-2], b2.shape[-1])
    return a2, b2, np.reshape(g, out_shape)


@primitive
def dot(a, b):
    """numpy's ``dot``: sums over the last axis of ``a`` and the second-to-last of ``b``.

    (2, 2, 3) . (2, 3, 4) is (2, 2, 2, 4), where ``matmul`` would give (2, 2, 4); a scalar
    operand multiplies.
    """
    return np.dot(a, b)


@answer("lab3", "shape_vjps")
@primitive
def dot_adjoint_a(g, a, b):
    """The gradient of ``dot(a, b)`` with respect to ``a``: g contracted with b's free axes."""
    a_ndim, b_ndim = np.ndim(a), np.ndim(b)
    if b_ndim <= 1 or a_ndim == 0:
        out = np.tensordot(g, b, max(0, b_ndim - (a_ndim != 0)))
    else:
        out = np.tensordot(g, np.swapaxes(b, -1, -2), b_ndim - 1)
    return np.asarray(out)


@answer("lab3", "shape_vjps")
@primitive
def dot_adjoint_b(g, a, b):
    """The gradient of ``dot(a, b)`` with respect to ``b``: g contracted with a's free axes."""
    a_ndim, b_ndim = np.ndim(a), np.ndim(b)
    if a_ndim <= 1 or b_ndim == 0:
        out = np.tensordot(g, a, max(0, a_ndim - (b_ndim != 0)))
    else:
        out = np.tensordot(g, a, [range(-a_ndim - b_ndim + 2, -b_ndim + 1), range(a_ndim - 1)])
    return np.asarray(np.swapaxes(out, -1, -2) if b_ndim > 1 and a_ndim != 0 else out)


def _products(prim, adjoint_a, adjoint_b):
    """Register a product's derivatives.  ``<h, adjoint_a(g, a, b)> = <g, prim(h, b)>``, so the
    adjoints' own VJPs are the product and the other adjoint, and mini differentiates as often
    as asked."""
    with answers("lab3", "shape_vjps"):
        defvjp(prim, lambda g, ans, a, b: adjoint_a(g, a, b),
               lambda g, ans, a, b: adjoint_b(g, a, b))
        defvjp(adjoint_a, lambda h, ans, g, a, b: prim(h, b), shape_only(1),
               lambda h, ans, g, a, b: adjoint_b(g, h, b))
        defvjp(adjoint_b, lambda h, ans, g, a, b: prim(a, h),
               lambda h, ans, g, a, b: adjoint_a(g, a, h), shape_only(2))
    with answers("lab3", "forward_mode"):
        defjvp(prim, _linear_in(prim, 0), _linear_in(prim, 1))
        defjvp(adjoint_a, _linear_in(adjoint_a, 0), no_tangent, _linear_in(adjoint_a, 2))
        defjvp(adjoint_b, _linear_in(adjoint_b, 0), _linear_in(adjoint_b, 1), no_tangent)


_products(matmul, matmul_adjoint_a, matmul_adjoint_b)
with answers("lab3", "shape_vjps"):
    defvjp(affine, lambda g, ans, x, W, b: matmul_adjoint_a(g, x, W),
           lambda g, ans, x, W, b: matmul_adjoint_b(g, x, W),
           lambda g, ans, x, W, b: sum_to_like(g, b))
with answers("lab3", "forward_mode"):
    defjvp(affine, lambda t, ans, x, W, b: matmul(t, W), lambda t, ans, x, W, b: matmul(x, t),
           lambda t, ans, x, W, b: broadcast_to_like(t, ans))
_products(dot, dot_adjoint_a, dot_adjoint_b)
