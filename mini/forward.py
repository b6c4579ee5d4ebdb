"""Forward-mode automatic differentiation: Jacobian-vector products by dual numbers.

``make_jvp(f, x)(v)`` runs ``f`` once on a ``Dual`` that carries ``x`` and a tangent ``v``.  Each
primitive computes its value and, from the JVPs in ``mini.table.jvp_table`` (one per argument, next
to the VJPs), the tangent of its output: ``y_dot = sum over arguments of J_i x_dot_i``.  Nothing is
stored and there is no reverse pass; one forward pass gives ``J v`` for one direction ``v``, so
forward mode suits functions with few inputs and many outputs, reverse mode the opposite.
"""
import numpy as np

from mini.answers import answer
from mini.primitives import add, jvp_of, zeros_like
from mini.tracing import TracedValue, holds_traced, joined, new_trace, raw


@answer("lab3", "forward_mode")
class Dual(TracedValue):
    """A value and its tangent (the derivative of the value along the input direction)."""

    __slots__ = ("value", "tangent", "trace")

    def __init__(self, value, tangent, trace):
        self.value, self.tangent, self.trace = value, tangent, trace

    def record(self, prim, kwargs, values, traced, argnums, outer):
        """Compute ``prim`` on the values and push the arguments' tangents through its JVPs."""
        ans = prim(*values, **kwargs) if outer else prim.fun(*values, **kwargs)
        tangent = None
        for argnum, dual in zip(argnums, traced):
            share = jvp_of(prim, argnum)(dual.tangent, ans, *values, **kwargs)
            tangent = share if tangent is None else add(tangent, share)
        return Dual(ans, tangent, self.trace)

    def __repr__(self):
        return f"Dual({self.value!r}, tangent {self.tangent!r})"


@answer("lab3", "forward_mode")
def make_jvp(fun, *args, argnum=0):
    """``jvp(v) -> (fun(*args), J v)``, ``J`` the Jacobian with respect to ``args[argnum]``.

    Each call of ``jvp`` runs ``fun`` once, forward, with tangent ``v`` (shaped like the argument).
    """
    x = args[argnum]
    value = raw(x)
    if np.asarray(value).dtype.kind not in "fiub":
        raise TypeError(f"cannot differentiate with respect to argument {argnum}: expected a number "
                        f"or a numeric array, got {type(value).__name__} (mini differentiates "
                        "real numbers)")

    def jvp(v):
        if np.shape(raw(v)) != np.shape(value):
            raise ValueError(f"the tangent has shape {np.shape(raw(v))}, but argument {argnum} has "
                             f"shape {np.shape(value)}: a direction lives where the input does")
        trace = new_trace()
        dualled = list(args)
        dualled[argnum] = Dual(x if np.asarray(value).dtype.kind == "f" else
                               np.asarray(value, dtype=np.float64), v, trace)
        end = fun(*dualled)
        if isinstance(end, (tuple, list)):      # several outputs: a value and a tangent each
            pairs = [_value_and_tangent(item, trace) for item in end]
            return type(end)(value for value, _ in pairs), type(end)(t for _, t in pairs)
        return _value_and_tangent(end, trace)
    return jvp


@answer("lab3", "forward_mode")
def _value_and_tangent(end, trace):
    """An output's plain value and its tangent (zeros for an output that ignores the input)."""
    if holds_traced(end):                       # np.array of traced values
        end = joined(end)
    if isinstance(end, Dual) and end.trace == trace:
        return end.value, end.tangent
    return end, zeros_like(end)


@answer("lab3", "forward_mode")
def jvp(fun, x, v):
    """``(fun(x), J v)``: the value and its derivative along ``v``, in one forward pass."""
    return make_jvp(fun, x)(v)
