"""Hidden checks of lab5_kernels: the CUDA kernels map_kernel, zip_kernel, reduce_kernel,
matmul_tiled and spmv_kernel, the CSR conversion to_csr and the row-sparse embedding_grad (the
grader half).

Each kernel is judged twice.  By what it computes: the student half (:mod:`autograder.probes.lab5`)
launches it with a launch configuration the message states (``kernel[blocks, threads](...)``), on
inputs drawn from the seed (sizes of 1, sizes smaller than one block, odd sizes that are no
multiple of any tile, more elements than threads), on Numba's CUDA simulator where there is no
GPU, and outputs start as NaN, so that an element a kernel never writes shows up as ``got nan``.
A check's function may also name the thread that calls it (``lambda v: cuda.grid(1)``), so that
the output says which thread computed each element, or count the calls along the longest chain of
a reduction.  Expected values come from numpy in float64 here; nothing here runs mini's kernels.
And by what it compiles to: the kernel's code, sent as data, is compiled here for a real NVIDIA
GPU in a process that runs no student code (:mod:`autograder.checks.ptx`), and its PTX read as
facts (shared arrays, barriers, loads per step, float64 instructions).

Sizes stay small (at most ~40 per matrix side, ~1500 elements): on the simulator every CUDA thread
is a Python thread, and one launch takes at most a few seconds.  The value checks launch with the
notebook's ``TILE`` and ``THREADS``; the checks of structure set them (``WORK_TILE``,
``WORK_THREADS``), so that what is expected does not depend on the notebook.
"""
import math

import numpy as np

from autograder.checks import Case, focused
from autograder.checks.ptx import (COMPILES, FLOAT64, WORK_THREADS, map_code_check,
                                   matmul_code_check, reduce_code_check, spmv_code_check,
                                   zip_code_check)


def _odd(rng, low, high):
    """An odd size in [low, high]: no multiple of any power-of-two tile or block."""
    return int(rng.integers(low // 2, (high - 1) // 2 + 1)) * 2 + 1


def _array(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _tolerances(dtype):
    return {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}


# ---------------------------------------------------------------------------------------------
# map_kernel: out[i] = fn(x[i]), grid-stride loop
# ---------------------------------------------------------------------------------------------

# (source, as the student reads it and the probe evaluates it; the same function on numpy arrays)
MAP_FUNCTIONS = [
    ("lambda v: 2.0 * v + 1.0", lambda x: 2.0 * x + 1.0),
    ("lambda v: v * v - 3.0 * v", lambda x: x * x - 3.0 * x),
    ("lambda v: math.tanh(v)", np.tanh),
    ("lambda v: math.exp(-v * v)", lambda x: np.exp(-x * x)),
]

MAP_HINT = ("thread g of a grid of G threads must handle elements g, g + G, g + 2G, ... while they "
            "are < out.size (a grid-stride loop: cuda.grid(1) gives g, cuda.gridsize(1) gives G), "
            "and compute out[i] = fn(x[i]) with the device function compiled from fn.")
DEVICE_CALL = ("fn is called through the device function compiled from it (called as plain "
               "Python, it finds no cuda.grid).")


def _map_case(rng, n, blocks, threads, dtype, hint):
    source, numpy_fn = MAP_FUNCTIONS[int(rng.integers(len(MAP_FUNCTIONS)))]
    x = _array(rng, n, dtype)
    return Case(
        what=(f"map_kernel({source}) launched as kernel[{blocks}, {threads}](x, out) on x of "
              f"{n} {np.dtype(dtype).name} elements ({blocks * threads} threads in the grid)"),
        probe="map_launch", inputs={"source": source, "grid": blocks, "block": threads, "x": x},
        expected=lambda: numpy_fn(x.astype(np.float64)), hint=hint, **_tolerances(dtype))


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


def map_threads_check(rng):
    """fn names its thread: element i must be thread i % G's (grid-stride, coalesced)."""
    n, blocks, threads = _odd(rng, 41, 79), 2, 8
    source = "lambda v: cuda.grid(1)"
    return Case(
        what=(f"map_kernel({source}) launched as kernel[{blocks}, {threads}](x, out) on {n} "
              "elements: out[i] is the number cuda.grid(1) of the thread that computed element i"),
        probe="map_launch", inputs={"source": source, "grid": blocks, "block": threads,
                                    "x": np.zeros(n)},
        expected=lambda: np.arange(n) % (blocks * threads), rtol=0, atol=0, hint=(
            "element i is thread i % G's, G the number of threads in the grid: at every step of "
            "the grid-stride loop the threads touch G neighbouring elements (coalesced). One "
            "thread looping over everything, or numpy inside the kernel, gives the right numbers "
            f"with the wrong threads. {DEVICE_CALL} " + MAP_HINT))


# ---------------------------------------------------------------------------------------------
# zip_kernel: out[i, j] = fn(x[i, j], y[i, j]), 2-D grid, x-threads along columns
# ---------------------------------------------------------------------------------------------

ZIP_FUNCTIONS = [   # the first and the last are not symmetric: fn(x, y) != fn(y, x)
    ("lambda a, b: a - b", np.subtract),
    ("lambda a, b: a * b + 1.0", lambda x, y: x * y + 1.0),
    ("lambda a, b: max(a, b)", np.maximum),
    ("lambda a, b: a / (1.0 + b * b)", lambda x, y: x / (1.0 + y * y)),
]

ZIP_HINT = ("the x thread index runs along columns and the y index along rows: (col, row) = "
            "cuda.grid(2), (cols, rows) = cuda.gridsize(2); loop rows from row in steps of rows and "
            "columns from col in steps of cols while they are inside out.shape, and compute "
            "out[i, j] = fn(x[i, j], y[i, j]) (in that argument order).")


def _zip_case(rng, shape, grid, block, dtype, hint, functions=ZIP_FUNCTIONS):
    source, numpy_fn = functions[int(rng.integers(len(functions)))]
    x, y = _array(rng, shape, dtype), _array(rng, shape, dtype)
    threads = (grid[0] * block[0], grid[1] * block[1])
    return Case(
        what=(f"zip_kernel({source}) launched as kernel[{grid}, {block}](x, y, out) on x, y of "
              f"shape {shape} {np.dtype(dtype).name} (the grid has {threads[0]} threads along "
              f"columns and {threads[1]} along rows)"),
        probe="zip_launch", inputs={"source": source, "grid": grid, "block": block, "x": x, "y": y},
        expected=lambda: numpy_fn(x.astype(np.float64), y.astype(np.float64)), hint=hint,
        **_tolerances(dtype))


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


def zip_threads_check(rng):
    """fn names its thread: neighbouring x threads must compute neighbouring columns."""
    shape, grid, block = (_odd(rng, 9, 15), _odd(rng, 17, 23)), (2, 1), (4, 2)
    source = "lambda a, b: cuda.grid(2)[0] + 1000 * cuda.grid(2)[1]"
    columns, rows = grid[0] * block[0], grid[1] * block[1]

    def expected():
        i, j = np.indices(shape)
        return j % columns + 1000 * (i % rows)

    return Case(
        what=(f"zip_kernel({source}) launched as kernel[{grid}, {block}](x, y, out) on shape "
              f"{shape}: out[i, j] is x + 1000 y for the thread (x, y) = cuda.grid(2) that "
              "computed element (i, j)"),
        probe="zip_launch", inputs={"source": source, "grid": grid, "block": block,
                                    "x": np.zeros(shape), "y": np.zeros(shape)},
        expected=expected, rtol=0, atol=0, hint=(
            f"element (i, j) is computed by the thread (x, y) = (j % {columns}, i % {rows}): the "
            "threads next to each other in x (threadIdx.x) work on neighbouring COLUMNS of one "
            f"row, so that a warp's reads are coalesced. {DEVICE_CALL} " + ZIP_HINT))


# ---------------------------------------------------------------------------------------------
# reduce_kernel: one partial result per block, shared-memory tree
# ---------------------------------------------------------------------------------------------

REDUCE_FUNCTIONS = {
    "add": ("lambda a, b: a + b", 0.0, np.sum),
    "max": ("lambda a, b: max(a, b)", -math.inf, np.max),
}

FOLDED, UNWRITTEN = "partial results folded on the host", "blocks that wrote no partial result"

REDUCE_HINT = ("each thread first folds its grid-stride elements into its own accumulator (starting "
               "from `start`), stores it in a shared array of THREADS slots of x's dtype, then the "
               "block halves the active slots: for step = THREADS // 2, ..., 1, threads t < step "
               "set cache[t] = fn(cache[t], cache[t + step]), with cuda.syncthreads() after every "
               "step (outside the `if`). Thread 0 then writes cache[0] to partial[cuda.blockIdx.x].")


def _reduce_case(rng, n, blocks, dtype, op, tolerance, hint):
    source, start, numpy_fn = REDUCE_FUNCTIONS[op]
    x = _array(rng, n, dtype)
    if op == "max":                        # all negative: a kernel that starts from 0 shows
        x = (-0.5 - np.abs(x)).astype(dtype)
    # a sum may round at every step (the error grows with sum |x|); a maximum is exact
    scale = float(np.abs(x.astype(np.float64)).sum() if op == "add" else np.abs(x).max())

    def folded(partial):
        unwritten = int(np.isnan(partial).sum())
        return {FOLDED: numpy_fn(partial.astype(np.float64)) if not unwritten else math.nan,
                UNWRITTEN: unwritten}

    return Case(
        what=(f"reduce_kernel({source}) launched as kernel[{blocks}, THREADS](x, {start}, partial) "
              f"on x of {n} {np.dtype(dtype).name} elements, partial of {blocks} slots (folded "
              f"with {op} on the host)"),
        probe="reduce_launch", inputs={"source": source, "blocks": blocks, "x": x, "start": start},
        interpret=folded, expected=lambda: {FOLDED: numpy_fn(x.astype(np.float64)), UNWRITTEN: 0},
        rtol=tolerance, atol=tolerance * scale, hint=hint)


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
        "a sum that comes out wrong either misses elements (there are more elements than "
        "threads, so each thread must first loop over its grid-stride elements) or reads a slot "
        "of the tree before the step that writes it has finished (a cuda.syncthreads() missing "
        "between two steps: the check of the compiled code says which). It is compared at "
        "float64 precision (if expected and got look equal, they differ after the 6th digit: "
        "float32 rounding), so give the shared array x's dtype. " + REDUCE_HINT))


def reduce_max_check(rng):
    """A float32 maximum of negative numbers: start is -inf, and fn is not addition."""
    n = _odd(rng, 33, 399)
    case = _reduce_case(rng, n, 3, np.float32, "max", 1e-6, hint=(
        "use fn and start, never a hard-coded + or 0: for a maximum, start is -inf (and every "
        "element here is negative). " + REDUCE_HINT))
    case.what += ", all elements negative"
    return case


def reduce_tree_check(rng):
    """fn counts its calls: partial[b] is the longest chain of calls in block b, which is a
    thread's own share of x followed by log2(THREADS) steps of the tree."""
    n, blocks, threads = _odd(rng, 2 * WORK_THREADS + 1, 5 * WORK_THREADS), 2, WORK_THREADS
    source, grid = "lambda a, b: max(a, b) + 1.0", blocks * WORK_THREADS
    steps = int(math.log2(threads))

    def expected():     # thread b * THREADS, the first of block b, folds the most elements
        return np.array([len(range(b * threads, n, grid)) + steps for b in range(blocks)], float)

    return Case(
        what=(f"reduce_kernel({source}) launched as kernel[{blocks}, THREADS](x, 0.0, partial) "
              f"with THREADS = {threads} on {n} zeros: fn adds 1 to the larger of its arguments, "
              "so partial[b] is the number of calls of fn along the longest chain in block b"),
        probe="reduce_launch", inputs={"source": source, "blocks": blocks, "x": np.zeros(n),
                                       "start": 0.0, "threads": threads},
        expected=expected, rtol=0, atol=0, hint=(
            f"in block b the longest chain is thread b * THREADS's own elements (it folds x[g], "
            f"x[g + G], ..., G = {grid} threads in the grid), then log2(THREADS) = {steps} steps "
            "of the tree, each combining two slots; one thread folding all of its block's "
            "elements, or all of its slots one after another, makes a longer chain. "
            + REDUCE_HINT))


# ---------------------------------------------------------------------------------------------
# matmul_tiled: C = A B with shared-memory tiles
# ---------------------------------------------------------------------------------------------

MATMUL_HINT = ("block (bx, by) computes the TILE x TILE tile of C at rows by*TILE.., columns "
               "bx*TILE..; for each tile t along k, thread (ty, tx) loads A[row, t*TILE + tx] and "
               "B[t*TILE + ty, col] into the shared tiles, or a zero when that index is outside A "
               "or B, then cuda.syncthreads(), adds its TILE products, cuda.syncthreads() again; at "
               "the end it writes C[row, col] only if row < M and col < N. The tiles and the "
               "accumulator have A's dtype.")


def _matmul_case(rng, shape, dtype, hint, tolerance=1e-6):
    """Compared with float64 numpy; ``tolerance`` relative to max(|A| |B|), so that only the
    precision check (1e-12) fails for float32 tiles and the others point at indexing."""
    m, k, n = shape
    a, b = _array(rng, (m, k), dtype), _array(rng, (k, n), dtype)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    scale = float((np.abs(a64) @ np.abs(b64)).max())
    tolerance = 1e-5 if dtype == np.float32 else tolerance
    return Case(
        what=(f"matmul_tiled launched as kernel[(ceil(N/TILE), ceil(M/TILE)), (TILE, TILE)](A, B, "
              f"C) on A of shape {(m, k)} and B of shape {(k, n)}, {np.dtype(dtype).name}"),
        probe="matmul_launch", inputs={"a": a, "b": b}, expected=lambda: a64 @ b64,
        rtol=tolerance, atol=tolerance * scale, hint=hint)


def matmul_tiny_check(rng):
    """Every side smaller than a tile: most threads of the single block are outside A, B and C."""
    shape = tuple(int(d) for d in rng.integers(1, 4, size=3))
    return _matmul_case(rng, shape, np.float64, hint=(
        "the whole product fits in one tile here: threads outside A or B load zeros into the "
        "tiles, and threads outside C write nothing. " + MATMUL_HINT))


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
    """(data, indices, indptr) of a dense matrix: the kernels' inputs, and to_csr's expected
    result (for other matrices than a to_csr check's own)."""
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
    return dense[rows, cols], cols.astype(np.int64), indptr.astype(np.int64)


def _to_csr_case(dense, what):
    def expected():
        from mini.kernels import sparse
        a = sparse.from_dense(dense)
        return {"data": a.data, "indices": a.indices, "indptr": a.indptr,
                "dtype of data": dense.dtype.name}

    return Case(what=f"to_csr on {what}", probe="to_csr_arrays", inputs={"dense": dense},
                expected=expected, rtol=0, atol=0, hint=CSR_HINT)


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


def to_csr_zeros_check(rng):
    """A float32 matrix of zeros, whatever to_csr_edge_check drew: no nonzeros to take the dtype
    from, so data must get dense's dtype some other way."""
    dense = np.zeros((int(rng.integers(1, 5)), int(rng.integers(2, 6))), np.float32)
    return _to_csr_case(dense, f"a matrix of zeros of shape {dense.shape}, float32")


SPMV_HINT = ("thread g of G handles rows g, g + G, ... of A (a grid-stride loop over rows): "
             "y[r] = sum of data[p] * x[indices[p]] for p in range(indptr[r], indptr[r + 1]), "
             "with an accumulator of data's dtype; a row without nonzeros gives 0.")


def _spmv_case(rng, shape, dtype, blocks, threads, hint):
    dense = _sparse_dense(rng, shape, 0.25, dtype, empty_rows=2)
    x = _array(rng, shape[1], dtype)
    data, indices, indptr = _csr(dense)
    return Case(what=(f"spmv_kernel launched as kernel[{blocks}, {threads}](data, indices, indptr, "
                      f"x, y) for A of shape {shape} ({np.count_nonzero(dense)} nonzeros, some "
                      f"rows empty), {np.dtype(dtype).name}"),
                probe="spmv_launch",
                inputs={"data": data, "indices": indices, "indptr": indptr, "x": x,
                        "blocks": blocks, "threads": threads},
                expected=lambda: dense.astype(np.float64) @ x.astype(np.float64), hint=hint,
                rtol=1e-5 if dtype == np.float32 else 1e-12,
                atol=1e-5 if dtype == np.float32 else 1e-12)


def spmv_rows_check(rng):
    """More rows than threads: each thread loops over rows."""
    return _spmv_case(rng, (_odd(rng, 41, 71), _odd(rng, 5, 21)), np.float64, 2, 8, hint=(
        "there are more rows than threads here: a row whose y stays nan was never visited. "
        + SPMV_HINT))


def spmv_float32_check(rng):
    """float32 in, float32 out, fewer rows than threads."""
    return _spmv_case(rng, (_odd(rng, 3, 13), _odd(rng, 9, 31)), np.float32, 1, 16, hint=(
        "threads past the last row must do nothing. " + SPMV_HINT))


# ---------------------------------------------------------------------------------------------
# embedding_grad: the row-sparse gradient of an embedding lookup (lab 4's model)
# ---------------------------------------------------------------------------------------------

EMBEDDING_HINT = ("return (rows, values): rows the distinct ids that were looked up, ascending, "
                  "and values[i] the sum of grad_out over every position whose id is rows[i] (a "
                  "word used twice gets both contributions, slide 20's fan-out); never a "
                  "(vocab_size, D) array.")


def _embedding_case(rng, ids, dim, vocab_size, what, dense_reference):
    grad_out = rng.standard_normal(ids.shape + (dim,))

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
                probe="embedding_rows",
                inputs={"ids": ids, "grad_out": grad_out, "vocab_size": vocab_size},
                expected=expected, rtol=1e-10, atol=1e-12, hint=EMBEDDING_HINT)


def embedding_batch_check(rng):
    """A (B, T) batch of ids with repeats, compared with mini's dense gradient's rows."""
    vocab_size = int(rng.integers(20, 40))
    ids = rng.integers(0, vocab_size // 2, size=(int(rng.integers(2, 5)), int(rng.integers(3, 8))))
    return _embedding_case(rng, ids, int(rng.integers(2, 6)), vocab_size,
                           "words repeat", dense_reference=True)


def embedding_any_shape_check(rng):
    """ids of one dimension (a single sentence) or of three: any shape S, not only (B, T)."""
    vocab_size = int(rng.integers(20, 40))
    shape = ((int(rng.integers(5, 12)),) if rng.random() < 0.5
             else (2, int(rng.integers(2, 4)), int(rng.integers(2, 5))))
    ids = rng.integers(0, vocab_size // 3, size=shape)
    return _embedding_case(rng, ids, int(rng.integers(2, 5)), vocab_size,
                           f"words repeat, ids of {len(shape)} dimension"
                           f"{'s' if len(shape) > 1 else ''}", dense_reference=True)


def embedding_huge_vocabulary_check(rng):
    """10^12 rows: a dense gradient would need terabytes, the row-sparse one a few numbers."""
    ids = rng.integers(0, 10**12, size=(2, 5))
    ids[1, 3] = ids[0, 1]
    return _embedding_case(rng, ids, 3, 10**12, "a vocabulary of 10^12 words",
                           dense_reference=False)


def _layout(code_check):
    """What ``code_check`` reads in the PTX but its float64 instructions: how the work is laid
    out (the grid's size, shared arrays, barriers)."""
    return focused(code_check, lambda key: key != FLOAT64, f"{code_check.__name__}_layout")


def _float32(code_check):
    return focused(code_check, lambda key: key in (COMPILES, FLOAT64),
                   f"{code_check.__name__}_float32")


CHECKS = {
    "map_kernel": {
        "the values, more threads than elements and float32 included": (
            4, [map_more_threads_check, map_float32_check]),
        "a grid-stride loop: fewer threads than elements": (2, [map_grid_stride_check]),
        "element i computed by thread i mod the grid's size": (2, [map_threads_check]),
        "compiled: a stride of the grid's size": (1, [_layout(map_code_check)]),
        "compiled: float32 throughout": (1, [_float32(map_code_check)])},
    "zip_kernel": {
        "the values, more threads than elements and float32 included": (
            4, [zip_small_check, zip_float32_check]),
        "a grid-stride loop along both axes": (2, [zip_grid_stride_check]),
        "each entry computed by the thread whose cuda.grid(2) reaches it": (
            2, [zip_threads_check]),
        "compiled: strides of the grid's size": (1, [_layout(zip_code_check)]),
        "compiled: float32 throughout": (1, [_float32(zip_code_check)])},
    "reduce_kernel": {
        "one partial per block, for any fold": (4, [reduce_tiny_check, reduce_sum_check,
                                                    reduce_max_check]),
        "a tree of folds, each value folded once": (2, [reduce_tree_check]),
        "compiled: one shared array, read in a tree between barriers": (
            3, [_layout(reduce_code_check)]),
        "compiled: float32 throughout": (1, [_float32(reduce_code_check)])},
    "matmul_tiled": {
        "the product, for any shape": (6, [matmul_tiny_check, matmul_multiple_check,
                                           matmul_awkward_check, matmul_thin_check,
                                           matmul_float32_check]),
        "compiled: shared tiles, one load of A and of B per step, barriers": (
            3, [_layout(matmul_code_check)]),
        "compiled: float32 throughout": (1, [_float32(matmul_code_check)])},
    "to_csr": {"a matrix with empty rows": (1, [to_csr_check]),
               "a matrix of zeros, the dtype kept": (1, [to_csr_edge_check,
                                                          to_csr_zeros_check])},
    "spmv_kernel": {"the product, empty rows included": (2, [spmv_rows_check]),
                    "float32 values": (2, [spmv_float32_check]),
                    "compiled: a stride of the grid's size": (1, [_layout(spmv_code_check)]),
                    "compiled: float32 throughout": (1, [_float32(spmv_code_check)])},
    "embedding_grad": {"a batch in which words repeat": (1, [embedding_batch_check,
                                                             embedding_any_shape_check]),
                       "a vocabulary too large for a dense gradient": (
                           1, [embedding_huge_vocabulary_check])},
}
