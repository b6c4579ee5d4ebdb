"""Numba kernels for the CPU: map, zip, reduce and a blocked matmul (float32 and float64).

Each kernel is a plain loop that ``@njit`` compiles to machine code, split over the CPU's cores by
``prange``.  Three ideas from the lecture make them fast:

* **contiguous inner loops**: the innermost loop walks memory with stride 1, so LLVM turns it into
  SIMD instructions (8 float32 per AVX2 instruction) and the hardware prefetcher can stream it;
* **blocking (tiling)**: work is cut into pieces whose data fits in cache, so that it is read from
  RAM once and reused from cache many times;
* **register tiles**: the matmul computes a 4 x 3 block of C at once, so every value loaded from
  memory is used 3 or 4 times.

``map_kernel(fn)``, ``zip_kernel(fn)`` (and ``zip_broadcast_kernel``) and ``reduce_kernel(fn)`` are
higher-order, as in the lecture: they take a scalar function and return a compiled kernel.  ``fn``
is a numpy ufunc used on scalars (``np.exp``, ``np.add``, ...) or an ``@njit`` function.  Numba can
cache a kernel on disk (``cache=True``) only when it can name ``fn`` the same way in the next
Python session: a ufunc it can, an ``@njit`` function it cannot, so those kernels are compiled
again in every session.

Two scalar functions are mini's own, written so that a loop of them vectorises: ``exp`` (for
float32 a polynomial; numpy's ``np.exp`` inside a kernel is one call into the C library per
element) and ``ieee_maximum``, which ``reduce`` uses for ``np.maximum``.

The host functions ``map``, ``zip``, ``reduce`` and ``matmul`` take and return numpy arrays.
"""
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic, overload

from mini.kernels.shapes import check_matmul, reduction_rows

# reduce and matmul let LLVM reorder sums (to split them over SIMD lanes) and matmul fuses a*b+c
# into one FMA; unlike fastmath=True this keeps inf and nan behaving as in numpy.  map and zip do
# without: one rounding per operation, as numpy does, so their results equal numpy's exactly.
REORDER_SUMS = {"reassoc"}
FASTMATH = {"reassoc", "contract"}
BLOCK = 4096         # elements per task in reduce and broadcasting zip: enough to hide its cost
ROWS_PER_TASK = 64   # matmul: rows of C per parallel task ...
COLS_PER_TASK = 96   # ... and columns: the task's K_CHUNK x 96 block of B^T (384 KB) stays in L2
K_CHUNK = 1024       # matmul: 4 rows of A and 3 of B^T, K_CHUNK long (28 KB of float32), fit L1
PACK = 16            # matmul: side of the square blocks in which B is transposed

# The scalar functions the backend needs: numpy ufuncs work on scalars inside @njit code; exp is
# mini's own (below), since numpy's is a call into the C library that no loop can vectorise.
log, tanh = np.log, np.tanh
add, subtract, multiply, divide, maximum = np.add, np.subtract, np.multiply, np.divide, np.maximum


# ---------------------------------------------------------------------------------------------
# Scalar functions that LLVM can vectorise
# ---------------------------------------------------------------------------------------------

@intrinsic
def _bits(typingctx, x):
    """The 64 bits of the float64 ``x`` read as an int64 (no conversion: the same bits)."""
    if x != types.float64:
        return None
    return types.int64(x), lambda context, builder, sig, args: builder.bitcast(args[0],
                                                                               ir.IntType(64))


@intrinsic
def _float64(typingctx, i):
    """The 64 bits of the int64 ``i`` read as a float64."""
    if i != types.int64:
        return None
    return types.float64(i), lambda context, builder, sig, args: builder.bitcast(args[0],
                                                                                 ir.DoubleType())


SHIFTER = 1.5 * 2.0 ** 52    # adding it rounds a double to an integer, which lands in its low bits
LOG2_E, LN_2 = 1.4426950408889634, 0.6931471805599453


def _exp_float32(x):
    """e^x for a float32 x in branch-free arithmetic, so that a loop of it runs on SIMD lanes.

    e^x = 2^n e^r with n = round(x / ln 2) and r = x - n ln 2, |r| <= ln(2) / 2, where the degree-7
    Taylor polynomial of e^r is off by under r^8 / 8! < 6e-9 (relative), far below float32's
    6e-8.  The sum runs in float64 and 2^n is made by writing n + 1023 into a double's exponent
    bits, so the one rounding to float32 at the end also makes overflow (inf), underflow (0) and
    the subnormals come out right: within 1 ulp of the exact e^x everywhere.  NaN stays NaN; x
    is first clamped to [-110, 100], beyond which float32's e^x is 0 or inf anyway.
    """
    x = np.float32(100.0) if x > 100.0 else x
    x = np.float32(-110.0) if x < -110.0 else x
    x64 = np.float64(x)
    shifted = x64 * LOG2_E + SHIFTER
    n = shifted - SHIFTER
    r = x64 - n * LN_2
    e_r = 1.0 + r * (1.0 + r * (1 / 2 + r * (1 / 6 + r * (1 / 24 + r * (1 / 120 + r * (
        1 / 720 + r * (1 / 5040)))))))
    two_to_n = _float64((_bits(shifted) - _bits(SHIFTER) + 1023) << 52)
    return np.float32(e_r * two_to_n)


def _exp_for(x):
    """Stand-in that ``overload`` fills with the implementation for x's type."""


@overload(_exp_for, inline="always")
def _exp_implementation(x):
    if x == types.float32:
        return _exp_float32
    return lambda x: np.exp(x)    # float64: the C library's exp, the one numpy calls


@njit
def exp(x):
    """e^x: for float32 mini's vectorisable exp (within 1 ulp; numpy's is within 3), for float64
    the C library's, as numpy."""
    return _exp_for(x)


@intrinsic
def _llvm_maximum(typingctx, a, b):
    """IEEE 754-2019 maximum (LLVM's ``llvm.maximum``): NaN if either is NaN, and -0 < +0."""
    if a not in (types.float32, types.float64) or b != a:
        return None

    def codegen(context, builder, sig, args):
        name = f"llvm.maximum.f{a.bitwidth}"
        fn = builder.module.globals.get(name) or ir.Function(
            builder.module, ir.FunctionType(args[0].type, [args[0].type] * 2), name)
        return builder.call(fn, args)
    return a(a, b), codegen


@njit(inline="always")
def ieee_maximum(a, b):
    """max(a, b), NaN if either is NaN, as np.maximum; but where np.maximum returns ``a`` when
    a == b (so maximum(-0.0, 0.0) is -0.0), this one returns +0.0.  That tie rule is a branch LLVM
    cannot split over SIMD lanes in a reduction; this one it can."""
    return _llvm_maximum(a, b)


# ---------------------------------------------------------------------------------------------
# Compiling a kernel for a scalar function
# ---------------------------------------------------------------------------------------------

_compiled = {}


def _jit(key, fn, make, fastmath=False):
    """Compile ``make(fn)`` once per (kernel kind, fn); cache on disk only when fn is a ufunc."""
    if (key, fn) not in _compiled:
        if not (isinstance(fn, np.ufunc) or hasattr(fn, "py_func")):
            raise TypeError(f"{key}_kernel(fn): fn must be a numpy ufunc or an @njit function, "
                            f"got {fn!r}")
        options = dict(parallel=True, fastmath=fastmath, error_model="numpy",
                       cache=isinstance(fn, np.ufunc))
        _compiled[key, fn] = njit(**options)(make(fn))
    return _compiled[key, fn]


# ---------------------------------------------------------------------------------------------
# map: out[i] = fn(x[i])
# ---------------------------------------------------------------------------------------------

def map_kernel(fn):
    """A parallel kernel ``kernel(x, out)`` with ``out[i] = fn(x[i])`` for flat arrays x, out."""
    def make(fn):
        def kernel(x, out):
            for i in prange(x.size):
                out[i] = fn(x[i])
        return kernel
    return _jit("map", fn, make)


def map(fn, x):  # noqa: A001 (the lecture's name)
    """fn applied to every element of the float array ``x``; same shape and dtype."""
    x = np.asarray(x, order="C")
    out = np.empty_like(x)
    map_kernel(fn)(x.reshape(-1), out.reshape(-1))
    return out


# ---------------------------------------------------------------------------------------------
# zip: out[index] = fn(x[index], y[index]) with numpy broadcasting
# ---------------------------------------------------------------------------------------------

def zip_kernel(fn):
    """A parallel kernel ``kernel(x, y, out)`` with ``out[i] = fn(x[i], y[i])`` for flat arrays.

    The common case, x and y of one shape, needs no index arithmetic at all: the loop is as
    simple as map's, and as fast."""
    def make(fn):
        def kernel(x, y, out):
            for i in prange(out.size):
                out[i] = fn(x[i], y[i])
        return kernel
    return _jit("zip", fn, make)


def zip_broadcast_kernel(fn):
    """A parallel kernel ``kernel(x, x_strides, y, y_strides, out, out_shape)`` for broadcasting.

    ``out`` is the flat C-ordered output of shape ``out_shape``; ``x`` and ``y`` are flat too, and
    ``x_strides[axis]`` says how far to step in ``x`` when the output index moves by one along
    ``axis``: 0 along an axis that x is broadcast over.  Output row ``r`` (all axes but the last)
    starts in x at ``sum(index[axis] * x_strides[axis])``; along the row x moves by
    ``x_strides[-1]``.  Each task does one block of one row, so even a single long row is split.
    """
    def make(fn):
        def kernel(x, x_strides, y, y_strides, out, out_shape):
            cols = out_shape[-1]
            blocks_per_row = (cols + BLOCK - 1) // BLOCK
            for task in prange(out.size // cols * blocks_per_row):
                row, block = divmod(np.int64(task), blocks_per_row)
                x_at, y_at, rest = 0, 0, row
                for axis in range(len(out_shape) - 2, -1, -1):   # unravel the row number
                    rest, index = divmod(rest, out_shape[axis])
                    x_at += index * x_strides[axis]
                    y_at += index * y_strides[axis]
                first = block * BLOCK
                x_at += first * x_strides[-1]
                y_at += first * y_strides[-1]
                out_block = out[row * cols + first:row * cols + min(first + BLOCK, cols)]
                for j in range(out_block.size):
                    out_block[j] = fn(x[x_at + j * x_strides[-1]], y[y_at + j * y_strides[-1]])
        return kernel
    return _jit("zip_broadcast", fn, make)


def zip(fn, x, y):  # noqa: A001 (the lecture's name)
    """fn(x, y) elementwise with numpy broadcasting; x and y are float arrays of one dtype."""
    x, y = np.asarray(x, order="C"), np.asarray(y, order="C")
    if x.dtype != y.dtype:
        raise TypeError(f"zip: x is {x.dtype} and y is {y.dtype}; convert both to one float dtype")
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise ValueError(f"zip: x of shape {x.shape} and y of shape {y.shape} do not broadcast "
                         "together") from None
    out = np.empty(shape, x.dtype)
    if x.shape == y.shape:
        zip_kernel(fn)(x.reshape(-1), y.reshape(-1), out.reshape(-1))
    elif out.size:
        zip_broadcast_kernel(fn)(x.reshape(-1), _element_strides(x, shape), y.reshape(-1),
                                 _element_strides(y, shape), out.reshape(-1),
                                 np.array(shape, np.int64))
    return out


def _element_strides(x, shape):
    """Steps (in elements) through ``x`` broadcast to ``shape``: numpy's strides, 0 if broadcast."""
    return np.array(np.broadcast_to(x, shape).strides, np.int64) // x.itemsize


# ---------------------------------------------------------------------------------------------
# reduce: out[r] = fn(...fn(fn(start, x[r, 0]), x[r, 1])..., x[r, n-1])
# ---------------------------------------------------------------------------------------------

def reduce_kernel(fn):
    """A parallel kernel ``kernel(x, start, out)`` reducing each row of the 2-D ``x`` into ``out``.

    Two levels, like the GPU version: every task reduces one block of BLOCK elements of one row
    to a partial result (a contiguous loop that LLVM splits across SIMD lanes), then the partial
    results of each row are reduced in order.  ``start`` is fn's identity (0 for add, -inf for max).
    """
    def make(fn):
        def kernel(x, start, out):
            rows, n = x.shape
            blocks = (n + BLOCK - 1) // BLOCK
            partial = np.empty((rows, blocks), x.dtype)
            for task in prange(rows * blocks):
                row, block = divmod(np.int64(task), blocks)
                part = x[row, block * BLOCK:min(n, (block + 1) * BLOCK)]
                acc = start
                for j in range(part.size):
                    acc = fn(acc, part[j])
                partial[row, block] = acc
            for row in range(rows):
                acc = start
                for block in range(blocks):
                    acc = fn(acc, partial[row, block])
                out[row] = acc
        return kernel
    return _jit("reduce", fn, make, fastmath=REORDER_SUMS)


def reduce(fn, x, axis=None, start=0.0):
    """Reduce the float array ``x`` with ``fn`` over ``axis`` (an int, or None for all elements).

    The reduced axis is moved last (a copy when it is not last already), so that every reduction
    reads contiguous memory: ``reduce(np.add, x, 0)`` equals ``x.sum(0)``.  For ``np.maximum``
    it runs ``ieee_maximum``, which LLVM vectorises: the same maximum, NaN if any element is NaN.
    """
    x = np.asarray(x)
    rows, kept = reduction_rows(x, axis)
    out = np.empty(rows.shape[0], x.dtype)
    # a max over many elements has no "first argument" for np.maximum's tie rule to favour
    fn = ieee_maximum if fn is np.maximum and x.dtype.kind == "f" else fn
    reduce_kernel(fn)(np.ascontiguousarray(rows), x.dtype.type(start), out)
    return out.reshape(kept) if kept else x.dtype.type(out[0])


# ---------------------------------------------------------------------------------------------
# matmul: C = A B, blocked for the caches, with a 4 x 3 register tile
# ---------------------------------------------------------------------------------------------

@njit(fastmath=FASTMATH, cache=True)
def _register_tile(a0, a1, a2, a3, b0, b1, b2, c, i, j):
    """c[i:i+4, j:j+3] += the 12 dot products of rows a0..a3 of A with rows b0..b2 of B^T.

    The loop runs over contiguous memory, so LLVM vectorizes it along k: each of the 12 sums is
    a vector register of partial sums, and per step it loads 7 vectors and does 12 vector
    multiply-adds.  12 sums + 3 rows of B^T fit AVX2's 16 vector registers; a 4 x 4 tile (16
    sums + 4) does not, and the sums that do not fit go to memory and back every step.
    """
    s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = s30 = s31 = s32 = a0.dtype.type(0)
    for k in range(a0.size):
        x0, x1, x2, x3 = a0[k], a1[k], a2[k], a3[k]
        y0, y1, y2 = b0[k], b1[k], b2[k]
        s00 += x0 * y0; s01 += x0 * y1; s02 += x0 * y2  # noqa: E702
        s10 += x1 * y0; s11 += x1 * y1; s12 += x1 * y2  # noqa: E702
        s20 += x2 * y0; s21 += x2 * y1; s22 += x2 * y2  # noqa: E702
        s30 += x3 * y0; s31 += x3 * y1; s32 += x3 * y2  # noqa: E702
    c0, c1, c2, c3 = c[i], c[i + 1], c[i + 2], c[i + 3]
    c0[j] += s00; c0[j + 1] += s01; c0[j + 2] += s02  # noqa: E702
    c1[j] += s10; c1[j + 1] += s11; c1[j + 2] += s12  # noqa: E702
    c2[j] += s20; c2[j + 1] += s21; c2[j + 2] += s22  # noqa: E702
    c3[j] += s30; c3[j + 1] += s31; c3[j + 2] += s32  # noqa: E702


@njit(fastmath=FASTMATH, cache=True)
def _dot(x, y):
    """sum_k x[k] y[k]: C's last columns when n is not a multiple of the tile's 3."""
    total = x.dtype.type(0)
    for k in range(x.size):
        total += x[k] * y[k]
    return total


@njit(parallel=True, cache=True)
def _pack_transposed(b):
    """B^T as a C-contiguous (n, k) array, copied in PACK x PACK blocks so that both the reads
    and the writes stay within a few cache lines."""
    k, n = b.shape
    bt = np.empty((n, k), b.dtype)
    k_blocks = (k + PACK - 1) // PACK
    for task in prange((n + PACK - 1) // PACK * k_blocks):
        j0, k0 = task // k_blocks * PACK, task % k_blocks * PACK
        src = b[k0:k0 + PACK, j0:j0 + PACK]
        dst = bt[j0:j0 + PACK, k0:k0 + PACK]
        for j in range(src.shape[1]):
            for kk in range(src.shape[0]):
                dst[j, kk] = src[kk, j]
    return bt


@njit(parallel=True, cache=True)
def matmul_kernel(a, bt):
    """C = A B from A (m, k) and B^T (n, k), m a multiple of 4.

    Each parallel task owns a ROWS_PER_TASK x COLS_PER_TASK block of C and walks k in chunks of
    K_CHUNK; within a chunk, 4 rows of A (in L1) meet every 3 rows of B^T of the block (in L2).
    The last n % 3 columns of C are plain dot products.
    """
    m, k = a.shape
    n = bt.shape[0]
    whole = n - n % 3
    c = np.zeros((m, n), a.dtype)
    col_tasks = (n + COLS_PER_TASK - 1) // COLS_PER_TASK
    for task in prange((m + ROWS_PER_TASK - 1) // ROWS_PER_TASK * col_tasks):
        i0, j0 = task // col_tasks * ROWS_PER_TASK, task % col_tasks * COLS_PER_TASK
        j1 = min(j0 + COLS_PER_TASK, n)
        for k0 in range(0, k, K_CHUNK):
            k1 = min(k0 + K_CHUNK, k)
            for i in range(i0, min(i0 + ROWS_PER_TASK, m), 4):
                a0, a1, a2, a3 = a[i, k0:k1], a[i + 1, k0:k1], a[i + 2, k0:k1], a[i + 3, k0:k1]
                for j in range(j0, min(j1, whole), 3):
                    _register_tile(a0, a1, a2, a3, bt[j, k0:k1], bt[j + 1, k0:k1],
                                   bt[j + 2, k0:k1], c, i, j)
                for j in range(max(j0, whole), j1):
                    b_j = bt[j, k0:k1]
                    c[i, j] += _dot(a0, b_j)
                    c[i + 1, j] += _dot(a1, b_j)
                    c[i + 2, j] += _dot(a2, b_j)
                    c[i + 3, j] += _dot(a3, b_j)
    return c


def matmul(a, b):
    """a @ b for 2-D float arrays of one dtype: (m, k) @ (k, n) -> (m, n)."""
    a, b = np.asarray(a), np.asarray(b)
    check_matmul(a, b)
    m = a.shape[0]
    a = np.ascontiguousarray(a)
    if m % 4:   # the register tile takes rows of A four at a time: pad A with zero rows
        a = np.concatenate([a, np.zeros((4 - m % 4, a.shape[1]), a.dtype)])
    return matmul_kernel(a, _pack_transposed(b))[:m]   # first rows of a C array: contiguous
