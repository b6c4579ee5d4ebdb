"""mini's primitive operations and their derivatives: the elementwise and softmax ones here, the
linear ones (sums, shapes, indexing, products) in ``mini.linear``, the table in ``mini.table``.

Every derivative is written with mini's own primitives.  In eager mode (``mini.autodiff``) the
arguments are numpy arrays and the VJP simply computes; in the static framework
(``mini.framework``) they are graph nodes and the same VJP builds the backward graph; under a
second ``mini.grad`` they are traced, which gives derivatives of derivatives.  No derivative is
written twice.

Adding a primitive is one line for the function and one per derivative, exactly as mini does it
for its own.  mini has no sine or cosine, so the pair makes the example; each one's derivative is
written with the other primitive, so derivatives of derivatives work too::

    sin, cos = mini.primitive(np.sin), mini.primitive(np.cos)
    mini.defvjp(sin, lambda g, ans, x: g * cos(x))          # reverse mode: J^T g
    mini.defjvp(sin, lambda t, ans, x: t * cos(x))          # forward mode: J t
    mini.defvjp(cos, lambda g, ans, x: -g * sin(x))
    mini.defjvp(cos, lambda t, ans, x: -t * sin(x))
"""
import numpy as np

from mini import backend
from mini.answers import answer, answers
from mini.linear import (  # noqa: F401 (mini's primitives, all importable from here)
    affine, axis_size, broadcast_like, concatenate, concatenate_args, concatenate_part, dot,
    dot_adjoint_a, dot_adjoint_b, getitem, matmul, matmul_adjoint_a, matmul_adjoint_b, mean,
    reshape, reshape_like, scatter_add, stack, stack_args, sum, take, transpose, untake,
    untranspose,
)
from mini.table import (  # noqa: F401
    Primitive, Traced, broadcast_to_like, defjvp, defjvp_every_argument, defvjp,
    defvjp_every_argument, defvjp_zero, jvp_of, jvp_table, no_tangent, primitive, shape_only,
    sum_to_like, vjp_of, vjp_table, zeros_like,
)


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
    """x ** y elementwise; the gradient with respect to y needs x > 0 (or x = 0, where it is 0)."""
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
def sqrt(x):
    """Square root (what numpy's ``std`` takes of the variance)."""
    return np.sqrt(x)


@primitive
def conjugate(x):
    """Complex conjugate: a real number's is itself.  numpy's ``var`` of an object array asks
    every entry for its conjugate."""
    return np.conjugate(x)


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
def where(condition, x, y):
    """``x`` where ``condition`` holds, else ``y`` (numpy's three-argument ``where``)."""
    return np.where(condition, x, y)


@answer("lab3", "elementwise_vjps")
def _power_vjp_x(g, ans, x, y):
    """y x^(y-1); at y = 0 the derivative is 0 even at x = 0, so x^(y-1) is never 0^-1 there."""
    return g * y * x ** where(y, y - 1, 1.0)


@answer("lab3", "elementwise_vjps")
def _power_vjp_y(g, ans, x, y):
    """x^y log(x); where x = 0 (and so x^y = 0 for y > 0) the product is 0, not 0 * -inf."""
    return g * ans * log(where(x, x, 1.0))


@answer("lab3", "elementwise_vjps")
def _ties_shared(x, y):
    """d max(x, y)/dx: 1 where x wins, 0.5 at a tie (as autograd), 0 where y wins."""
    return greater(x, y) + 0.5 * equal(x, y)


with answers("lab3", "elementwise_vjps"):
    defvjp(add, lambda g, ans, x, y: g, lambda g, ans, x, y: g, broadcasting=True)
    defvjp(subtract, lambda g, ans, x, y: g, lambda g, ans, x, y: -g, broadcasting=True)
    defvjp(multiply, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x, broadcasting=True)
    defvjp(divide, lambda g, ans, x, y: g / y, lambda g, ans, x, y: -g * ans / y, broadcasting=True)
    defvjp(negative, lambda g, ans, x: -g)
    defvjp(power, _power_vjp_x, _power_vjp_y, broadcasting=True)
    defvjp(exp, lambda g, ans, x: g * ans)
    defvjp(log, lambda g, ans, x: g / x)
    defvjp(tanh, lambda g, ans, x: g * (1 - ans * ans))
    defvjp(sqrt, lambda g, ans, x: g / (2 * ans))
    defvjp(conjugate, lambda g, ans, x: conjugate(g))
    defvjp(sigmoid, lambda g, ans, x: g * ans * (1 - ans))
    defvjp(relu, lambda g, ans, x: g * (x > 0))
    defvjp(maximum, lambda g, ans, x, y: g * _ties_shared(x, y),
           lambda g, ans, x, y: g * _ties_shared(y, x), broadcasting=True)
    defvjp(where, shape_only(0), lambda g, ans, c, x, y: where(c, g, 0.0),
           lambda g, ans, c, x, y: where(c, 0.0, g), broadcasting=True)
with answers("lab3", "forward_mode"):
    defjvp(add, lambda t, ans, x, y: t, lambda t, ans, x, y: t, broadcasting=True)
    defjvp(subtract, lambda t, ans, x, y: t, lambda t, ans, x, y: -t, broadcasting=True)
    defjvp(multiply, lambda t, ans, x, y: t * y, lambda t, ans, x, y: x * t, broadcasting=True)
    defjvp(divide, lambda t, ans, x, y: t / y, lambda t, ans, x, y: -t * ans / y, broadcasting=True)
    defjvp(negative, lambda t, ans, x: -t)
    defjvp(power, _power_vjp_x, _power_vjp_y, broadcasting=True)   # elementwise: J is diagonal
    defjvp(exp, lambda t, ans, x: t * ans)
    defjvp(log, lambda t, ans, x: t / x)
    defjvp(tanh, lambda t, ans, x: t * (1 - ans * ans))
    defjvp(sqrt, lambda t, ans, x: t / (2 * ans))
    defjvp(conjugate, lambda t, ans, x: conjugate(t))
    defjvp(sigmoid, lambda t, ans, x: t * ans * (1 - ans))
    defjvp(relu, lambda t, ans, x: t * greater(x, 0))
    defjvp(maximum, lambda t, ans, x, y: t * _ties_shared(x, y),
           lambda t, ans, x, y: t * _ties_shared(y, x), broadcasting=True)
    defjvp(where, no_tangent, lambda t, ans, c, x, y: where(c, t, 0.0),
           lambda t, ans, c, x, y: where(c, 0.0, t), broadcasting=True)


@primitive
def std(x, axis=None, ddof=0, keepdims=False):
    """numpy's standard deviation (what ``np.std`` of a traced value computes).  A primitive of
    its own rather than ``sqrt(var)``: where the entries are all equal, sqrt's derivative at 0
    times var's 0 would be nan, and the derivative is 0 along every direction that keeps them
    equal (a single entry, an axis of length 1)."""
    return np.std(x, axis=axis, ddof=ddof, keepdims=keepdims)


@answer("lab3", "shape_vjps")
def _std_per_entry(ans, x, axis, ddof, keepdims):
    """d std / d x = (x - mean) / ((n - ddof) std), taken as 0 where std is 0."""
    spread = x - mean(x, axis=axis, keepdims=True)
    spread_over = broadcast_like(where(ans, ans, 1.0), x, axis, keepdims)
    return spread / (spread_over * (axis_size(x, axis) - ddof))


with answers("lab3", "shape_vjps"):
    defvjp(std, lambda g, ans, x, axis=None, ddof=0, keepdims=False:
           broadcast_like(g, x, axis, keepdims) * _std_per_entry(ans, x, axis, ddof, keepdims))
with answers("lab3", "forward_mode"):
    defjvp(std, lambda t, ans, x, axis=None, ddof=0, keepdims=False:
           sum(t * _std_per_entry(ans, x, axis, ddof, keepdims), axis=axis, keepdims=keepdims))


# ---------------------------------------------------------------------------------------------
# Softmax family, numerically stable (the max is subtracted before exponentiating)
# ---------------------------------------------------------------------------------------------

@answer("lab1", "softmax")
@primitive
def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) without overflow: m + log(sum(exp(x - m))) with m = max(x).

    The reductions are numpy's ufunc methods themselves (what ``np.max`` and ``np.sum`` call):
    the cross-entropy of every training step runs through here.
    """
    m = np.maximum.reduce(x, axis=axis, keepdims=True)
    out = m + np.log(np.add.reduce(np.exp(x - m), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


@answer("lab1", "softmax")
@primitive
def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along ``axis``."""
    e = np.exp(x - np.maximum.reduce(x, axis=axis, keepdims=True))
    return e / np.add.reduce(e, axis=axis, keepdims=True)


@answer("lab1", "softmax")
@primitive
def log_softmax(x, axis=-1):
    """x - logsumexp(x) along ``axis``."""
    return x - logsumexp.fun(x, axis=axis, keepdims=True)


@answer("lab3", "log_softmax_vjp")
def _softmax_of(ans, x, axis, keepdims):
    """exp(x - logsumexp(x)), from logsumexp's output ``ans``."""
    return exp(x - broadcast_like(ans, x, axis, keepdims))


with answers("lab3", "log_softmax_vjp"):
    defvjp(logsumexp, lambda g, ans, x, axis=None, keepdims=False:
           broadcast_like(g, x, axis, keepdims) * _softmax_of(ans, x, axis, keepdims))
    defvjp(softmax, lambda g, ans, x, axis=-1: ans * (g - sum(g * ans, axis=axis, keepdims=True)))
    defvjp(log_softmax, lambda g, ans, x, axis=-1: g - exp(ans) * sum(g, axis=axis, keepdims=True))
with answers("lab3", "forward_mode"):
    defjvp(logsumexp, lambda t, ans, x, axis=None, keepdims=False:
           sum(t * _softmax_of(ans, x, axis, keepdims), axis=axis, keepdims=keepdims))
    defjvp(softmax, lambda t, ans, x, axis=-1: ans * (t - sum(t * ans, axis=axis, keepdims=True)))
    defjvp(log_softmax, lambda t, ans, x, axis=-1: t - sum(t * exp(ans), axis=axis, keepdims=True))


# ---------------------------------------------------------------------------------------------
# Piecewise constant: comparisons and constants.  Zero derivative wherever there is one, so a
# traced value passes through them untraced and they return plain (boolean) arrays.
# ---------------------------------------------------------------------------------------------

@primitive
def greater(x, y):
    """x > y elementwise: a boolean array, a mask to multiply gradients by."""
    return np.greater(x, y)


@primitive
def greater_equal(x, y):
    return np.greater_equal(x, y)


@primitive
def less(x, y):
    return np.less(x, y)


@primitive
def less_equal(x, y):
    return np.less_equal(x, y)


@primitive
def equal(x, y):
    """x == y elementwise, as booleans."""
    return np.equal(x, y)


@primitive
def not_equal(x, y):
    return np.not_equal(x, y)


@primitive
def ones_like(x):
    return np.ones_like(x, dtype=np.result_type(x, 1.0))


@primitive
def one_hot(labels, num_classes):
    """Rows of the identity: one_hot([2, 0], 3) = [[0, 0, 1], [1, 0, 0]]."""
    return np.eye(num_classes)[np.asarray(labels)]


for _prim in (greater, greater_equal, less, less_equal, equal, not_equal, ones_like, one_hot):
    defvjp_zero(_prim)
