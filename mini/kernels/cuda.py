"""CUDA kernels written with numba.cuda: map, zip, reduce and matmul (naive and tiled).

A kernel is one function run by many threads at once.  Threads come in *blocks* (up to 1024
threads that can share fast on-chip *shared memory* and wait for each other with
``cuda.syncthreads()``), and blocks form the *grid*.  Every kernel below says what ONE thread does.
The 32 threads of a *warp* load memory together: when neighbouring threads read neighbouring
addresses the loads are *coalesced* into a few wide transactions, and that is the first thing a
fast kernel gets right.

Host functions take and return numpy arrays (they copy to the GPU and back on every call):
``map(fn, x)``, ``zip(fn, x, y)``, ``reduce(fn, x, axis, start)``, ``matmul(a, b, tiled=True)``.
The ``*_device`` variants take and return device arrays (``to_device(x)``, ``.copy_to_host()``), so
that data stays on the GPU between calls.  ``fn`` is a device function: ``exp``, ``log``, ``tanh``,
``add``, ``subtract``, ``multiply``, ``divide``, ``maximum`` below, or your own
``@cuda.jit(device=True)`` function.

Importing this module decides where kernels run (``mini.kernels.device``): on the GPU, or on Numba's
CUDA simulator, where each thread is a Python thread; there launches use fewer threads (a
grid-stride loop covers any size with any number of threads) and arrays should stay small.
"""
import math

import numpy as np

from mini.answers import answer
from mini.kernels import device
from mini.kernels.shapes import check_matmul, reduction_rows

SIMULATOR = device.choose().simulator   # must run before numba.cuda is imported
from numba import cuda, from_dtype  # noqa: E402

TILE = 16                                # matmul tile side: TILE x TILE threads per block
THREADS = 32 if SIMULATOR else 256       # threads per block in map, zip, reduce (a power of 2)
MAX_BLOCKS = 4 if SIMULATOR else 1024    # beyond that, each thread's grid-stride loop does more
MAX_ROW_BLOCKS = 4 if SIMULATOR else 65535   # reduce: blocks along y (65535 is CUDA's limit)

_compiled = {}


def _kernel(key, make):
    if key not in _compiled:
        _compiled[key] = make()
    return _compiled[key]


def _grid(n):
    """(blocks, threads) for a grid-stride loop over n elements."""
    return min(max(1, -(-n // THREADS)), MAX_BLOCKS), THREADS


# ---------------------------------------------------------------------------------------------
# Scalar device functions.  Python's math raises where the GPU returns inf/nan (the simulator runs
# Python's math), hence the explicit edge cases, which give numpy's answers on both.
# ---------------------------------------------------------------------------------------------

@cuda.jit(device=True)
def exp(v):
    return math.inf if v > 709.782712893384 else math.exp(v)   # log of the largest float64


@cuda.jit(device=True)
def log(v):
    return math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan)


@cuda.jit(device=True)
def tanh(v):
    return math.tanh(v)


@cuda.jit(device=True)
def add(a, b):
    return a + b


@cuda.jit(device=True)
def subtract(a, b):
    return a - b


@cuda.jit(device=True)
def multiply(a, b):
    return a * b


@cuda.jit(device=True)
def divide(a, b):
    return a / b


@cuda.jit(device=True)
def maximum(a, b):
    return a if a > b or a != a else b   # a nan in either gives nan, as np.maximum does


# ---------------------------------------------------------------------------------------------
# map and zip: one thread per element, grid-stride loop
# ---------------------------------------------------------------------------------------------

@answer("lab5", "map_kernel")
def map_kernel(fn):
    """``kernel[blocks, threads](x, out)`` with ``out[i] = fn(x[i])`` for flat arrays."""
    def make():
        @cuda.jit
        def kernel(x, out):
            # This thread handles i = g, g + G, g + 2G, ... where g is its number in the grid and
            # G the number of threads in the grid (a grid-stride loop): at every step the threads
            # of a warp touch 32 neighbouring elements, so the loads are coalesced.
            for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
                out[i] = fn(x[i])
        return kernel
    return _kernel(("map", fn), make)


@answer("lab5", "zip_kernel")
def zip_kernel(fn):
    """``kernel[blocks, threads](x, x_strides, y, y_strides, out, out_shape)``: ``out = fn(x, y)``.

    All arrays are flat; ``x_strides[axis]`` is how far to step in x when the output index moves by
    one along ``axis``, 0 along the axes x is broadcast over (likewise y).
    """
    def make():
        @cuda.jit
        def kernel(x, x_strides, y, y_strides, out, out_shape):
            for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
                # Unravel i into an index of out (last axis fastest) and find the elements of x
                # and y that numpy's broadcasting pairs with it.
                x_at, y_at, rest = 0, 0, i
                for axis in range(out_shape.size - 1, -1, -1):
                    index = rest % out_shape[axis]
                    rest //= out_shape[axis]
                    x_at += index * x_strides[axis]
                    y_at += index * y_strides[axis]
                out[i] = fn(x[x_at], y[y_at])
        return kernel
    return _kernel(("zip", fn), make)


def map_device(fn, x):
    """fn applied to every element of the device array ``x`` (C-contiguous); a new device array."""
    out = cuda.device_array(x.shape, x.dtype)
    if x.size:
        map_kernel(fn)[_grid(x.size)](x.ravel(), out.ravel())
    return out


def zip_device(fn, x, y):
    """fn(x, y) elementwise with numpy broadcasting, for C-contiguous device arrays of one dtype."""
    x_shape, y_shape = tuple(x.shape), tuple(y.shape)
    shape = _broadcast_shape(x_shape, y_shape)
    out = cuda.device_array(shape, x.dtype)
    if out.size:
        grid = shape or (1,)   # a 0-d result is computed as one element
        zip_kernel(fn)[_grid(out.size)](
            x.ravel(), cuda.to_device(_element_strides(x_shape, grid)),
            y.ravel(), cuda.to_device(_element_strides(y_shape, grid)),
            out.ravel(), cuda.to_device(np.array(grid, np.int64)))
    return out


def _broadcast_shape(x_shape, y_shape):
    try:
        return np.broadcast_shapes(x_shape, y_shape)
    except ValueError:
        raise ValueError(f"zip: x of shape {x_shape} and y of shape {y_shape} do not broadcast "
                         "together (numpy's rules: align the shapes on the right; each pair of "
                         "sizes must be equal or contain a 1)") from None


def _element_strides(shape, out_shape):
    """Steps (in elements) through a C-contiguous array of ``shape`` broadcast to ``out_shape``."""
    strides, step = np.zeros(len(out_shape), np.int64), 1
    for axis in range(1, len(shape) + 1):
        strides[-axis] = 0 if shape[-axis] == 1 else step
        step *= shape[-axis]
    return strides


# ---------------------------------------------------------------------------------------------
# reduce: shared-memory tree inside each block, one result per block
# ---------------------------------------------------------------------------------------------

@answer("lab5", "reduce_kernel")
def reduce_kernel(fn, dtype):
    """``kernel[(parts, rows), THREADS](x, start, out)``: ``out[r, p]`` reduces part p of row r.

    Block (p, r) reduces the elements p*THREADS + t + s*THREADS*parts (s = 0, 1, ...) of row r of
    the 2-D ``x``; ``start`` is fn's identity (0 for add, -inf for max).
    """
    def make():
        @cuda.jit
        def kernel(x, start, out):
            partial = cuda.shared.array(THREADS, dtype)   # one slot per thread of the block
            t = cuda.threadIdx.x
            for row in range(cuda.blockIdx.y, x.shape[0], cuda.gridDim.y):
                # 1. This thread folds its own elements of the row (coalesced: thread t reads
                #    element t of each stretch of THREADS neighbours).
                acc = start
                for j in range(cuda.blockIdx.x * THREADS + t, x.shape[1], THREADS * cuda.gridDim.x):
                    acc = fn(acc, x[row, j])
                partial[t] = acc
                cuda.syncthreads()   # all slots are written before anyone reads them
                # 2. The tree: each step the first `half` threads fold in the slot `half` above
                #    theirs, so THREADS values become one in log2(THREADS) steps.
                half = THREADS // 2
                while half > 0:
                    if t < half:
                        partial[t] = fn(partial[t], partial[t + half])
                    cuda.syncthreads()   # outside the `if`: every thread of the block must reach it
                    half //= 2
                # 3. Thread 0 writes the block's result.
                if t == 0:
                    out[row, cuda.blockIdx.x] = partial[0]
                cuda.syncthreads()   # slot 0 is read before the next row overwrites it
        return kernel
    return _kernel(("reduce", fn, dtype), make)


def reduce_device(fn, x, start=0.0):
    """Reduce each row of the 2-D device array ``x`` with fn; a device array of x.shape[0] values.

    Launch 1: ``parts`` blocks per row, each leaving one partial result.  Launch 2 (if parts > 1):
    one block per row reduces those partial results.
    """
    rows, n = x.shape
    if rows == 0:
        return cuda.device_array(0, x.dtype)
    kernel = reduce_kernel(fn, from_dtype(x.dtype))
    start = x.dtype.type(start)
    parts = max(1, min(-(-n // THREADS), MAX_BLOCKS // rows))   # ~MAX_BLOCKS blocks in all
    while True:
        out = cuda.device_array((rows, parts), x.dtype)
        kernel[(parts, min(rows, MAX_ROW_BLOCKS)), THREADS](x, start, out)
        if parts == 1:
            return out.reshape(rows)
        x, parts = out, 1


# ---------------------------------------------------------------------------------------------
# matmul: C = A B
# ---------------------------------------------------------------------------------------------

@answer("lab5", "matmul_tiled")
def matmul_naive_kernel(dtype):
    """``kernel[grid, (TILE, TILE)](a, b, c)``: one thread per element of c.

    Thread (x, y) of the grid computes c[y, x] = sum_k a[y, k] b[k, x].  x is the fastest-changing
    thread index, so a warp's threads read 32 neighbouring elements of a row of b (coalesced) and
    all the same a[y, k]; but every thread reads a whole row of a and column of b from global
    memory: 2k loads per 2k flops.
    """
    def make():
        @cuda.jit
        def kernel(a, b, c):
            col, row = cuda.grid(2)
            if row < c.shape[0] and col < c.shape[1]:
                acc = dtype(0)
                for k in range(a.shape[1]):
                    acc += a[row, k] * b[k, col]
                c[row, col] = acc
        return kernel
    return _kernel(("naive", dtype), make)


@answer("lab5", "matmul_tiled")
def matmul_tiled_kernel(dtype, tile=TILE):
    """``kernel[grid, (tile, tile)](a, b, c)``: a block computes one tile x tile tile of c.

    The block walks along k one tile at a time: its threads copy a tile of a and a tile of b into
    shared memory (one element each, coalesced), wait, and then every thread takes its
    tile-long dot product from shared memory.  Each element loaded from global memory is used
    ``tile`` times, so global traffic falls by that factor.  Threads outside a or b load zeros,
    which makes the edge tiles of any shape correct.
    """
    def make():
        @cuda.jit
        def kernel(a, b, c):
            a_tile = cuda.shared.array((tile, tile), dtype)
            b_tile = cuda.shared.array((tile, tile), dtype)
            tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
            row = cuda.blockIdx.y * tile + ty   # the element of c this thread computes
            col = cuda.blockIdx.x * tile + tx
            acc = dtype(0)
            for t in range((a.shape[1] + tile - 1) // tile):
                # Thread (ty, tx) loads a[row, t*tile + tx] and b[t*tile + ty, col]: neighbouring
                # tx read neighbouring addresses, in a and in b.
                k = t * tile + tx
                a_tile[ty, tx] = a[row, k] if row < a.shape[0] and k < a.shape[1] else dtype(0)
                k = t * tile + ty
                b_tile[ty, tx] = b[k, col] if k < b.shape[0] and col < b.shape[1] else dtype(0)
                cuda.syncthreads()   # both tiles are complete before anyone reads them
                for kk in range(tile):
                    acc += a_tile[ty, kk] * b_tile[kk, tx]
                cuda.syncthreads()   # everyone is done reading before the next tiles overwrite
            if row < c.shape[0] and col < c.shape[1]:
                c[row, col] = acc
        return kernel
    return _kernel(("tiled", dtype, tile), make)


def matmul_device(a, b, tiled=True, tile=TILE):
    """a @ b for 2-D device arrays of one dtype, (m, k) @ (k, n) -> a new (m, n) device array."""
    check_matmul(a, b)
    m, n = a.shape[0], b.shape[1]
    c = cuda.device_array((m, n), a.dtype)
    if c.size:
        dtype = from_dtype(a.dtype)
        kernel = matmul_tiled_kernel(dtype, tile) if tiled else matmul_naive_kernel(dtype)
        side = tile if tiled else TILE
        kernel[(-(-n // side), -(-m // side)), (side, side)](a, b, c)   # grid x: columns of c
    return c


# ---------------------------------------------------------------------------------------------
# Host functions: numpy in, numpy out
# ---------------------------------------------------------------------------------------------

def to_device(x):
    """Copy a numpy array to the GPU (C-contiguous, as the kernels expect)."""
    return cuda.to_device(np.asarray(x, order="C"))


def map(fn, x):  # noqa: A001 (the lecture's name)
    """fn applied to every element of the numpy array ``x``."""
    return map_device(fn, to_device(x)).copy_to_host()


def zip(fn, x, y):  # noqa: A001 (the lecture's name)
    """fn(x, y) elementwise with numpy broadcasting; x and y are numpy arrays of one dtype."""
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype != y.dtype:
        raise TypeError(f"zip: x is {x.dtype} and y is {y.dtype}; convert both to one dtype")
    return zip_device(fn, to_device(x), to_device(y)).copy_to_host()


def reduce(fn, x, axis=None, start=0.0):
    """Reduce the numpy array ``x`` with fn over ``axis`` (an int, or None for all elements).

    The reduced axis is moved last on the host, so that each row the kernel reduces is contiguous.
    """
    x = np.asarray(x)
    rows, kept = reduction_rows(x, axis)
    out = reduce_device(fn, to_device(rows), start).copy_to_host()
    return out.reshape(kept) if kept else x.dtype.type(out[0])


def matmul(a, b, tiled=True):
    """a @ b for 2-D numpy arrays of one dtype, with the tiled (default) or the naive kernel."""
    a, b = np.asarray(a), np.asarray(b)
    check_matmul(a, b)
    return matmul_device(to_device(a), to_device(b), tiled).copy_to_host()
