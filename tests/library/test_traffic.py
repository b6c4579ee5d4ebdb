"""mini.kernels.traffic: a kernel's global-memory accesses, counted on the CUDA simulator."""
import numpy as np
import pytest

from mini.kernels import cuda as mini_cuda, device, traffic

device.choose()
from numba import cuda  # noqa: E402 (after mini's choice of the simulator)


@cuda.jit
def _naive(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        total = A.dtype.type(0)
        for k in range(A.shape[1]):
            total += A[row, k] * B[k, col]
        C[row, col] = total


@cuda.jit
def _naive_rows(A, B, C):          # x along rows: a warp reads A 32 rows apart
    row, col = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        total = A.dtype.type(0)
        for k in range(A.shape[1]):
            total += A[row, k] * B[k, col]
        C[row, col] = total


def _product(m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32), np.zeros((m, n), np.float32))


@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 3, 7), (9, 4, 6)])
def test_the_naive_product_loads_a_row_and_a_column_per_element_and_stores_each_once(shape):
    m, k, n = shape
    A, B, C = _product(m, k, n)
    counts = traffic.count(_naive, (-(-n // 4), -(-m // 4)), (4, 4), A, B, C, names="ABC")
    assert np.allclose(C, A @ B, atol=1e-5)                        # the launch still computes
    assert counts.loads("A") == counts.loads("B") == m * n * k
    assert counts.stores("C") == m * n and counts.loads("C") == 0
    assert counts.loads() == 2 * m * n * k


def test_mini_s_tiled_product_loads_each_strip_once_per_block():
    m, k, n, tile = 9, 7, 5, mini_cuda.TILE
    A, B, C = _product(m, k, n)
    kernel = mini_cuda.matmul_tiled_kernel(np.float32)
    counts = traffic.count(kernel, (-(-n // tile), -(-m // tile)), (tile, tile), A, B, C,
                           names="ABC")
    assert np.allclose(C, A @ B, atol=1e-5)
    assert counts.loads("A") == -(-n // tile) * m * k
    assert counts.loads("B") == -(-m // tile) * k * n


def test_a_warp_along_a_row_reads_in_one_transaction_and_across_rows_in_32():
    n = 32
    coalesced = traffic.count(_naive, (1, n // 2), (32, 2), *_product(n, n, n), names="ABC")
    strided = traffic.count(_naive_rows, (1, n // 2), (32, 2), *_product(n, n, n), names="ABC")
    warp_loads = coalesced.instructions("B")       # one per warp and step along k
    assert warp_loads == (n * n // 32) * n
    assert coalesced.transactions("A") == coalesced.transactions("B") == warp_loads
    assert strided.transactions("A") == 32 * warp_loads and strided.transactions("B") == warp_loads


def test_writers_name_the_grid_position_of_the_thread_that_stored_each_element():
    A, B, C = _product(3, 2, 5)
    counts = traffic.count(_naive, (2, 1), (4, 4), A, B, C, names="ABC")
    rows, cols = np.indices(C.shape)
    assert np.array_equal(counts.writers("C"), np.stack([cols, rows], axis=-1))


def test_names_must_match_the_array_arguments():
    with pytest.raises(ValueError, match="2 names for 3 array arguments"):
        traffic.count(_naive, 1, 1, *_product(1, 1, 1), names="AB")
