"""Numba kernels for the CPU: map, zip, reduce and a blocked matmul (float32 and float64).

Each kernel is a plain loop that ``@njit`` compiles to machine code, split over the CPU's cores by
``prange``.  Three ideas from the lecture make them fast:

* **contiguous inner loops**: the innermost loop walks memory with stride 1, so LLVM turns it into
  SIMD instructions (8 float32 per AVX2 instruction) and the hardware prefetcher can stream it;
* **blocking (tiling)**: work is cut into pieces whose data fits in cache, so that it is read from
  RAM once and reused from cache many times;
* **register tiles**: the matmul computes a block of C of 6 rows by 2 SIMD vectors at once (6 x 32
  float32 with AVX-512) in 12 vector registers, so every value loaded from memory is used 2 or 6
  times.

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
from numba.core.registry import cpu_target
from numba.extending import intrinsic, models, overload, register_model

from mini.kernels.shapes import check_matmul, reduction_rows

# reduce lets LLVM reorder sums (to split them over SIMD lanes); unlike fastmath=True this keeps
# inf and nan behaving as in numpy.  map and zip do without: one rounding per operation, as numpy
# does, so their results equal numpy's exactly.
REORDER_SUMS = {"reassoc"}
BLOCK = 4096         # elements per task in reduce and broadcasting zip: enough to hide its cost

# matmul's SIMD vectors are one register of the CPU that Numba compiles for: 64 bytes (16 float32)
# with AVX-512, else 32 (AVX2; on older CPUs LLVM splits each vector into two or four registers).
VECTOR_BYTES = 64 if "+avx512f" in cpu_target.target_context.codegen().magic_tuple()[2] else 32
TILE_ROWS = 6          # matmul's register tile: 6 rows of C by 2 vectors (6 x 32 float32)
K_CHUNK = 512          # k's per packed block of B; a task's K_CHUNK x COLS_PER_TASK block of B
COLS_PER_TASK = 128    # (256 KB of float32, 512 KB of float64) stays in L2 while the tiles of
ROWS_PER_TASK = 258    # 43 x 6 rows of A use it: a task makes a 258 x 128 block of C

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
    return lambda x: np.exp(x)    # float64: the C library's exp


@njit(fastmath={"contract"})
def exp(x):
    """e^x: for float32 mini's vectorisable exp (within 1 ulp; numpy's is within 3), for float64
    the C library's (numpy's too, except on CPUs with AVX-512, where numpy has SIMD code of its
    own, within 1 ulp of it).

    ``contract`` lets LLVM fuse each multiply and the add after it into one FMA instruction,
    rounded once.  Without it the float32 loop did twice the arithmetic and took 1.7 times as
    long as numpy's exp on one core; with it every step is as accurate or more.  It is set here
    alone: other functions that map and zip run keep numpy's one rounding per operation."""
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
# matmul: C = A B, blocked for the caches, with a register tile of 6 rows by 2 SIMD vectors
# ---------------------------------------------------------------------------------------------
#
# The design of GotoBLAS and BLIS, in three levels:
#
# * a parallel task owns a ROWS_PER_TASK x COLS_PER_TASK block of C and walks k in chunks of
#   K_CHUNK values;
# * for each chunk it packs (copies) its K_CHUNK x COLS_PER_TASK block of B into panels as wide as
#   the register tile, each panel's rows one after the other, so that the tile reads a panel
#   straight through; the packed block (256 KB of float32) stays in L2 while every 6 rows of the
#   task's A meet its panels in turn;
# * the register tile, 6 rows by 2 SIMD vectors of C, stays in 12 registers for a whole chunk.
#
# The tile's SIMD instructions are written out with four small intrinsics: LLVM vectorises a
# loop along its own index only, and the tile's 12 sums are 12 separate chains of multiply-adds,
# which only LLVM's SLP vectorizer (which Numba leaves off) would merge into vector instructions.

class _Vector(types.Type):
    """The Numba type of one SIMD register's worth of floats: VECTOR_BYTES of ``dtype``."""

    def __init__(self, dtype):
        self.dtype = dtype
        self.lanes = VECTOR_BYTES * 8 // dtype.bitwidth
        super().__init__(name=f"_Vector({dtype} x {self.lanes})")


@register_model(_Vector)
class _VectorModel(models.PrimitiveModel):
    """A _Vector is an LLVM vector (``<16 x float>``, ...), which LLVM keeps in a register."""

    def __init__(self, dmm, fe_type):
        lane = dmm.lookup(fe_type.dtype).get_value_type()
        super().__init__(dmm, fe_type, ir.VectorType(lane, fe_type.lanes))


def _address(context, builder, array_type, array, index, vector):
    """LLVM pointer to ``array[index]`` of the 1-D contiguous ``array``, typed as a vector's."""
    data = context.make_array(array_type)(context, builder, array).data
    return builder.bitcast(builder.gep(data, [index]), context.get_value_type(vector).as_pointer())


@intrinsic
def _load(typingctx, array, index):
    """``array[index:index + lanes]`` as one vector: a single SIMD load (no bounds check)."""
    if not (isinstance(array, types.Array) and array.ndim == 1 and array.layout == "C"
            and isinstance(index, types.Integer)):
        return None
    vector = _Vector(array.dtype)

    def codegen(context, builder, sig, args):
        address = _address(context, builder, sig.args[0], args[0], args[1], vector)
        return builder.load(address, align=array.dtype.bitwidth // 8)
    return vector(array, types.intp), codegen


@intrinsic
def _store(typingctx, array, index, value):
    """``array[index:index + lanes] = value``: a single SIMD store (no bounds check)."""
    if not (isinstance(array, types.Array) and array.ndim == 1 and array.layout == "C"
            and isinstance(index, types.Integer) and value == _Vector(array.dtype)):
        return None

    def codegen(context, builder, sig, args):
        address = _address(context, builder, sig.args[0], args[0], args[1], value)
        builder.store(args[2], address, align=array.dtype.bitwidth // 8)
    return types.none(array, types.intp, value), codegen


@intrinsic
def _broadcast(typingctx, x):
    """The vector with ``x`` in every lane (x86: one broadcast instruction, from memory)."""
    if x not in (types.float32, types.float64):
        return None
    vector = _Vector(x)

    def codegen(context, builder, sig, args):
        lanes = ir.Constant(context.get_value_type(vector), ir.Undefined)
        first = builder.insert_element(lanes, args[0], ir.Constant(ir.IntType(32), 0))
        everywhere = ir.Constant(ir.VectorType(ir.IntType(32), vector.lanes), [0] * vector.lanes)
        return builder.shuffle_vector(first, lanes, everywhere)
    return vector(x), codegen


@intrinsic
def _fma(typingctx, x, y, z):
    """``x * y + z`` lane by lane, as one FMA instruction where the CPU has one (LLVM's
    ``llvm.fmuladd``; on a CPU without FMA, a multiply and an add)."""
    if not (isinstance(x, _Vector) and y == x and z == x):
        return None

    def codegen(context, builder, sig, args):
        name = f"llvm.fmuladd.v{x.lanes}f{x.dtype.bitwidth}"
        vector = args[0].type
        fn = builder.module.globals.get(name) or ir.Function(
            builder.module, ir.FunctionType(vector, [vector] * 3), name)
        return builder.call(fn, args)
    return x(x, y, z), codegen


@njit(cache=True)
def _register_tile(a, i, k0, k1, panel, c, ci, j):
    """``c[ci:ci+6, j:j+2V] = c's values (0 if k0 is 0) + a[i:i+6, k0:k1] @ panel``.

    V is the lanes per vector (16 float32 or 8 float64 with AVX-512) and ``panel`` the packed
    ``B[k0:k1, j:j+2V]``: for each k its 2V values side by side.  Per k the loop loads them as 2
    vectors, broadcasts each of the 6 values ``a[i+r, k]`` to a vector and does 12 vector FMAs
    (an outer product) into the 12 accumulators.  12 + 2 + 1 = 15 registers: it fits AVX2's 16
    (and AVX-512's 32), and each k takes 8 loads for 12 FMAs, so loads do not hold the FMAs up.
    Rows of ``a`` past its end repeat its last row; ``_edge_tile`` drops their results.
    """
    lanes = VECTOR_BYTES // a.itemsize
    last = a.shape[0] - 1
    a0, a1, a2 = a[i], a[min(i + 1, last)], a[min(i + 2, last)]
    a3, a4, a5 = a[min(i + 3, last)], a[min(i + 4, last)], a[min(i + 5, last)]
    c0, c1, c2, c3, c4, c5 = c[ci], c[ci + 1], c[ci + 2], c[ci + 3], c[ci + 4], c[ci + 5]
    if k0 == 0:   # C starts uninitialised (np.empty): the first chunk of k sets it
        s00 = s01 = s10 = s11 = s20 = s21 = s30 = s31 = s40 = s41 = s50 = s51 = _broadcast(
            a.dtype.type(0))
    else:
        s00, s01 = _load(c0, j), _load(c0, j + lanes)
        s10, s11 = _load(c1, j), _load(c1, j + lanes)
        s20, s21 = _load(c2, j), _load(c2, j + lanes)
        s30, s31 = _load(c3, j), _load(c3, j + lanes)
        s40, s41 = _load(c4, j), _load(c4, j + lanes)
        s50, s51 = _load(c5, j), _load(c5, j + lanes)
    p = 0
    for k in range(k0, k1):
        b0, b1 = _load(panel, p), _load(panel, p + lanes)
        p += 2 * lanes
        x = _broadcast(a0[k]); s00 = _fma(x, b0, s00); s01 = _fma(x, b1, s01)  # noqa: E702
        x = _broadcast(a1[k]); s10 = _fma(x, b0, s10); s11 = _fma(x, b1, s11)  # noqa: E702
        x = _broadcast(a2[k]); s20 = _fma(x, b0, s20); s21 = _fma(x, b1, s21)  # noqa: E702
        x = _broadcast(a3[k]); s30 = _fma(x, b0, s30); s31 = _fma(x, b1, s31)  # noqa: E702
        x = _broadcast(a4[k]); s40 = _fma(x, b0, s40); s41 = _fma(x, b1, s41)  # noqa: E702
        x = _broadcast(a5[k]); s50 = _fma(x, b0, s50); s51 = _fma(x, b1, s51)  # noqa: E702
    _store(c0, j, s00); _store(c0, j + lanes, s01)  # noqa: E702
    _store(c1, j, s10); _store(c1, j + lanes, s11)  # noqa: E702
    _store(c2, j, s20); _store(c2, j + lanes, s21)  # noqa: E702
    _store(c3, j, s30); _store(c3, j + lanes, s31)  # noqa: E702
    _store(c4, j, s40); _store(c4, j + lanes, s41)  # noqa: E702
    _store(c5, j, s50); _store(c5, j + lanes, s51)  # noqa: E702


@njit(cache=True)
def _edge_tile(a, i, k0, k1, panel, c, j, scratch):
    """The register tile where C ends inside it (its last rows or columns): computed into the
    6 x 2V ``scratch``, of which the part inside C is copied in and out."""
    rows, cols = min(TILE_ROWS, c.shape[0] - i), min(scratch.shape[1], c.shape[1] - j)
    for r in range(rows if k0 > 0 else 0):
        for col in range(cols):
            scratch[r, col] = c[i + r, j + col]
    origin = np.int64(0)   # typed, not a literal 0, for which Numba would compile the tile again
    _register_tile(a, i, k0, k1, panel, scratch, origin, origin)
    for r in range(rows):
        for col in range(cols):
            c[i + r, j + col] = scratch[r, col]


@njit(cache=True)
def _pack(b, k0, k1, j0, j1, packed):
    """Copy ``B[k0:k1, j0:j1]`` into ``packed`` as panels 2V columns wide, one after the other:
    panel q holds, for each k in turn, ``B[k, j0 + 2Vq : j0 + 2V(q+1)]``, zeros past j1.  Rows of
    B are read in order, whole vectors at a time."""
    lanes = VECTOR_BYTES // b.itemsize
    width, depth = 2 * lanes, k1 - k0
    whole = (j1 - j0) // width                 # panels that lie inside B
    for k in range(depth):
        row = b[k0 + k]
        for q in range(whole):
            for v in range(0, width, lanes):
                _store(packed, (q * depth + k) * width + v, _load(row, j0 + q * width + v))
    first = j0 + whole * width
    if first < j1:                             # the last columns of B: one panel padded with 0
        panel = packed[whole * depth * width:(whole + 1) * depth * width]
        for k in range(depth):
            for col in range(width):
                panel[k * width + col] = b[k0 + k, first + col] if first + col < j1 else 0


@njit(parallel=True, cache=True)
def matmul_kernel(a, b):
    """C = A B for C-contiguous A (m, k) and B (k, n), k > 0, in tasks as described above.

    Within a chunk, the 6 rows of A of one tile (12 KB of float32) are read from L2 once for each
    of the task's COLS_PER_TASK / 2V panels, each panel (64 KB) once for each 6 rows of the task,
    and each tile of C once: 150 bytes per 12 FMAs, which L2 delivers in time.
    """
    m, k = a.shape
    n = b.shape[1]
    width = 2 * VECTOR_BYTES // a.itemsize       # columns of a panel, and of the register tile
    c = np.empty((m, n), a.dtype)               # the first chunk of k sets every element
    col_tasks = (n + COLS_PER_TASK - 1) // COLS_PER_TASK
    for task in prange((m + ROWS_PER_TASK - 1) // ROWS_PER_TASK * col_tasks):
        i0, j0 = task // col_tasks * ROWS_PER_TASK, task % col_tasks * COLS_PER_TASK
        i1, j1 = min(i0 + ROWS_PER_TASK, m), min(j0 + COLS_PER_TASK, n)
        packed = np.empty(K_CHUNK * COLS_PER_TASK, a.dtype)
        scratch = np.empty((TILE_ROWS, width), a.dtype)
        for k0 in range(0, k, K_CHUNK):
            k1 = min(k0 + K_CHUNK, k)
            _pack(b, k0, k1, j0, j1, packed)
            size = (k1 - k0) * width             # of one panel
            for i in range(i0, i1, TILE_ROWS):
                for j in range(j0, j1, width):
                    q = (j - j0) // width
                    panel = packed[q * size:(q + 1) * size]
                    if i + TILE_ROWS <= m and j + width <= n:
                        _register_tile(a, i, k0, k1, panel, c, i, j)
                    else:
                        _edge_tile(a, i, k0, k1, panel, c, j, scratch)
    return c


def matmul(a, b):
    """a @ b for 2-D float arrays of one dtype: (m, k) @ (k, n) -> (m, n)."""
    a, b = np.asarray(a), np.asarray(b)
    check_matmul(a, b)
    if a.shape[1] == 0:   # sums of nothing: the kernel, which sets C from k's first chunk, has none
        return np.zeros((a.shape[0], b.shape[1]), a.dtype)
    return matmul_kernel(np.ascontiguousarray(a), np.ascontiguousarray(b))
