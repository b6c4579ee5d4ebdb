"""Hidden checks of lab5_kernels: the CUDA kernels map_kernel, zip_kernel, reduce_kernel and
matmul_tiled, run on a GPU or on Numba's CUDA simulator (whichever the notebook's setup cell chose).

Every check launches the student's kernel itself, with a launch configuration it states in its
message (``kernel[blocks, threads](...)``), on inputs drawn from the seed: sizes of 1, sizes smaller
than one block, odd sizes that are no multiple of any tile, and more elements than threads, so that
the grid-stride loop and the edge tiles are exercised.  Output arrays start as NaN, so an element a
kernel never writes shows up as ``got nan``.  Expected values come from numpy in float64 on the
same inputs; nothing here calls mini's kernels, and no expected number is written down.

Sizes stay small (at most ~40 per matrix side, ~1500 elements): on the simulator every CUDA thread
is a Python thread, and one check takes at most a few seconds.  The matmul launch uses the
notebook's ``TILE`` and the reduce launch its ``THREADS`` (the sizes of the kernels' shared arrays);
the shapes drawn do not depend on them.

While lab 5 is graded the worker switches off mini's own CUDA kernels (REFERENCE, see
autograder.guard): a submission must write its kernels, not return mini's.
"""
import math
import warnings

import numpy as np

from autograder.checks import Case

REFERENCE = tuple(f"mini.kernels.cuda.{name}" for name in (
    "map_kernel", "zip_kernel", "reduce_kernel", "matmul_naive_kernel", "matmul_tiled_kernel",
    "map_device", "zip_device", "reduce_device", "matmul_device",
    "map", "zip", "reduce", "matmul"))


# ---------------------------------------------------------------------------------------------
# Launching a student's kernel
# ---------------------------------------------------------------------------------------------

def _launch(kernel, made_by, grid, block, *args):
    """``kernel[grid, block](*args)`` after checking that ``kernel`` is a CUDA kernel."""
    if not (callable(getattr(kernel, "py_func", None)) and hasattr(kernel, "__getitem__")):
        raise TypeError(f"{made_by} should be a CUDA kernel made with @cuda.jit (launched as "
                        f"kernel[blocks, threads](...)), got {type(kernel).__name__} {kernel!r:.60}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # on a GPU: "host array used in kernel", "grid too small"
        kernel[grid, block](*args)


def _structure(kernel, made_by):
    """Which of shared memory and syncthreads the kernel's code refers to, as one sentence."""
    if not callable(getattr(kernel, "py_func", None)):
        raise TypeError(f"{made_by} should be a CUDA kernel made with @cuda.jit, got "
                        f"{type(kernel).__name__}")
    names = set()
    codes = [kernel.py_func.__code__]
    while codes:                           # the kernel's code and any code nested in it
        code = codes.pop()
        names |= set(code.co_names)
        codes += [c for c in code.co_consts if hasattr(c, "co_names")]
    shared = "yes" if "shared" in names else "no"
    sync = "yes" if "syncthreads" in names else "no"
    return f"uses cuda.shared.array: {shared}; calls cuda.syncthreads(): {sync}"


STRUCTURE_OK = "uses cuda.shared.array: yes; calls cuda.syncthreads(): yes"


def _odd(rng, low, high):
    """An odd size in [low, high]: no multiple of any power-of-two tile or block."""
    return int(rng.integers(low // 2, (high - 1) // 2 + 1)) * 2 + 1


def _array(rng, shape, dtype, low=None, high=None):
    if low is None:
        return rng.standard_normal(shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def _nans(shape, dtype):
    return np.full(shape, np.nan, dtype)


# ---------------------------------------------------------------------------------------------
# map_kernel: out[i] = fn(x[i]), grid-stride loop
# ---------------------------------------------------------------------------------------------

# (source as the student reads it, the function, the same function on numpy arrays)
MAP_FUNCTIONS = [
    ("lambda v: 2.0 * v + 1.0", lambda v: 2.0 * v + 1.0, lambda x: 2.0 * x + 1.0),
    ("lambda v: v * v - 3.0 * v", lambda v: v * v - 3.0 * v, lambda x: x * x - 3.0 * x),
    ("lambda v: math.tanh(v)", lambda v: math.tanh(v), np.tanh),
    ("lambda v: math.exp(-v * v)", lambda v: math.exp(-v * v), lambda x: np.exp(-x * x)),
]

MAP_HINT = ("thread g of a grid of G threads must handle elements g, g + G, g + 2G, ... while they "
            "are < out.size (a grid-stride loop: cuda.grid(1) gives g, cuda.gridsize(1) gives G), "
            "and compute out[i] = fn(x[i]) with the device function compiled from fn.")


def _map_case(rng, n, blocks, threads, dtype, hint):
    source, fn, numpy_fn = MAP_FUNCTIONS[int(rng.integers(len(MAP_FUNCTIONS)))]
    x = _array(rng, n, dtype)

    def call(student):
        out = _nans(n, dtype)
        _launch(student.map_kernel(fn), f"map_kernel({source})", blocks, threads, x.copy(), out)
        return out

    return Case(
        what=(f"map_kernel({source}) launched as kernel[{blocks}, {threads}](x, out) on x of "
              f"{n} {np.dtype(dtype).name} elements ({blocks * threads} threads in the grid)"),
        call=call, expected=lambda: numpy_fn(x.astype(np.float64)),
        rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6 if dtype == np.float32 else 1e-12,
        hint=hint)


def map_more_threads_check(rng):
    """More threads than elements: every thread past the end must do nothing."""
    n = int(rng.choice([1, 2, 3, 17, 31]))
    return _map_case(rng, n, 1, 32, np.float64, hint=(
        "there are more threads than elements here: a thread whose index is >= out.size must "
        "not touch x or out. " + MAP_HINT))


def map_grid_stride_check(rng):
    """Far more elements than threads: only a grid-stride loop reaches them all."""
    n = _odd(rng, 301, 799)
    return _map_case(rng, n, 2, 32, np.float64, hint=(
        "there are more elements than threads here, so each thread must loop: an element that "
        "stays nan was never visited. " + MAP_HINT))


def map_float32_check(rng):
    """A (rows, cols) float32 array, flattened as the host wrapper does."""
    rows, cols = _odd(rng, 5, 33), _odd(rng, 17, 65)
    case = _map_case(rng, rows * cols, 3, 32, np.float32, hint=(
        "out has the dtype of x (float32 here); compute fn(x[i]) and store it. " + MAP_HINT))
    case.what += f" (a ({rows}, {cols}) array, flattened)"
    return case


# ---------------------------------------------------------------------------------------------
# zip_kernel: out[i, j] = fn(x[i, j], y[i, j]), 2-D grid, x-threads along columns
# ---------------------------------------------------------------------------------------------

ZIP_FUNCTIONS = [   # the first and the last are not symmetric: fn(x, y) != fn(y, x)
    ("lambda a, b: a - b", lambda a, b: a - b, np.subtract),
    ("lambda a, b: a * b + 1.0", lambda a, b: a * b + 1.0, lambda x, y: x * y + 1.0),
    ("lambda a, b: max(a, b)", lambda a, b: max(a, b), np.maximum),
    ("lambda a, b: a / (1.0 + b * b)", lambda a, b: a / (1.0 + b * b),
     lambda x, y: x / (1.0 + y * y)),
]

ZIP_HINT = ("the x thread index runs along columns and the y index along rows: (col, row) = "
            "cuda.grid(2), (cols, rows) = cuda.gridsize(2); loop rows from row in steps of rows and "
            "columns from col in steps of cols while they are inside out.shape, and compute "
            "out[i, j] = fn(x[i, j], y[i, j]) (in that argument order).")


def _zip_case(rng, shape, grid, block, dtype, hint, functions=ZIP_FUNCTIONS):
    source, fn, numpy_fn = functions[int(rng.integers(len(functions)))]
    x, y = _array(rng, shape, dtype), _array(rng, shape, dtype)

    def call(student):
        out = _nans(shape, dtype)
        _launch(student.zip_kernel(fn), f"zip_kernel({source})", grid, block, x.copy(), y.copy(),
                out)
        return out

    threads = (grid[0] * block[0], grid[1] * block[1])
    return Case(
        what=(f"zip_kernel({source}) launched as kernel[{grid}, {block}](x, y, out) on x, y of "
              f"shape {shape} {np.dtype(dtype).name} (the grid has {threads[0]} threads along "
              f"columns and {threads[1]} along rows)"),
        call=call, expected=lambda: numpy_fn(x.astype(np.float64), y.astype(np.float64)),
        rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6 if dtype == np.float32 else 1e-12,
        hint=hint)


def zip_small_check(rng):
    """Shapes smaller than the grid: threads outside out must do nothing."""
    shape = [(1, 1), (1, int(rng.integers(2, 8))), (int(rng.integers(2, 8)), 1),
             (3, 5)][int(rng.integers(4))]
    return _zip_case(rng, shape, (1, 1), (8, 4), np.float64, hint=(
        "the grid is larger than the array here: threads outside out.shape must not touch it. "
        + ZIP_HINT))


def zip_grid_stride_check(rng):
    """More rows and columns than threads: a grid-stride loop in both directions."""
    shape = (_odd(rng, 9, 33), _odd(rng, 17, 49))
    return _zip_case(rng, shape, (2, 1), (8, 4), np.float64, functions=ZIP_FUNCTIONS[::3], hint=(
        "there are more rows and more columns than threads here, so each thread must loop in both "
        "directions: an element that stays nan was never visited. " + ZIP_HINT))


def zip_float32_check(rng):
    """A non-square float32 array with a 2 x 2 grid of blocks."""
    shape = (_odd(rng, 17, 41), _odd(rng, 33, 65))
    return _zip_case(rng, shape, (2, 2), (8, 4), np.float32, hint=(
        "out has the dtype of x and y (float32 here). " + ZIP_HINT))


# ---------------------------------------------------------------------------------------------
# reduce_kernel: one partial result per block, shared-memory tree
# ---------------------------------------------------------------------------------------------

REDUCE_FUNCTIONS = {
    "add": ("lambda a, b: a + b", lambda a, b: a + b, 0.0, np.sum),
    "max": ("lambda a, b: max(a, b)", lambda a, b: max(a, b), -math.inf, np.max),
}

FOLDED, UNWRITTEN = "partial results folded on the host", "blocks that wrote no partial result"

REDUCE_HINT = ("each thread first folds its grid-stride elements into its own accumulator (starting "
               "from `start`), stores it in a float64 shared array of THREADS slots, and then the "
               "block halves the active slots: for step = THREADS // 2, ..., 1, threads t < step "
               "set cache[t] = fn(cache[t], cache[t + step]), with cuda.syncthreads() after every "
               "step (outside the `if`). Thread 0 then writes cache[0] to partial[cuda.blockIdx.x].")


def _reduce_case(rng, n, blocks, dtype, op, tolerance, hint):
    source, fn, start, numpy_fn = REDUCE_FUNCTIONS[op]
    x = _array(rng, n, dtype)
    if op == "max":                        # all negative: a kernel that starts from 0 shows
        x = (-0.5 - np.abs(x)).astype(dtype)
    # a sum may round at every step (the error grows with sum |x|); a maximum is exact
    scale = float(np.abs(x.astype(np.float64)).sum() if op == "add" else np.abs(x).max())

    def call(student):
        partial = _nans(blocks, dtype)
        _launch(student.reduce_kernel(fn), f"reduce_kernel({source})", blocks, student.THREADS,
                x.copy(), start, partial)
        unwritten = int(np.isnan(partial).sum())
        folded = numpy_fn(partial.astype(np.float64)) if not unwritten else math.nan
        return {FOLDED: folded, UNWRITTEN: unwritten}

    def expected():
        return {FOLDED: numpy_fn(x.astype(np.float64)), UNWRITTEN: 0}

    return Case(
        what=(f"reduce_kernel({source}) launched as kernel[{blocks}, THREADS](x, {start}, partial) "
              f"on x of {n} {np.dtype(dtype).name} elements, partial of {blocks} slots (folded "
              f"with {op} on the host)"),
        call=call, expected=expected, rtol=tolerance, atol=tolerance * scale, hint=hint)


def reduce_tiny_check(rng):
    """Fewer elements than threads, more blocks than needed: idle threads contribute `start`."""
    n = int(rng.choice([1, 2, 3, 5, 7]))
    return _reduce_case(rng, n, 3, np.float64, "add", 1e-6, hint=(
        "most threads (and whole blocks) have no element here: their accumulator stays `start`, "
        "and every block still writes its partial result. " + REDUCE_HINT))


def reduce_sum_check(rng):
    """A float64 sum with more elements than threads, at float64 precision."""
    n = _odd(rng, 601, 1499)
    blocks = int(rng.integers(2, 4))
    return _reduce_case(rng, n, blocks, np.float64, "add", 1e-12, hint=(
        "there are more elements than threads, so each thread must first loop over its "
        "grid-stride elements. The sum is compared at float64 precision (if expected and got look "
        "equal, they differ after the 6th digit: float32 rounding), so keep the shared array "
        "float64. " + REDUCE_HINT))


def reduce_max_check(rng):
    """A float32 maximum of negative numbers: start is -inf, and fn is not addition."""
    n = _odd(rng, 33, 399)
    case = _reduce_case(rng, n, 3, np.float32, "max", 1e-6, hint=(
        "use fn and start, never a hard-coded + or 0: for a maximum, start is -inf (and every "
        "element here is negative). " + REDUCE_HINT))
    case.what += ", all elements negative"
    return case


def reduce_structure_check(rng):
    """The reduction happens in shared memory, with barriers between the tree's steps."""
    def call(student):
        return _structure(student.reduce_kernel(lambda a, b: a + b), "reduce_kernel(fn)")

    return Case(what="the kernel returned by reduce_kernel(lambda a, b: a + b), read as code",
                call=call, expected=lambda: STRUCTURE_OK, hint=(
                    "the lab asks for a shared-memory tree: the block's partial values live in "
                    "cuda.shared.array(THREADS, float64), and cuda.syncthreads() separates the "
                    "steps of the tree."))


# ---------------------------------------------------------------------------------------------
# matmul_tiled: C = A B with shared-memory tiles
# ---------------------------------------------------------------------------------------------

MATMUL_HINT = ("block (bx, by) computes the TILE x TILE tile of C at rows by*TILE.., columns "
               "bx*TILE..; for each tile t along k, thread (ty, tx) loads A[row, t*TILE + tx] and "
               "B[t*TILE + ty, col] into the shared tiles, or 0.0 when that index is outside A or "
               "B, then cuda.syncthreads(), adds its TILE products, cuda.syncthreads() again; at "
               "the end it writes C[row, col] only if row < M and col < N.")


def _matmul_case(rng, shape, dtype, hint, tolerance=1e-6):
    """Compared with float64 numpy; ``tolerance`` relative to max(|A| |B|), so that only the
    precision check (1e-12) fails for float32 tiles and the others point at indexing."""
    m, k, n = shape
    a, b = _array(rng, (m, k), dtype), _array(rng, (k, n), dtype)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    scale = float((np.abs(a64) @ np.abs(b64)).max())
    tolerance = 1e-5 if dtype == np.float32 else tolerance

    def call(student):
        tile = int(student.TILE)
        c = _nans((m, n), dtype)
        grid = (-(-n // tile), -(-m // tile))
        _launch(student.matmul_tiled, "matmul_tiled", grid, (tile, tile), a.copy(), b.copy(), c)
        return c

    return Case(
        what=(f"matmul_tiled launched as kernel[(ceil(N/TILE), ceil(M/TILE)), (TILE, TILE)](A, B, "
              f"C) on A of shape {(m, k)} and B of shape {(k, n)}, {np.dtype(dtype).name}"),
        call=call, expected=lambda: a64 @ b64, rtol=tolerance, atol=tolerance * scale, hint=hint)


def matmul_tiny_check(rng):
    """Every side smaller than a tile: most threads of the single block are outside A, B and C."""
    shape = tuple(int(d) for d in rng.integers(1, 4, size=3))
    return _matmul_case(rng, shape, np.float64, hint=(
        "the whole product fits in one tile here: threads outside A or B load 0.0 into the tiles, "
        "and threads outside C write nothing. " + MATMUL_HINT))


def matmul_multiple_check(rng):
    """Sides that are multiples of 16 (so of any tile of 4, 8 or 16): no edge tiles at all."""
    shape = tuple(int(d) for d in rng.choice([16, 32], size=3))
    if shape == (32, 32, 32):
        shape = (32, 16, 32)
    return _matmul_case(rng, shape, np.float64, hint=(
        "no edge tiles here, so look at the tile indexing: A's tile is read along its row, B's "
        "along its column, and the inner loop multiplies a_tile[ty, kk] by b_tile[kk, tx]. "
        + MATMUL_HINT))


def matmul_awkward_check(rng):
    """Odd sides (no multiple of any tile), at float64 precision (float32 tiles fail here)."""
    shape = (_odd(rng, 5, 39), _odd(rng, 5, 39), _odd(rng, 5, 39))
    return _matmul_case(rng, shape, np.float64, tolerance=1e-12, hint=(
        "no side is a multiple of the tile here, so the last tile in each direction hangs over "
        "the edge. float64 is compared at float64 precision (if expected and got look equal, "
        "they differ after the 6th digit: float32 rounding), so make the shared tiles float64. "
        + MATMUL_HINT))


def matmul_thin_check(rng):
    """A single row or a single column of C, with an odd inner size."""
    m, k, n = 1, _odd(rng, 5, 39), _odd(rng, 5, 39)
    shape = (m, k, n) if rng.random() < 0.5 else (n, k, m)
    return _matmul_case(rng, shape, np.float64, hint=(
        "C is a single row or column here: the grid has one block along that direction. "
        + MATMUL_HINT))


def matmul_float32_check(rng):
    """Odd sides in float32."""
    shape = (_odd(rng, 5, 39), _odd(rng, 5, 39), _odd(rng, 5, 39))
    return _matmul_case(rng, shape, np.float32, hint="C has the dtype of A and B (float32 here). "
                        + MATMUL_HINT)


def matmul_structure_check(rng):
    """The product is tiled: shared memory, and barriers around its use."""
    def call(student):
        return _structure(student.matmul_tiled, "matmul_tiled")

    return Case(what="matmul_tiled, read as code", call=call, expected=lambda: STRUCTURE_OK,
                hint=("the lab asks for a tiled kernel: tiles of A and B are staged in "
                      "cuda.shared.array((TILE, TILE), float64) and cuda.syncthreads() separates "
                      "loading a tile from using it (a naive one-thread-per-element kernel gets "
                      "the numbers right but is not what this cell grades)."))


CHECKS = {
    "map_kernel": [map_more_threads_check, map_grid_stride_check, map_float32_check],
    "zip_kernel": [zip_small_check, zip_grid_stride_check, zip_float32_check],
    "reduce_kernel": [reduce_tiny_check, reduce_sum_check, reduce_max_check,
                      reduce_structure_check],
    "matmul_tiled": [matmul_tiny_check, matmul_multiple_check, matmul_awkward_check,
                     matmul_thin_check, matmul_float32_check, matmul_structure_check],
}
