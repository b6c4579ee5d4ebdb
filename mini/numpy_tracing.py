"""Operators and numpy functions applied to traced values become calls of mini's primitives.

``x * y``, ``np.exp(x)``, ``np.sum(x, axis=-1)`` on a traced ``x`` (an eager ``Box``, a
forward-mode ``Dual``, a framework ``Tensor``) all land here and call the primitive that computes
exactly what numpy computes: the same value, shape and dtype, for the forms numpy accepts
(negative axes, ``axis=None``, tuples of axes, scalars).  A numpy function or argument mini does not
trace raises an error that names it: nothing is silently treated as a constant.
"""
import numpy as np

from mini import primitives as p
from mini.answers import answer
from mini.linear import count
from mini.primitives import add, divide, getitem, matmul, multiply, negative, power, subtract

UFUNCS = {np.add: p.add, np.subtract: p.subtract, np.multiply: p.multiply, np.divide: p.divide,
          np.negative: p.negative, np.power: p.power, np.exp: p.exp, np.log: p.log,
          np.tanh: p.tanh, np.sqrt: p.sqrt, np.conjugate: p.conjugate, np.maximum: p.maximum,
          np.matmul: p.matmul, np.greater: p.greater, np.greater_equal: p.greater_equal,
          np.less: p.less, np.less_equal: p.less_equal, np.equal: p.equal,
          np.not_equal: p.not_equal}


def _numpy_sum(a, axis=None, dtype=None, out=None, keepdims=False):
    _refuse("sum", dtype=dtype, out=out)
    return p.sum(a, axis=axis, keepdims=keepdims)


def _numpy_mean(a, axis=None, dtype=None, out=None, keepdims=False):
    _refuse("mean", dtype=dtype, out=out)
    return p.mean(a, axis=axis, keepdims=keepdims)


def _numpy_var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """numpy's steps: the squared deviations from the mean, summed, over the count less ``ddof``
    (a Python number, so the quotient keeps the sum's dtype)."""
    _refuse("var", dtype=dtype, out=out)
    deviations = a - p.mean(a, axis=axis, keepdims=True)
    squares = p.sum(deviations * deviations, axis=axis, keepdims=keepdims)
    return squares / max(count(np.shape(a), axis) - ddof, 0)


def _numpy_std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    _refuse("std", dtype=dtype, out=out)
    return p.std(a, axis=axis, ddof=ddof, keepdims=keepdims)


def _numpy_reshape(a, shape, order="C", copy=None):
    _refuse("reshape", order=None if order == "C" else order, copy=copy)
    return p.reshape(a, shape)


def _numpy_take(a, indices, axis=None, out=None, mode="raise"):
    _refuse("take", out=out, mode=None if mode == "raise" else mode)
    return p.take(a, indices, axis=axis)


def _numpy_concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    _refuse("concatenate", out=out, dtype=dtype)
    return p.concatenate(arrays, axis=axis)


def _numpy_stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    _refuse("stack", out=out, dtype=dtype)
    return p.stack(arrays, axis=axis)


def _numpy_dot(a, b, out=None):
    _refuse("dot", out=out)
    return p.dot(a, b)


def _numpy_where(condition, *x_y):
    if len(x_y) != 2:
        raise TypeError("mini traces numpy.where(condition, x, y) with three arguments; the "
                        "one-argument form returns indices, which have no derivative")
    return p.where(condition, *x_y)


FUNCTIONS = {np.sum: _numpy_sum, np.mean: _numpy_mean, np.var: _numpy_var, np.std: _numpy_std,
             np.reshape: _numpy_reshape, np.transpose: p.transpose, np.take: _numpy_take,
             np.concatenate: _numpy_concatenate, np.stack: _numpy_stack, np.dot: _numpy_dot,
             np.where: _numpy_where, np.zeros_like: p.zeros_like, np.ones_like: p.ones_like}


def untraced(what):
    """The error for a numpy function or ufunc that no primitive of mini's computes."""
    return TypeError(f"mini cannot trace {what}: use a mini primitive, or add one with "
                     "mini.primitive and mini.defvjp")


def _refuse(name, **unsupported):
    given = [key for key, value in unsupported.items() if value is not None]
    if given:
        raise TypeError(f"mini traces numpy.{name} without {' or '.join(given)}=; leave "
                        f"{'it' if len(given) == 1 else 'them'} out (mini keeps numpy's dtypes)")


@answer("lab3", "tracer")
class TracedArray(p.Traced):
    """What eager boxes, forward-mode duals and framework nodes share: arithmetic operators and
    numpy functions on them call mini's primitives, so ordinary numpy-style code builds a graph.
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
    def __pos__(self): return np.positive(self)
    def __abs__(self): return np.absolute(self)
    def __gt__(self, other): return p.greater(self, other)
    def __lt__(self, other): return p.less(self, other)
    def __ge__(self, other): return p.greater_equal(self, other)
    def __le__(self, other): return p.less_equal(self, other)
    def __getitem__(self, index): return getitem(self, index)

    @property
    def T(self):
        return p.transpose(self)

    def sum(self, axis=None, keepdims=False):
        return p.sum(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return p.mean(self, axis=axis, keepdims=keepdims)

    def reshape(self, *shape):
        return p.reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes):
        return p.transpose(self, (axes[0] if len(axes) == 1 else axes) or None)

    def dot(self, other):
        return p.dot(self, other)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and ufunc in UFUNCS and not kwargs:
            return UFUNCS[ufunc](*inputs)
        what = f"numpy.{ufunc.__name__}{'' if method == '__call__' else '.' + method}"
        if method == "__call__" and ufunc in UFUNCS:
            raise TypeError(f"mini traces {what} without keyword arguments "
                            f"({', '.join(sorted(kwargs))}=); leave them out")
        raise untraced(what)

    def __array_function__(self, func, types, args, kwargs):
        if func in FUNCTIONS:
            return FUNCTIONS[func](*args, **kwargs)
        raise untraced(f"numpy.{func.__name__}")
