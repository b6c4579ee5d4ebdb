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

``np.array([x, 2 * x])`` cannot return a traced value: numpy builds a new plain array from a list.
So a traced value offers numpy an object array of itself (entry by entry, so the shape is numpy's),
and numpy's own loops then apply ``+``, ``*``, ``@``, ufuncs (``np.exp`` calls each entry's
``exp``), sums, means and variances to the traced entries, which records them.  Where such an
object array meets a primitive, or is returned, it is joined back into one traced array with
``stack``: numpy's value, shape and dtype.
"""
import importlib
import itertools
import sys
from pathlib import Path

import numpy as np

from mini.answers import answer
from mini.numpy_tracing import UFUNCS, TracedArray, untraced
from mini.primitives import Traced, divide, equal, getitem, not_equal, stack_args

_trace_ids = itertools.count(1)
_NUMPY_DIR = str(Path(np.__file__).resolve().parent)
_NUMPY_METHODS = importlib.import_module(          # where np.mean, np.var and np.std are written
    "numpy._core._methods" if int(np.__version__.split(".")[0]) >= 2 else "numpy.core._methods"
).__file__


def new_trace():
    """A trace id larger than every one before: the innermost trace."""
    return next(_trace_ids)


def raw(x):
    """``x`` with every level of tracing removed: the plain number or array."""
    while isinstance(x, TracedValue):
        x = x.value
    return x


def holds_traced(x):
    """Whether ``x`` is an object array (what ``np.array`` makes of traced values) holding any."""
    return (type(x) is np.ndarray and x.dtype.hasobject
            and any(isinstance(entry, TracedValue) for entry in x.flat))


def joined(entries):
    """An object array of traced values and numbers as one traced array, stacked axis by axis:
    ``np.array([x, 2 * x])`` becomes ``stack([x, 2 * x])``, numpy's value, shape and dtype."""
    if not isinstance(entries, np.ndarray):     # one entry: a traced value or a number
        return entries
    if entries.ndim == 0:
        return entries[()]
    if entries.size == 0:
        raise ValueError(f"an empty object array of shape {entries.shape} holds no values to join")
    return stack_args(0, *map(joined, entries))


class TracedValue(TracedArray):
    """Base of ``Box`` and ``Dual``: a ``value`` recorded by the trace with id ``trace``."""

    __slots__ = ()
    __hash__ = object.__hash__

    @classmethod
    @answer("lab3", "tracer")
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
            elif type(arg) is np.ndarray:
                if arg.dtype.hasobject and holds_traced(arg):       # np.array of traced values
                    return cls.apply(prim, [joined(a) if holds_traced(a) else a for a in args],
                                     kwargs)
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

    @property
    def dtype(self):
        """The value's dtype.  numpy's ``mean`` and ``var`` (in ``numpy/_core/_methods.py``) ask a
        reduced result for its dtype only to turn it into a plain numpy scalar, which would drop
        the trace; asked from there, a traced value has no dtype, so they return it traced."""
        if _called_from_numpy_methods():
            raise AttributeError("dtype")
        return np.result_type(raw(self))

    def __truediv__(self, other):
        """``self / other``.  numpy's ``mean``, ``var`` and ``std`` divide a reduced sum by its
        count (a numpy number) and cast the quotient back to the sum's dtype; a traced sum has no
        dtype there (see above), so from there the count takes the sum's dtype instead."""
        if isinstance(other, np.number) and _called_from_numpy_methods():
            other = np.asarray(other, dtype=np.result_type(raw(self)))
        return divide(self, other)

    def __len__(self):
        return len(raw(self))

    def __bool__(self):
        return bool(raw(self))

    def __eq__(self, other):
        return equal(self, other)

    def __ne__(self, other):
        return not_equal(self, other)

    def __float__(self):
        raise TypeError(_lost_trace(self, "float()"))

    # numpy's floor, ceil, trunc and invert of an object array call math.floor, math.ceil,
    # math.trunc and ~ on each entry: named here, as any ufunc mini does not trace
    def __floor__(self):
        raise untraced("numpy.floor")

    def __ceil__(self):
        raise untraced("numpy.ceil")

    def __trunc__(self):
        raise untraced("numpy.trunc")

    def __invert__(self):
        raise untraced("numpy.invert")

    def __array__(self, dtype=None, copy=None):
        """Entry by entry, an object array of this value's entries, each traced (see above)."""
        if dtype is not None and np.dtype(dtype) != object:
            raise TypeError(_lost_trace(self, f"a {np.dtype(dtype)} array"))
        entries = np.empty(self.shape, dtype=object)
        if entries.ndim == 0:
            entries[()] = self
        for index in np.ndindex(entries.shape) if entries.ndim else ():
            entries[index] = getitem(self, index)
        return entries

    def __array_function__(self, func, types, args, kwargs):
        if func in _QUERIES:
            return func(*[raw(arg) for arg in args], **kwargs)
        return super().__array_function__(func, types, args, kwargs)


def _entry_method(prim):
    """``entry.exp()``, which numpy's loop over an object array calls for ``np.exp``: mini's
    primitive of the entry."""
    def method(self):
        return prim(self)
    method.__name__ = prim.__name__
    return method


def _refused_ufunc(name):
    """The method numpy's loop over an object array calls for a ufunc that mini does not trace
    (``entry.sin()`` for ``np.sin``): the error names the ufunc, where numpy would report a
    missing method."""
    def refuse(self, *args, **kwargs):
        raise untraced(f"numpy.{name}")
    return refuse


def _refused_array_attribute(name):
    """An array method or attribute mini does not trace (``x.max``), named by the error."""
    def refuse(self):
        raise AttributeError(f"mini does not trace the array method or attribute .{name} of a "
                             "traced value; use a mini primitive (mini.sum, mini.reshape, ...) or "
                             "add one with mini.primitive and mini.defvjp")
    return property(refuse)


def _define_entry_methods(cls):
    """Give ``cls`` its entry methods, and a named refusal for each ufunc mini does not trace
    and each other array attribute, once.  Attributes of the class, not a ``__getattr__``: a
    class with one has every attribute of its instances (``node.parents``, ``box.value``) looked
    up the slow way, and the reverse pass reads them for every node."""
    for ufunc, prim in UFUNCS.items():
        if ufunc.nin == 1:
            setattr(cls, ufunc.__name__, _entry_method(prim))
    for name, value in vars(np).items():
        if isinstance(value, np.ufunc) and value not in UFUNCS and not hasattr(cls, name):
            setattr(cls, name, _refused_ufunc(name))
    for name in dir(np.ndarray):
        if not name.startswith("__") and not hasattr(cls, name):
            setattr(cls, name, _refused_array_attribute(name))


_define_entry_methods(TracedValue)

_QUERIES = {np.shape, np.ndim, np.size, np.result_type, np.zeros_like, np.ones_like}
"""numpy functions that read only shapes and types: answered from the value, untraced."""


def _called_from_numpy_methods():
    """Whether the caller's caller is numpy's ``mean``, ``var`` or ``std``."""
    return sys._getframe(2).f_code.co_filename == _NUMPY_METHODS


def _lost_trace(value, into):
    caller = _numpy_caller()
    where = f"numpy.{caller}" if caller else "np.array / np.asarray / float"
    return (f"{where} would turn a value traced by mini ({value!r:.80}) into {into}, which mini "
            "cannot differentiate through.  Leave out dtype= (np.array of traced values is "
            "traced), or join them with mini.stack or mini.concatenate")


def _numpy_caller():
    """The outermost numpy function on the stack above this call, or None (np.array itself)."""
    frame, name = sys._getframe(2), None
    while frame is not None and frame.f_code.co_filename.startswith(_NUMPY_DIR):
        name, frame = frame.f_code.co_name, frame.f_back
    return name
