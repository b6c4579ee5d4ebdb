"""Reverse-mode automatic differentiation by tracing (the dynamic front end, like PyTorch/autograd).

``grad(f)(x)`` runs ``f`` on a boxed ``x``.  Every primitive applied to a box returns a new box that
remembers the primitive, its arguments and its parent boxes, so running the program records its
computation graph (L05 slide 13).  The reverse pass (slide 27) then walks that graph from the output
back to the input, asking each node's VJP (``mini.primitives.vjp_table``) for its parents' shares of
the gradient and summing the shares of nodes with several outgoing edges (slide 20).
"""
import linecache
import sys
import warnings
from pathlib import Path

import numpy as np

from mini.graph import Node, toposort
from mini.primitives import Traced, add, vjp_of

_MINI_DIR = str(Path(__file__).resolve().parent)
_record_source = False   # set by gradcheck.diagnose: remember where in the program each node is made


class Box(Node, Traced):
    """A value being traced: a graph node that behaves like the number or array it holds."""

    __slots__ = ()
    _created = 0

    @classmethod
    def apply(cls, prim, args, kwargs):
        """Compute ``prim`` on the unboxed arguments and return the result boxed as a new node."""
        raw, parents, argnums = list(args), [], []
        for argnum, arg in enumerate(args):
            if isinstance(arg, Box):
                raw[argnum] = arg.value
                parents.append(arg)
                argnums.append(argnum)
            elif isinstance(arg, Traced):
                raise TypeError(f"{prim.__name__}: cannot mix a value traced by mini.grad with "
                                f"a framework node ({arg!r}); use one front end at a time")
        node = cls(prim.fun(*raw, **kwargs), prim, tuple(raw), kwargs, parents, argnums)
        if _record_source:
            node.source = _caller()
        return node

    def vjp_operands(self):
        """What the VJPs read: the output value and the unboxed arguments."""
        return self.value, self.args

    shape = property(lambda self: np.shape(self.value))
    ndim = property(lambda self: np.ndim(self.value))
    size = property(lambda self: np.size(self.value))
    dtype = property(lambda self: np.result_type(self.value))

    def __len__(self):
        return len(self.value)

    def __bool__(self):
        return bool(self.value)

    def __repr__(self):
        return f"Box({self.value!r}, from {self.label})"


def _caller():
    """(creation index, "file:line", source line) of the first frame outside mini itself."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_MINI_DIR):
        frame = frame.f_back
    Box._created += 1
    if frame is None:
        return Box._created, "?", ""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return Box._created, f"{frame.f_code.co_filename}:{frame.f_lineno}", line


def backward_pass(g, end_node):
    """Propagate ``g`` = d(final)/d(end_node) back through the graph (L05 slide 27).

    Nodes are visited in reverse topological order, so when a node is reached every node that reads
    it has already sent back its share.  Its total gradient is passed to each VJP of its primitive,
    and each parent receives the result, added by :func:`add_outgrads` to what it already has.

    Returns:
        dict mapping every node of the graph to its gradient (the lecture's x_bar for each x).
    """
    grads = {end_node: g}
    for node in reversed(toposort(end_node)):
        g = grads[node]
        ans, args = node.vjp_operands()
        for argnum, parent in zip(node.parent_argnums, node.parents):
            parent_grad = vjp_of(node.fun, argnum)(g, ans, *args, **node.kwargs)
            grads[parent] = add_outgrads(grads.get(parent), parent_grad)
    return grads


def add_outgrads(prev_g, g):
    """Sum the gradient contributions of a node with several outgoing edges (L05 slide 20)."""
    return g if prev_g is None else add(prev_g, g)


def make_vjp(fun, *args, argnum=0):
    """Trace ``fun(*args)`` and return ``(vjp, value)`` (L05 slide 28).

    ``vjp(g)`` is the gradient, with respect to ``args[argnum]``, of ``sum(g * fun(*args))``: the
    vector-Jacobian product ``J^T g``.  Tracing happens once; ``vjp`` may be called many times.
    ``args[argnum]`` may be an array or a dict/list/tuple of arrays (a model's parameters); the
    gradient then has the same structure.
    """
    starts = []
    boxed = list(args)
    boxed[argnum] = _box_leaves(args[argnum], argnum, starts)
    end = fun(*boxed)

    def vjp(g):
        grads = backward_pass(g, end) if isinstance(end, Box) else {}
        if not any(start in grads for start in starts):
            warnings.warn(f"{_name(fun)}: the output does not depend on argument {argnum}, so its "
                          "gradient is zero", stacklevel=2)
        leaf_grads = iter([grads[s] if s in grads else np.zeros_like(s.value) for s in starts])
        return _rebuild(args[argnum], leaf_grads)
    return vjp, end.value if isinstance(end, Box) else end


def _box_leaves(x, argnum, starts):
    """Box every array in a (possibly nested) dict/list/tuple, recording the boxes in order."""
    if isinstance(x, dict):
        return {key: _box_leaves(value, argnum, starts) for key, value in x.items()}
    if isinstance(x, (list, tuple)) and not _is_numeric(x):
        return type(x)(_box_leaves(value, argnum, starts) for value in x)
    starts.append(Box(_differentiable(x, argnum), name=f"argument {argnum}"))
    return starts[-1]


def _rebuild(x, leaves):
    """``x``'s structure with its arrays replaced, in order, by ``leaves``."""
    if isinstance(x, dict):
        return {key: _rebuild(value, leaves) for key, value in x.items()}
    if isinstance(x, (list, tuple)) and not _is_numeric(x):
        return type(x)(_rebuild(value, leaves) for value in x)
    return next(leaves)


def grad(fun, argnum=0):
    """The gradient function of a scalar-valued ``fun`` with respect to argument ``argnum``."""
    def gradfun(*args, **kwargs):
        return value_and_grad(fun, argnum)(*args, **kwargs)[1]
    gradfun.__name__ = f"grad_{_name(fun)}"
    return gradfun


def value_and_grad(fun, argnum=0):
    """Like :func:`grad`, but returns ``(fun(*args), gradient)`` from one forward pass."""
    def value_and_gradfun(*args, **kwargs):
        vjp, ans = make_vjp(lambda *a: fun(*a, **kwargs), *args, argnum=argnum)
        if np.size(ans) != 1 or np.ndim(ans) != 0:
            raise TypeError(f"grad of {_name(fun)} needs a scalar output, but it returned an array "
                            f"of shape {np.shape(ans)}; use make_vjp or jacobian for non-scalar "
                            "outputs, or reduce the output (e.g. with mini.sum) first")
        return ans, vjp(np.ones_like(ans, dtype=np.result_type(ans, 1.0)))
    return value_and_gradfun


def jacobian(fun, argnum=0):
    """The Jacobian of ``fun`` with respect to argument ``argnum``, one VJP per output entry.

    Row ``i`` is ``J^T e_i`` (L05 slides 21-23): the gradient of output entry ``i``.  The result has
    shape ``output.shape + input.shape``.
    """
    def jacobianfun(*args, **kwargs):
        vjp, ans = make_vjp(lambda *a: fun(*a, **kwargs), *args, argnum=argnum)
        out_shape, in_shape = np.shape(ans), np.shape(args[argnum])
        rows = []
        for i in range(int(np.prod(out_shape))):
            e_i = np.zeros(int(np.prod(out_shape)))
            e_i[i] = 1.0
            rows.append(np.reshape(vjp(e_i.reshape(out_shape)), in_shape))
        return np.reshape(np.stack(rows), out_shape + in_shape)
    return jacobianfun


def _differentiable(x, argnum):
    if isinstance(x, Traced):
        raise TypeError(f"mini differentiates once: argument {argnum} is already being traced "
                        "(grad of grad is not supported)")
    kind = np.asarray(x).dtype.kind if _is_numeric(x) else None
    if kind not in ("f", "i", "u", "b"):
        raise TypeError(f"cannot differentiate with respect to argument {argnum}: expected a number "
                        f"or a numeric array, got {type(x).__name__} {x!r:.60}")
    return x if kind == "f" else np.asarray(x, dtype=np.float64)


def _is_numeric(x):
    try:
        return np.asarray(x).dtype != object
    except (ValueError, TypeError):
        return False


def _name(fun):
    return getattr(fun, "__name__", type(fun).__name__)
