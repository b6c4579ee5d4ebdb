"""Launch a student's CUDA kernel on Numba's simulator and count what every thread does.

A kernel's values alone do not show how it computes them: one thread looping over everything,
numpy called inside the kernel, or a naive product next to a shared array it never reads all give
the right numbers.  So lab 5's checks also launch each kernel with its arrays wrapped in
:class:`Counted`, which records, per CUDA thread, every single-element read and write and every
access to more than one element at once (a slice, or numpy reading the whole array).  While the
launch runs, the simulator's ``cuda.shared.array`` hands out counted arrays too (recording their
dtypes) and ``cuda.syncthreads`` counts each thread's barriers.  :class:`Tally` holds the counts.

The simulator runs a kernel's Python body once per thread (``numba.cuda.simulator.kernel``), and
looks ``cuda.shared`` and ``cuda.syncthreads`` up on its ``FakeCUDAShared`` and ``FakeCUDAModule``
classes, which is what is patched here, for one launch at a time.
"""
import collections
import contextlib
import sys
import threading
import warnings

import numpy as np

HOST = "host"


class Tally:
    """Per-thread counts: ``counts[thread][(array name, kind)]``, kind one of "reads", "writes",
    "bulk" (an access to more than one element) and, under the name "barrier", "calls"."""

    def __init__(self, threads):
        self.threads = threads           # how many threads the launch had
        self.counts = collections.defaultdict(collections.Counter)
        self.shared_dtypes = []
        self._lock = threading.Lock()

    def add(self, name, kind):
        thread = threading.current_thread()
        key = (tuple(thread.blockIdx), tuple(thread.threadIdx)) if hasattr(
            thread, "threadIdx") else HOST
        with self._lock:
            self.counts[key][name, kind] += 1

    def per_thread(self, names, kind):
        """The count of every thread of the launch (zeros for threads that did nothing)."""
        values = [sum(c[name, kind] for name in names) for key, c in self.counts.items()
                  if key != HOST]
        return values + [0] * (self.threads - len(values))

    def most(self, names, kind):
        return max(self.per_thread(names, kind))

    def fewest(self, names, kind):
        return min(self.per_thread(names, kind))

    def busy(self, names, kind):
        """How many threads did ``kind`` on ``names`` at least once."""
        return sum(1 for value in self.per_thread(names, kind) if value)

    def total(self, names, kind):
        return sum(self.per_thread(names, kind))

    def bulk(self):
        """Accesses of more than one element at once, by any thread, to any array."""
        return sum(n for key, c in self.counts.items() if key != HOST
                   for (_, kind), n in c.items() if kind == "bulk")


class Counted:
    """A numpy array seen through a counter: what a kernel may do with an array argument
    (index one element, read ``shape``, ``size``, ``dtype``, ``ndim``) works as usual."""

    def __init__(self, array, name, tally):
        self._array, self._name, self._tally = array, name, tally
        self.first_writes = {}

    shape = property(lambda self: self._array.shape)
    size = property(lambda self: self._array.size)
    dtype = property(lambda self: self._array.dtype)
    ndim = property(lambda self: self._array.ndim)

    def __len__(self):
        return len(self._array)

    def _element(self, index):
        index = index if isinstance(index, tuple) else (index,)
        return len(index) == self._array.ndim and all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in index)

    def __getitem__(self, index):
        self._tally.add(self._name, "reads" if self._element(index) else "bulk")
        return self._array[index]

    def __setitem__(self, index, value):
        element = self._element(index)
        self._tally.add(self._name, "writes" if element else "bulk")
        thread = threading.current_thread()
        if element and hasattr(thread, "threadIdx"):
            self.first_writes.setdefault((tuple(thread.blockIdx), tuple(thread.threadIdx)),
                                         tuple(int(i) for i in np.atleast_1d(index)))
        self._array[index] = value

    def __array__(self, dtype=None, copy=None):
        self._tally.add(self._name, "bulk")
        return self._array if dtype is None else self._array.astype(dtype)

    def __iter__(self):
        self._tally.add(self._name, "bulk")
        return iter(self._array)


def _require_simulator():
    from numba import config
    if not config.ENABLE_CUDASIM:
        raise RuntimeError("this check counts what each thread does on Numba's CUDA simulator; "
                           "grade lab 5 with MINI_CUDA=simulator")
    from numba.cuda.simulator import kernelapi
    return kernelapi


@contextlib.contextmanager
def _counting(tally):
    """The simulator's shared arrays and barriers counted into ``tally`` (one launch)."""
    kernelapi = _require_simulator()
    shared_class, module_class = kernelapi.FakeCUDAShared, kernelapi.FakeCUDAModule
    saved = shared_class.array, module_class.syncthreads
    allocations, lock = {}, threading.Lock()

    def shared_array(self, shape, dtype, alignment=None):
        caller = sys._getframe(1)          # one allocation per line of the kernel, as Numba's
        where = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            if where not in allocations:
                dtype = np.dtype(kernelapi.numpy_support.as_dtype(dtype)
                                 if not isinstance(dtype, (type, np.dtype)) else dtype)
                array = np.full(shape, np.nan, dtype) if dtype.kind == "f" else np.zeros(
                    shape, dtype)
                allocations[where] = Counted(array, f"shared {len(allocations)}", tally)
                tally.shared_dtypes.append(dtype.name)
            return allocations[where]

    def syncthreads(self):
        tally.add("barrier", "calls")
        return saved[1](self)

    shared_class.array, module_class.syncthreads = shared_array, syncthreads
    try:
        yield allocations
    finally:
        shared_class.array, module_class.syncthreads = saved


def launch(kernel, made_by, grid, block, args):
    """Launch ``kernel[grid, block](*args.values())`` with every numpy array among them counted.

    ``args`` is ``{name: value}`` in argument order; returns ``(tally, {name: Counted})``
    (a Counted array's ``first_writes`` maps each thread to the first element it wrote).  ``kernel`` must be a CUDA kernel (``@cuda.jit``).
    """
    if not (callable(getattr(kernel, "py_func", None)) and hasattr(kernel, "__getitem__")):
        raise TypeError(f"{made_by} should be a CUDA kernel made with @cuda.jit (launched as "
                        f"kernel[blocks, threads](...)), got {type(kernel).__name__} "
                        f"{kernel!r:.60}")
    dims = [tuple(d) if isinstance(d, tuple) else (d,) for d in (grid, block)]
    tally = Tally(int(np.prod(dims[0]) * np.prod(dims[1])))
    wrapped = {name: Counted(value, name, tally) if isinstance(value, np.ndarray) else value
               for name, value in args.items()}
    with _counting(tally), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel[grid, block](*wrapped.values())
    return tally, {name: value for name, value in wrapped.items() if isinstance(value, Counted)}
