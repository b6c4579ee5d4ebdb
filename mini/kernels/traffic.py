"""A CUDA kernel's global-memory traffic, counted access by access on Numba's simulator.

On a GPU the time of a memory-bound kernel is set by how much it moves between global memory and
the chip, and in how many pieces (L05 slide 2: tiling and coalescing).  The simulator cannot time
that, but it can count it: every thread is a Python thread, and every element a thread reads or
writes passes through the array it was given.  :func:`count` launches a kernel on arrays that
write down each access (which array, which element, load or store, which thread), and
:class:`Traffic` adds them up:

* ``loads("A")``: elements read from ``A``, the number a tiled matmul divides by its tile;
* ``transactions("B")``: the 128-byte segments the warps touch.  The 32 threads of a warp run in
  step, so the n-th read of ``B`` by each thread of a warp is one instruction of the warp, and the
  hardware serves it with one transaction per distinct segment: 1 when the warp reads 32
  neighbouring float32 (coalesced), up to 32 when they lie a row apart;
* ``writers("C")``: the ``cuda.grid(2)`` of the thread that wrote each element.

It counts what a kernel asks of global memory, not what reaches DRAM (a GPU's caches catch some
repeats), and takes a warp's n-th accesses to be one instruction, which holds while the threads of
a warp follow the same path.  Shared arrays and local variables are not global memory: not counted.
Where mini chose a GPU, the kernel's Python code runs on the simulator's machinery all the same.

    traffic = count(matmul_naive, (2, 2), (16, 16), A, B, C, names="ABC")
    traffic.loads("A") / C.size            # K: each element of C reads a whole row of A
"""
import collections
import dataclasses
import threading

import numpy as np

from mini.kernels import device

WARP = 32
SEGMENT = 128                  # bytes a global-memory transaction serves


@dataclasses.dataclass
class Access:
    """One element read or written: ``kind`` "load" or "store", the array's ``name``, the element
    as an offset in elements from the array's start, and the thread (its block and its
    ``threadIdx``, as (x, y, z))."""

    kind: str
    name: str
    offset: int
    block: tuple
    thread: tuple


@dataclasses.dataclass
class Traffic:
    """The accesses of one launch ``kernel[grid, block]``, in each thread's own order."""

    accesses: list
    grid: tuple
    block: tuple
    itemsize: dict
    shape: dict

    def loads(self, name=None):
        """Elements read from the array ``name`` (from every array when None)."""
        return sum(a.kind == "load" and name in (None, a.name) for a in self.accesses)

    def stores(self, name=None):
        return sum(a.kind == "store" and name in (None, a.name) for a in self.accesses)

    def transactions(self, name=None, kind="load"):
        """The 128-byte segments the warps touch with the accesses of ``kind`` to ``name``: per
        warp and per n-th access of its threads (one instruction), the distinct segments."""
        return sum(len({a.offset * self.itemsize[a.name] // SEGMENT for a in accesses})
                   for accesses in self._instructions(name, kind).values())

    def instructions(self, name=None, kind="load"):
        """The warp instructions behind :meth:`transactions` (one per warp and n-th access)."""
        return len(self._instructions(name, kind))

    def _instructions(self, name, kind):
        """``{(warp, array, n): its accesses}``: the n-th access of ``kind`` to an array by each
        thread of a warp, which run in step, is one instruction of the warp."""
        nth, grouped = collections.Counter(), collections.defaultdict(list)
        for a in self.accesses:
            if a.kind == kind and name in (None, a.name):
                warp = (a.block, self._linear(a.thread) // WARP)
                nth[warp, a.thread, a.name] += 1
                grouped[warp, a.name, nth[warp, a.thread, a.name]].append(a)
        return grouped

    def writers(self, name):
        """An int array of ``name``'s shape plus (2,): the ``cuda.grid(2)`` (x, y) of the thread
        that last stored each element, -1 where none did."""
        shape = self.shape[name]
        where = np.full((int(np.prod(shape)), 2), -1)
        for a in self.accesses:
            if a.kind == "store" and a.name == name:
                where[a.offset] = [a.block[0] * self.block[0] + a.thread[0],
                                   a.block[1] * self.block[1] + a.thread[1]]
        return where.reshape(tuple(shape) + (2,))

    def _linear(self, thread):
        x, y, z = thread
        return x + self.block[0] * (y + self.block[1] * z)


def count(kernel, grid, block, *args, names=None):
    """Launch ``kernel[grid, block](*args)`` on the simulator with every array argument recording
    its accesses, and return their :class:`Traffic`.  ``names`` labels the array arguments in
    order (``"ABC"`` or ``["data", "x"]``; ``arg0``, ``arg1``, ... by default).  The arrays are
    used in place: outputs are written as by a plain launch."""
    if not device.choose().simulator:        # a GPU's kernel: its Python code, simulated
        from numba.cuda.simulator.kernel import FakeCUDAKernel
        kernel = FakeCUDAKernel(kernel.py_func, device=False)
    arrays = [i for i, arg in enumerate(args) if isinstance(arg, np.ndarray) and arg.ndim]
    names = list(names) if names is not None else [f"arg{i}" for i in range(len(arrays))]
    if len(names) != len(arrays):
        raise ValueError(f"count: {len(names)} names for {len(arrays)} array arguments")
    log, recorded = [], list(args)
    for i, name in zip(arrays, names):
        recorded[i] = _recording(np.ascontiguousarray(args[i]), name, log)
    grid, block = (_dims(grid), _dims(block))
    kernel[grid, block](*recorded)
    for i in arrays:
        if recorded[i]._ary is not args[i]:
            args[i][...] = recorded[i]._ary
    return Traffic(log, grid, block, {n: args[i].itemsize for i, n in zip(arrays, names)},
                   {n: args[i].shape for i, n in zip(arrays, names)})


def _dims(dims):
    dims = (dims,) if np.isscalar(dims) else tuple(dims)
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))


def _recording(array, name, log):
    """``array`` as the simulator's device array, writing each element access into ``log``."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    strides = [s // array.itemsize for s in array.strides]

    class Recording(FakeCUDAArray):
        def __getitem__(self, index):
            _note("load", index)
            return super().__getitem__(index)

        def __setitem__(self, index, value):
            _note("store", index)
            return super().__setitem__(index, value)

    def _note(kind, index):
        index = index if isinstance(index, tuple) else (index,)
        if all(isinstance(i, (int, np.integer)) for i in index):
            thread = threading.current_thread()
            log.append(Access(kind, name, sum(int(i) * s for i, s in zip(index, strides)),
                              tuple(thread.blockIdx), tuple(thread.threadIdx)))

    return Recording(array)
