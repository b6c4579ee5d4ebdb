"""Lab 5's checks of the kernels over arrays: map_kernel, zip_kernel and reduce_kernel."""
import math

import numpy as np

from autograder.checks import Case
from autograder.checks.ptx import WORK_THREADS
from autograder.checks.lab5.shared import array, odd, tolerances


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
    x = array(rng, n, dtype)
    return Case(
        what=(f"map_kernel({source}) launched as kernel[{blocks}, {threads}](x, out) on x of "
              f"{n} {np.dtype(dtype).name} elements ({blocks * threads} threads in the grid)"),
        probe="map_launch", inputs={"source": source, "grid": blocks, "block": threads, "x": x},
        expected=lambda: numpy_fn(x.astype(np.float64)), hint=hint, **tolerances(dtype))


def map_more_threads_check(rng):
    """More threads than elements: every thread past the end must do nothing."""
    n = int(rng.choice([1, 2, 3, 17, 31]))
    return _map_case(rng, n, 1, 32, np.float64, hint=(
        "there are more threads than elements here: a thread whose index is >= out.size must "
        "not touch x or out. " + MAP_HINT))


def map_grid_stride_check(rng):
    """Far more elements than threads: only a grid-stride loop reaches them all."""
    n = odd(rng, 301, 799)
    return _map_case(rng, n, 2, 32, np.float64, hint=(
        "there are more elements than threads here, so each thread must loop: an element that "
        "stays nan was never visited. " + MAP_HINT))


def map_float32_check(rng):
    """A (rows, cols) float32 array, flattened as the host wrapper does."""
    rows, cols = odd(rng, 5, 17), odd(rng, 17, 33)
    case = _map_case(rng, rows * cols, 3, 32, np.float32, hint=(
        "out has the dtype of x (float32 here); compute fn(x[i]) and store it. " + MAP_HINT))
    case.what += f" (a ({rows}, {cols}) array, flattened)"
    return case


def map_threads_check(rng):
    """fn names its thread: element i must be thread i % G's (grid-stride, coalesced)."""
    n, blocks, threads = odd(rng, 41, 79), 2, 8
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
    x, y = array(rng, shape, dtype), array(rng, shape, dtype)
    threads = (grid[0] * block[0], grid[1] * block[1])
    return Case(
        what=(f"zip_kernel({source}) launched as kernel[{grid}, {block}](x, y, out) on x, y of "
              f"shape {shape} {np.dtype(dtype).name} (the grid has {threads[0]} threads along "
              f"columns and {threads[1]} along rows)"),
        probe="zip_launch", inputs={"source": source, "grid": grid, "block": block, "x": x, "y": y},
        expected=lambda: numpy_fn(x.astype(np.float64), y.astype(np.float64)), hint=hint,
        **tolerances(dtype))


def zip_small_check(rng):
    """Shapes smaller than the grid: threads outside out must do nothing."""
    shape = [(1, 1), (1, int(rng.integers(2, 8))), (int(rng.integers(2, 8)), 1),
             (3, 5)][int(rng.integers(4))]
    return _zip_case(rng, shape, (1, 1), (8, 4), np.float64, hint=(
        "the grid is larger than the array here: threads outside out.shape must not touch it. "
        + ZIP_HINT))


def zip_grid_stride_check(rng):
    """More rows and columns than threads: a grid-stride loop in both directions."""
    shape = (odd(rng, 9, 33), odd(rng, 17, 49))
    return _zip_case(rng, shape, (2, 1), (8, 4), np.float64, functions=ZIP_FUNCTIONS[::3], hint=(
        "there are more rows and more columns than threads here, so each thread must loop in both "
        "directions: an element that stays nan was never visited. " + ZIP_HINT))


def zip_float32_check(rng):
    """A non-square float32 array with a 2 x 2 grid of blocks."""
    shape = (odd(rng, 9, 21), odd(rng, 17, 33))
    return _zip_case(rng, shape, (2, 2), (8, 4), np.float32, hint=(
        "out has the dtype of x and y (float32 here). " + ZIP_HINT))


def zip_threads_check(rng):
    """fn names its thread: neighbouring x threads must compute neighbouring columns."""
    shape, grid, block = (odd(rng, 9, 15), odd(rng, 17, 23)), (2, 1), (4, 2)
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

REDUCE_HINT = ("the contract's shape: every thread folds its own grid-stride elements from `start`, "
               "the block's THREADS values meet in one shared array of x's dtype and are combined "
               "in a tree of log2(THREADS) rounds, and the block's result lands in "
               "partial[cuda.blockIdx.x].")


def _reduce_case(rng, n, blocks, dtype, op, tolerance, hint):
    source, start, numpy_fn = REDUCE_FUNCTIONS[op]
    x = array(rng, n, dtype)
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
    n = odd(rng, 401, 899)
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
    n = odd(rng, 33, 399)
    case = _reduce_case(rng, n, 3, np.float32, "max", 1e-6, hint=(
        "use fn and start, never a hard-coded + or 0: for a maximum, start is -inf (and every "
        "element here is negative). " + REDUCE_HINT))
    case.what += ", all elements negative"
    return case


def reduce_tree_check(rng):
    """fn counts its calls: partial[b] is the longest chain of calls in block b, which is a
    thread's own share of x followed by log2(THREADS) steps of the tree."""
    n, blocks, threads = odd(rng, 2 * WORK_THREADS + 1, 5 * WORK_THREADS), 2, WORK_THREADS
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
