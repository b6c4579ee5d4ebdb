"""Hidden checks of lab5_kernels: the CUDA kernels map_kernel, zip_kernel, reduce_kernel,
matmul_tiled and spmv_kernel, the CSR conversion to_csr and the row-sparse embedding_grad.

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
import collections
import math
import warnings

import numpy as np

from autograder.checks import Case, instrument

REFERENCE = tuple(f"mini.kernels.cuda.{name}" for name in (
    "map_kernel", "zip_kernel", "reduce_kernel", "matmul_naive_kernel", "matmul_tiled_kernel",
    "map_device", "zip_device", "reduce_device", "matmul_device",
    "map", "zip", "reduce", "matmul")) + tuple(f"mini.kernels.sparse.{name}" for name in (
        "from_dense", "spmv_cuda", "spmm_cuda", "_cuda_kernels"))

WORK_TILE, WORK_THREADS = 4, 16          # TILE and THREADS during the counted launches


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


def _odd(rng, low, high):
    """An odd size in [low, high]: no multiple of any power-of-two tile or block."""
    return int(rng.integers(low // 2, (high - 1) // 2 + 1)) * 2 + 1


def _array(rng, shape, dtype, low=None, high=None):
    if low is None:
        return rng.standard_normal(shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def _nans(shape, dtype):
    return np.full(shape, np.nan, dtype)


def _work(tally, read, write, extra):
    """What the threads of a counted launch did with the arrays named ``read`` and ``write``
    (plus ``extra``): the measured side of a work check."""
    return {"accesses of more than one element at once": tally.bulk(),
            f"elements of {read} read by the busiest thread": tally.most([read], "reads"),
            f"threads that read {read}": tally.busy([read], "reads"),
            f"elements of {write} written by the busiest thread": tally.most([write], "writes"),
            **extra}


def _work_expected(n, threads, read, write, extra, writes=None):
    """The same for the lab's algorithm, where thread g of ``threads`` handles the elements
    g, g + threads, ... of ``n``: every thread does its share, and no more."""
    share = -(-n // threads)
    return {"accesses of more than one element at once": 0,
            f"elements of {read} read by the busiest thread": share,
            f"threads that read {read}": min(n, threads),
            f"elements of {write} written by the busiest thread": share if writes is None else writes,
            **extra}


WORK_HINT = ("thread g of the G threads in the grid handles the elements g, g + G, g + 2G, ... "
             "one at a time: numpy inside a kernel (a slice, or an array handed to numpy), or one "
             "thread looping over everything, gives the right numbers but is not a kernel that "
             "spreads the work over threads.")


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
    rows, cols = _odd(rng, 5, 17), _odd(rng, 17, 33)
    case = _map_case(rng, rows * cols, 3, 32, np.float32, hint=(
        "out has the dtype of x (float32 here); compute fn(x[i]) and store it. " + MAP_HINT))
    case.what += f" (a ({rows}, {cols}) array, flattened)"
    return case


def map_work_check(rng):
    """Counted: every thread maps its own share of the elements, one at a time."""
    n, blocks, threads = _odd(rng, 41, 79), 2, 8
    x = _array(rng, n, np.float64)

    def call(student):
        kernel = student.map_kernel(lambda v: 2.0 * v + 1.0)
        tally, _ = instrument.launch(kernel, "map_kernel(lambda v: 2.0 * v + 1.0)", blocks,
                                     threads, {"x": x, "out": _nans(n, np.float64)})
        return _work(tally, "x", "out", {})

    return Case(what=(f"map_kernel(lambda v: 2.0 * v + 1.0) launched as kernel[{blocks}, {threads}]"
                      f"(x, out) on {n} elements, every thread's reads and writes counted"),
                call=call, expected=lambda: _work_expected(n, blocks * threads, "x", "out", {}),
                hint=WORK_HINT)


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
    shape = (_odd(rng, 9, 21), _odd(rng, 17, 33))
    return _zip_case(rng, shape, (2, 2), (8, 4), np.float32, hint=(
        "out has the dtype of x and y (float32 here). " + ZIP_HINT))


def zip_work_check(rng):
    """Counted: each thread its share; neighbouring x threads start on neighbouring columns."""
    shape, grid, block = (_odd(rng, 9, 15), _odd(rng, 17, 23)), (1, 1), (4, 2)
    x, y = _array(rng, shape, np.float64), _array(rng, shape, np.float64)
    threads = block[0] * block[1]
    share = -(-shape[0] // block[1]) * -(-shape[1] // block[0])
    first = "elements first written by threads (x=0, y=0) and (x=1, y=0), as (row, column)"

    def call(student):
        kernel = student.zip_kernel(lambda a, b: a - b)
        tally, arrays = instrument.launch(kernel, "zip_kernel(lambda a, b: a - b)", grid, block,
                                          {"x": x, "y": y, "out": _nans(shape, np.float64)})
        writes = arrays["out"].first_writes
        return {**_work(tally, "x", "out", {}),
                first: [list(writes.get(((0, 0, 0), (t, 0, 0)), [-1, -1])) for t in (0, 1)]}

    def expected():
        work = _work_expected(x.size, threads, "x", "out", {})
        work["elements of x read by the busiest thread"] = share
        work["elements of out written by the busiest thread"] = share
        return {**work, first: [[0, 0], [0, 1]]}

    return Case(what=(f"zip_kernel(lambda a, b: a - b) launched as kernel[{grid}, {block}](x, y, "
                      f"out) on shape {shape}, every thread's reads and writes counted"),
                call=call, expected=expected, hint=(
                    "threads next to each other in x (threadIdx.x) must work on neighbouring "
                    "COLUMNS of one row, so that a warp's reads are coalesced: (col, row) = "
                    "cuda.grid(2). " + WORK_HINT))


# ---------------------------------------------------------------------------------------------
# reduce_kernel: one partial result per block, shared-memory tree
# ---------------------------------------------------------------------------------------------

REDUCE_FUNCTIONS = {
    "add": ("lambda a, b: a + b", lambda a, b: a + b, 0.0, np.sum),
    "max": ("lambda a, b: max(a, b)", lambda a, b: max(a, b), -math.inf, np.max),
}

FOLDED, UNWRITTEN = "partial results folded on the host", "blocks that wrote no partial result"

REDUCE_HINT = ("each thread first folds its grid-stride elements into its own accumulator (starting "
               "from `start`), stores it in a shared array of THREADS slots of x's dtype, then the "
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
                x.copy(), x.dtype.type(start), partial)
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
    n = _odd(rng, 401, 899)
    blocks = int(rng.integers(2, 4))
    return _reduce_case(rng, n, blocks, np.float64, "add", 1e-12, hint=(
        "there are more elements than threads, so each thread must first loop over its "
        "grid-stride elements. The sum is compared at float64 precision (if expected and got look "
        "equal, they differ after the 6th digit: float32 rounding), so give the shared array x's "
        "dtype. " + REDUCE_HINT))


def reduce_max_check(rng):
    """A float32 maximum of negative numbers: start is -inf, and fn is not addition."""
    n = _odd(rng, 33, 399)
    case = _reduce_case(rng, n, 3, np.float32, "max", 1e-6, hint=(
        "use fn and start, never a hard-coded + or 0: for a maximum, start is -inf (and every "
        "element here is negative). " + REDUCE_HINT))
    case.what += ", all elements negative"
    return case


def reduce_work_check(rng):
    """Counted: each thread folds its share, the tree reads shared memory between barriers."""
    n = _odd(rng, 2 * WORK_THREADS + 1, 5 * WORK_THREADS)
    blocks = 2
    x = _array(rng, n, np.float32)
    steps = int(math.log2(WORK_THREADS))

    def call(student):
        partial = _nans(blocks, np.float32)
        with student.using(THREADS=WORK_THREADS):
            kernel = student.reduce_kernel(lambda a, b: a + b)
            tally, _ = instrument.launch(kernel, "reduce_kernel(lambda a, b: a + b)", blocks,
                                         WORK_THREADS, {"x": x.copy(), "start": np.float32(0.0),
                                                        "partial": partial})
        shared = [f"shared {i}" for i in range(len(tally.shared_dtypes))]
        return _work(tally, "x", "partial", {
            "threads that wrote partial": tally.busy(["partial"], "writes"),
            "shared-memory reads by the busiest thread (counted up to log2(THREADS))":
                min(tally.most(shared, "reads"), steps),
            "barriers per thread (counted up to log2(THREADS))":
                min(tally.fewest(["barrier"], "calls"), steps),
            "threads whose number of barriers differs from the others'":
                tally.threads - max(collections.Counter(tally.per_thread(["barrier"], "calls"))
                                    .values()),
            "dtypes of the shared arrays": sorted(set(tally.shared_dtypes))})

    def expected():
        return _work_expected(n, blocks * WORK_THREADS, "x", "partial", {
            "threads that wrote partial": blocks,
            "shared-memory reads by the busiest thread (counted up to log2(THREADS))": steps,
            "barriers per thread (counted up to log2(THREADS))": steps,
            "threads whose number of barriers differs from the others'": 0,
            "dtypes of the shared arrays": ["float32"]}, writes=1)

    return Case(what=(f"reduce_kernel(lambda a, b: a + b) launched as kernel[{blocks}, THREADS]"
                      f"(x, 0.0, partial) with THREADS = {WORK_THREADS} on {n} float32 elements, "
                      "every thread's reads, writes and barriers counted"),
                call=call, expected=expected, hint=(
                    "the lab's reduction splits the work: thread g folds only x[g], x[g + G], "
                    "..., the block combines the THREADS values in a shared array of x's dtype "
                    "(the tree reads it: fn(cache[t], cache[t + step])), every thread reaches "
                    "every cuda.syncthreads(), and only thread 0 of each block writes partial. "
                    "numpy inside a kernel, or one thread looping over everything, does not "
                    "count."))


# ---------------------------------------------------------------------------------------------
# matmul_tiled: C = A B with shared-memory tiles
# ---------------------------------------------------------------------------------------------

MATMUL_HINT = ("block (bx, by) computes the TILE x TILE tile of C at rows by*TILE.., columns "
               "bx*TILE..; for each tile t along k, thread (ty, tx) loads A[row, t*TILE + tx] and "
               "B[t*TILE + ty, col] into the shared tiles, or 0.0 when that index is outside A or "
               "B, then cuda.syncthreads(), adds its TILE products, cuda.syncthreads() again; at "
               "the end it writes C[row, col] only if row < M and col < N. The tiles and the accumulator "
               "have A's dtype.")


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
    shape = [16, 16, 16]
    shape[int(rng.integers(3))] = 32
    shape = tuple(shape)
    return _matmul_case(rng, shape, np.float64, hint=(
        "no edge tiles here, so look at the tile indexing: A's tile is read along its row, B's "
        "along its column, and the inner loop multiplies a_tile[ty, kk] by b_tile[kk, tx]. "
        + MATMUL_HINT))


def matmul_awkward_check(rng):
    """Odd sides (no multiple of any tile), at float64 precision (float32 tiles fail here)."""
    shape = (_odd(rng, 5, 23), _odd(rng, 5, 23), _odd(rng, 5, 23))
    return _matmul_case(rng, shape, np.float64, tolerance=1e-12, hint=(
        "no side is a multiple of the tile here, so the last tile in each direction hangs over "
        "the edge. float64 is compared at float64 precision (if expected and got look equal, "
        "they differ after the 6th digit: float32 rounding), so give the tiles A's dtype. "
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
    shape = (_odd(rng, 5, 23), _odd(rng, 5, 23), _odd(rng, 5, 23))
    return _matmul_case(rng, shape, np.float32, hint="C has the dtype of A and B (float32 here). "
                        + MATMUL_HINT)


def matmul_work_check(rng):
    """Counted: tiles loaded cooperatively, read from shared memory, two barriers per tile."""
    m, k, n = (_odd(rng, WORK_TILE + 1, 2 * WORK_TILE - 1) for _ in range(3))
    a, b = _array(rng, (m, k), np.float32), _array(rng, (k, n), np.float32)
    steps, grid = -(-k // WORK_TILE), (-(-n // WORK_TILE), -(-m // WORK_TILE))

    def call(student):
        with student.using(TILE=WORK_TILE):
            tally, _ = instrument.launch(student.matmul_tiled, "matmul_tiled", grid,
                                         (WORK_TILE, WORK_TILE), {"A": a, "B": b,
                                                                  "C": _nans((m, n), np.float32)})
        shared = [f"shared {i}" for i in range(len(tally.shared_dtypes))]
        return {
            "loads from A and B by the busiest thread": tally.most(["A", "B"], "reads"),
            "shared-memory reads by the busiest thread (counted up to 2 K)":
                min(tally.most(shared, "reads"), 2 * k),
            "barriers per thread (fewest, most)": [tally.fewest(["barrier"], "calls"),
                                                   tally.most(["barrier"], "calls")],
            "elements of C written by the busiest thread": tally.most(["C"], "writes"),
            "elements of C written": tally.total(["C"], "writes"),
            "accesses of more than one element at once": tally.bulk(),
            "dtypes of the shared arrays": sorted(set(tally.shared_dtypes))}

    def expected():
        return {"accesses of more than one element at once": 0,
                "loads from A and B by the busiest thread": 2 * steps,
                "shared-memory reads by the busiest thread (counted up to 2 K)": 2 * k,
                "barriers per thread (fewest, most)": [2 * steps, 2 * steps],
                "elements of C written by the busiest thread": 1, "elements of C written": m * n,
                "dtypes of the shared arrays": ["float32"]}

    return Case(what=(f"matmul_tiled launched as kernel[{grid}, (TILE, TILE)](A, B, C) with TILE = "
                      f"{WORK_TILE} on A {(m, k)} and B {(k, n)} float32 ({steps} tiles along k), "
                      "every thread's loads, shared-memory reads and barriers counted"),
                call=call, expected=expected, hint=(
                    "a tiled kernel loads ONE element of A and ONE of B per tile per thread (the "
                    "block shares them), takes its TILE products from the shared tiles, and calls "
                    "cuda.syncthreads() twice per tile, every thread; tiles of A's dtype. A naive "
                    "kernel reads 2 K elements from global memory per output, whatever shared "
                    "array sits unused next to it."))


# ---------------------------------------------------------------------------------------------
# to_csr, spmv_kernel: sparse matrices (L05 slide 2)
# ---------------------------------------------------------------------------------------------

CSR_HINT = ("data holds the nonzeros row by row (left to right), indices the column of each, and "
            "indptr (rows + 1 entries, starting at 0) says where each row's stretch begins: row r "
            "is data[indptr[r]:indptr[r + 1]], empty when the two are equal.")


def _sparse_dense(rng, shape, density, dtype, empty_rows=0):
    """A random matrix with about ``density`` nonzeros, and ``empty_rows`` rows of zeros."""
    dense = np.where(rng.random(shape) < density, rng.standard_normal(shape), 0.0).astype(dtype)
    dense[rng.choice(shape[0], size=min(empty_rows, shape[0]), replace=False)] = 0.0
    return dense


def _csr(dense):
    """(data, indices, indptr) of a dense matrix, for the kernels' inputs (mini's own
    conversion is switched off while lab 5 is graded)."""
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
    return dense[rows, cols], cols.astype(np.int64), indptr.astype(np.int64)


def _to_csr_case(dense, what):
    def call(student):
        data, indices, indptr = student.to_csr(dense.copy())
        return {"data": np.asarray(data), "indices": np.asarray(indices),
                "indptr": np.asarray(indptr), "dtype of data": np.asarray(data).dtype.name}

    def expected():
        from mini.kernels import sparse
        a = sparse.from_dense(dense)
        return {"data": a.data, "indices": a.indices, "indptr": a.indptr,
                "dtype of data": dense.dtype.name}

    return Case(what=f"to_csr on {what}", call=call, expected=expected, rtol=0, atol=0,
                hint=CSR_HINT)


def to_csr_check(rng):
    """Odd shapes, empty rows (the first or the last among them), float64."""
    shape = (_odd(rng, 7, 15), _odd(rng, 5, 13))
    dense = _sparse_dense(rng, shape, 0.3, np.float64, empty_rows=3)
    dense[int(rng.choice([0, shape[0] - 1]))] = 0.0
    return _to_csr_case(dense, f"a {shape} float64 matrix with {np.count_nonzero(dense)} "
                        "nonzeros and some rows of zeros")


def to_csr_edge_check(rng):
    """All zeros, or a single row, in float32: nnz = 0 and indptr of rows + 1 zeros."""
    if rng.random() < 0.5:
        dense, what = np.zeros((int(rng.integers(1, 5)), 3), np.float32), "a matrix of zeros"
    else:
        dense = _sparse_dense(rng, (1, _odd(rng, 5, 15)), 0.5, np.float32)
        what = "a single row"
    return _to_csr_case(dense, f"{what} of shape {dense.shape}, float32")


SPMV_HINT = ("thread g of G handles rows g, g + G, ... of A (a grid-stride loop over rows): "
             "y[r] = sum of data[p] * x[indices[p]] for p in range(indptr[r], indptr[r + 1]), "
             "with an accumulator of data's dtype; a row without nonzeros gives 0.")


def _spmv_case(rng, shape, dtype, blocks, threads, hint):
    dense = _sparse_dense(rng, shape, 0.25, dtype, empty_rows=2)
    x = _array(rng, shape[1], dtype)

    def call(student):
        y = _nans(shape[0], dtype)
        _launch(student.spmv_kernel, "spmv_kernel", blocks, threads, *_csr(dense), x.copy(), y)
        return y

    return Case(what=(f"spmv_kernel launched as kernel[{blocks}, {threads}](data, indices, indptr, "
                      f"x, y) for A of shape {shape} ({np.count_nonzero(dense)} nonzeros, some "
                      f"rows empty), {np.dtype(dtype).name}"),
                call=call, expected=lambda: dense.astype(np.float64) @ x.astype(np.float64),
                rtol=1e-5 if dtype == np.float32 else 1e-12,
                atol=1e-5 if dtype == np.float32 else 1e-12, hint=hint)


def spmv_rows_check(rng):
    """More rows than threads: each thread loops over rows."""
    return _spmv_case(rng, (_odd(rng, 41, 71), _odd(rng, 5, 21)), np.float64, 2, 8, hint=(
        "there are more rows than threads here: a row whose y stays nan was never visited. "
        + SPMV_HINT))


def spmv_float32_check(rng):
    """float32 in, float32 out, fewer rows than threads."""
    return _spmv_case(rng, (_odd(rng, 3, 13), _odd(rng, 9, 31)), np.float32, 1, 16, hint=(
        "threads past the last row must do nothing. " + SPMV_HINT))


def spmv_work_check(rng):
    """Counted: each thread its rows, each stored value read once, no dense work."""
    shape, blocks, threads = (_odd(rng, 25, 45), _odd(rng, 9, 21)), 2, 8
    dense = _sparse_dense(rng, shape, 0.2, np.float32, empty_rows=2)
    data, indices, indptr = _csr(dense)
    x = _array(rng, shape[1], np.float32)
    grid_threads = blocks * threads
    nnz_of = np.diff(indptr)

    def call(student):
        arrays = {"data": data, "indices": indices, "indptr": indptr, "x": x,
                  "y": _nans(shape[0], np.float32)}
        tally, _ = instrument.launch(student.spmv_kernel, "spmv_kernel", blocks, threads, arrays)
        return {"rows of y written by the busiest thread": tally.most(["y"], "writes"),
                "threads that wrote y": tally.busy(["y"], "writes"),
                "reads of data by the busiest thread": tally.most(["data"], "reads"),
                "reads of data and of x in all": [tally.total(["data"], "reads"),
                                                  tally.total(["x"], "reads")],
                "accesses of more than one element at once": tally.bulk()}

    def expected():
        return {"accesses of more than one element at once": 0,
                "rows of y written by the busiest thread": -(-shape[0] // grid_threads),
                "threads that wrote y": min(shape[0], grid_threads),
                "reads of data by the busiest thread": int(max(
                    nnz_of[g::grid_threads].sum() for g in range(grid_threads))),
                "reads of data and of x in all": [len(data), len(data)]}

    return Case(what=(f"spmv_kernel launched as kernel[{blocks}, {threads}](data, indices, indptr, "
                      f"x, y) for A of shape {shape} with {len(data)} nonzeros, every thread's "
                      "reads and writes counted"), call=call, expected=expected,
                hint=("each thread reads the stored values of its own rows, each once, and the "
                      "matching x[indices[p]], and nothing of the zeros. " + WORK_HINT))


# ---------------------------------------------------------------------------------------------
# embedding_grad: the row-sparse gradient of an embedding lookup (lab 4's model)
# ---------------------------------------------------------------------------------------------

EMBEDDING_HINT = ("return (rows, values): rows the distinct ids that were looked up, ascending, "
                  "and values[i] the sum of grad_out over every position whose id is rows[i] (a "
                  "word used twice gets both contributions, slide 20's fan-out); never a "
                  "(vocab_size, D) array.")


def _embedding_case(rng, ids, dim, vocab_size, what, dense_reference):
    grad_out = rng.standard_normal(ids.shape + (dim,))

    def call(student):
        rows, values = student.embedding_grad(ids.copy(), grad_out.copy(), vocab_size)
        return {"rows": np.asarray(rows), "values": np.asarray(values)}

    def expected():
        rows = np.unique(ids)
        if dense_reference:    # the gradient mini's take computes, then its looked-up rows
            import mini
            table = np.zeros((vocab_size, dim))
            dense = mini.grad(lambda e: mini.sum(mini.take(e, ids, axis=0) * grad_out))(table)
            return {"rows": rows, "values": dense[rows]}
        values = np.zeros((rows.size, dim))
        np.add.at(values, np.searchsorted(rows, ids.reshape(-1)), grad_out.reshape(-1, dim))
        return {"rows": rows, "values": values}

    return Case(what=(f"embedding_grad(ids, grad_out, vocab_size={vocab_size}) with ids of shape "
                      f"{ids.shape} ({what}) and grad_out of shape {grad_out.shape}"),
                call=call, expected=expected, rtol=1e-10, atol=1e-12, hint=EMBEDDING_HINT)


def embedding_batch_check(rng):
    """A (B, T) batch of ids with repeats, compared with mini's dense gradient's rows."""
    vocab_size = int(rng.integers(20, 40))
    ids = rng.integers(0, vocab_size // 2, size=(int(rng.integers(2, 5)), int(rng.integers(3, 8))))
    return _embedding_case(rng, ids, int(rng.integers(2, 6)), vocab_size,
                           "words repeat", dense_reference=True)


def embedding_huge_vocabulary_check(rng):
    """10^12 rows: a dense gradient would need terabytes, the row-sparse one a few numbers."""
    ids = rng.integers(0, 10**12, size=(2, 5))
    ids[1, 3] = ids[0, 1]
    return _embedding_case(rng, ids, 3, 10**12, "a vocabulary of 10^12 words",
                           dense_reference=False)


CHECKS = {
    "map_kernel": [map_more_threads_check, map_grid_stride_check, map_float32_check,
                   map_work_check],
    "zip_kernel": [zip_small_check, zip_grid_stride_check, zip_float32_check, zip_work_check],
    "reduce_kernel": [reduce_tiny_check, reduce_sum_check, reduce_max_check, reduce_work_check],
    "matmul_tiled": [matmul_tiny_check, matmul_multiple_check, matmul_awkward_check,
                     matmul_thin_check, matmul_float32_check, matmul_work_check],
    "to_csr": [to_csr_check, to_csr_edge_check],
    "spmv_kernel": [spmv_rows_check, spmv_float32_check, spmv_work_check],
    "embedding_grad": [embedding_batch_check, embedding_huge_vocabulary_check],
}
