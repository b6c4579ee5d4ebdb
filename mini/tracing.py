"""Values traced while a program runs, and how nested traces are kept apart.

Every ``make_vjp`` (reverse mode) and ``make_jvp`` (forward mode) starts a trace with a new, larger
id; its boxes carry that id.  ``grad(grad(f))`` runs the inner trace inside the outer one, so an
inner box may hold an outer box as its value.  A primitive applied to values of several traces
records itself only on the innermost (largest id), computing on their values; those values may
still be traced by outer traces, so the computation, and the reverse or forward pass built from
it, is recorded there in turn.  This is how HIPS autograd keeps nested traces apart.

The values behave like the arrays they hold: ``shape``, ``len``, ``bool`` (so ``if x > 0:``
works), comparisons give plain boolean arrays (usable as masks), and numpy's shape queries work.
Boxes stay hashable by identity: the reverse pass keys its gradients by node.
"""
import itertools
import sys
from pathlib import Path

import numpy as np

from mini.numpy_tracing import TracedArray
from mini.primitives import Traced, equal, not_equal

_trace_ids = itertools.count(1)
_NUMPY_DIR = str(Path(np.__file__).resolve().parent)


def new_trace():
    """A trace id larger than every one before: the innermost trace."""
    return next(_trace_ids)


def raw(x):
    """``x`` with every level of tracing removed: the plain number or array."""
    while isinstance(x, TracedValue):
        x = x.value
    return x


class TracedValue(TracedArray):
    """Base of ``Box`` and ``Dual``: a ``value`` recorded by the trace with id ``trace``."""

    __slots__ = ()
    __hash__ = object.__hash__

    @classmethod
    def apply(cls, prim, args, kwargs):
        """Record ``prim`` on the innermost trace among its arguments.

        One pass over the arguments unwraps the values of the innermost trace seen so far; an
        argument of a later (inner) trace puts the earlier ones back.  ``outer`` says whether
        values of other traces remain, so that the primitive must be applied again to them.
        """
        values, argnums, traced, top, outer = list(args), [], [], None, False
        for argnum, arg in enumerate(args):
            if isinstance(arg, TracedValue):
                if top is None:
                    top = arg
                elif arg.trace != top.trace:
                    outer = True
                    if arg.trace < top.trace:
                        continue
                    for i in argnums:
                        values[i] = args[i]
                    top, argnums, traced = arg, [], []
                values[argnum] = value = arg.value
                argnums.append(argnum)
                traced.append(arg)
                if isinstance(value, TracedValue):
                    outer = True
            elif isinstance(arg, Traced):
                raise TypeError(f"{prim.__name__}: cannot mix a value traced by mini.grad "
                                f"with a framework node ({arg!r}); use one front end at a time")
        if prim.piecewise_constant:
            return prim.fun(*[raw(arg) for arg in args], **kwargs)
        return top.record(prim, kwargs, values, traced, argnums, outer)

    def record(self, prim, kwargs, values, traced, argnums, outer):
        """Compute ``prim`` on ``values`` (its arguments with this trace's values unwrapped:
        those of ``traced``, at ``argnums``) and return its result traced by this trace."""
        raise NotImplementedError

    shape = property(lambda self: np.shape(raw(self)))
    ndim = property(lambda self: np.ndim(raw(self)))
    size = property(lambda self: np.size(raw(self)))
    dtype = property(lambda self: np.result_type(raw(self)))

    def __len__(self):
        return len(raw(self))

    def __bool__(self):
        return bool(raw(self))

    def __eq__(self, other):
        return equal(self, other)

    def __ne__(self, other):
        return not_equal(self, other)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        kind = "method or attribute" if hasattr(np.ndarray, name) else "attribute"
        raise AttributeError(f"mini does not trace the array {kind} .{name} of a traced value; "
                             "use a mini primitive (mini.sum, mini.reshape, ...) or add one with "
                             "mini.primitive and mini.defvjp")

    def __array__(self, dtype=None, copy=None):
        caller = _numpy_caller()
        where = f"numpy.{caller}" if caller else "np.array / np.asarray"
        raise TypeError(f"{where} was given a value traced by mini ({self!r:.80}) inside a list "
                        "or to convert: mini cannot differentiate through that.  Join traced "
                        "values with mini.stack or mini.concatenate, and pass them to numpy "
                        "functions directly, not in a list")

    def __array_function__(self, func, types, args, kwargs):
        if func in _QUERIES:
            return func(*[raw(arg) for arg in args], **kwargs)
        return super().__array_function__(func, types, args, kwargs)


_QUERIES = {np.shape, np.ndim, np.size, np.result_type, np.zeros_like, np.ones_like}
"""numpy functions that read only shapes and types: answered from the value, untraced."""


def _numpy_caller():
    """The outermost numpy function on the stack above this call, or None (np.array itself)."""
    frame, name = sys._getframe(2), None
    while frame is not None and frame.f_code.co_filename.startswith(_NUMPY_DIR):
        name, frame = frame.f_code.co_name, frame.f_back
    return name
