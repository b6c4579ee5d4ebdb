"""Lab 5's checks of matmul_tiled and of the derived traffic count tiled_traffic."""
import numpy as np

from autograder.checks import Case
from autograder.checks.lab5.shared import array, odd


# ---------------------------------------------------------------------------------------------
# matmul_tiled: C = A B with shared-memory tiles
# ---------------------------------------------------------------------------------------------

MATMUL_HINT = ("block (bx, by) owns the tile of C at rows by*TILE.., columns bx*TILE..; at each step "
               "along k every thread stages one element of A's tile and one of B's (a zero where "
               "the index leaves A or B), the block waits until both tiles are complete before "
               "reading them and until the reading is over before staging the next, and only a "
               "thread inside C writes. The tiles and the accumulator have A's dtype.")


def _matmul_case(rng, shape, dtype, hint, tolerance=1e-6):
    """Compared with float64 numpy; ``tolerance`` relative to max(|A| |B|), so that only the
    precision check (1e-12) fails for float32 tiles and the others point at indexing."""
    m, k, n = shape
    a, b = array(rng, (m, k), dtype), array(rng, (k, n), dtype)
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
    shape = (odd(rng, 5, 23), odd(rng, 5, 23), odd(rng, 5, 23))
    return _matmul_case(rng, shape, np.float64, tolerance=1e-12, hint=(
        "no side is a multiple of the tile here, so the last tile in each direction hangs over "
        "the edge. float64 is compared at float64 precision (if expected and got look equal, "
        "they differ after the 6th digit: float32 rounding), so give the tiles A's dtype. "
        + MATMUL_HINT))


def _matmul_thin_case(rng, shape):
    return _matmul_case(rng, shape, np.float64, hint=(
        "C is a single row or column here: the grid has one block along that direction. "
        + MATMUL_HINT))


def matmul_one_row_check(rng):
    """A single row of C, with an odd inner size."""
    return _matmul_thin_case(rng, (1, odd(rng, 5, 39), odd(rng, 5, 39)))


def matmul_one_column_check(rng):
    """A single column of C, with an odd inner size."""
    return _matmul_thin_case(rng, (odd(rng, 5, 39), odd(rng, 5, 39), 1))


def matmul_float32_check(rng):
    """Odd sides in float32."""
    shape = (odd(rng, 5, 23), odd(rng, 5, 23), odd(rng, 5, 23))
    return _matmul_case(rng, shape, np.float32, hint="C has the dtype of A and B (float32 here). "
                        + MATMUL_HINT)


# ---------------------------------------------------------------------------------------------
# tiled_traffic: the student's derivation of the tiled product's loads from global memory
# ---------------------------------------------------------------------------------------------

TRAFFIC_HINT = ("count one block first: over its steps along k, which elements of A and of B do "
                "its threads load (only those inside the matrices)? Then count how many blocks "
                "load each element of A, and of B: the blocks of one row of the grid share the "
                "same strip of A.")


def _traffic_case(shapes, what, hint):
    def expected():
        return {"A": np.array([float(-(-n // t) * m * k) for m, k, n, t in shapes]),
                "B": np.array([float(-(-m // t) * k * n) for m, k, n, t in shapes])}

    listed = ", ".join(f"tiled_traffic{shape}" for shape in shapes)
    return Case(what=f"{listed} ({what}); the 'A' and 'B' counts, in that order",
                probe="traffic_counts", inputs={"shapes": [list(shape) for shape in shapes]},
                expected=expected, rtol=0, atol=0, hint=hint)


def traffic_multiples_check(rng):
    """Sides that are multiples of the tile: no edge tiles, and M != N, so A and B differ."""
    shapes = []
    for _ in range(3):
        t = int(rng.choice([2, 4, 8, 16]))
        m, k, n = (int(rng.integers(1, 6)) * t for _ in range(3))
        shapes.append((m, k, n if n != m else n + t, t))
    return _traffic_case(shapes, "every side a multiple of the tile", hint=(
        "no tile hangs over an edge here. " + TRAFFIC_HINT))


def traffic_edges_check(rng):
    """Odd sides: the last tile in each direction hangs over the edge and stages zeros."""
    shapes = [(odd(rng, 3, 21), odd(rng, 3, 21), odd(rng, 3, 21), int(rng.choice([2, 4, 8])))
              for _ in range(3)]
    return _traffic_case(shapes, "no side a multiple of the tile", hint=(
        "the last tiles hang over the edges here: a thread whose element lies past the edge of "
        "A or B stages a zero, which is not a load, and a block still exists for a partial tile "
        "of C. " + TRAFFIC_HINT))
