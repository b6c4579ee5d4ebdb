"""The CUDA kernels (mini.kernels.cuda) equal numpy; on Numba's simulator where there is no GPU.

The simulator runs each CUDA thread as a Python thread, so the arrays here are small (at most
33 x 65) yet have awkward sizes: 1, 17, and sides that are not multiples of the tile.
"""
import numpy as np
import pytest
from numba import from_dtype

from mini.kernels import cuda as kc
from support.kernels import random_array

DTYPES = [np.float32, np.float64]
SHAPES = [(1,), (17,), (33, 65)]
RTOL = {np.float32: 2e-6, np.float64: 1e-13}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_map_equals_numpy(shape, dtype):
    x = random_array(shape, dtype, 0)
    for fn, reference, arg in [(kc.exp, np.exp, x), (kc.tanh, np.tanh, x),
                               (kc.log, np.log, np.abs(x) + dtype(0.1))]:
        out = kc.map(fn, arg)
        assert out.shape == x.shape and out.dtype == dtype
        np.testing.assert_allclose(out, reference(arg), rtol=RTOL[dtype])


def test_map_edge_values_follow_numpy():
    x = np.array([1000.0, 709.5, 0.0, -1.0, -np.inf, np.inf, np.nan])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(kc.map(kc.exp, x), np.exp(x))
        np.testing.assert_array_equal(kc.map(kc.log, x), np.log(x))


BROADCAST_PAIRS = [((33, 65), (65,)), ((33, 1), (1, 65)), ((17,), ()), ((1,), (17,)),
                   ((2, 3, 5), (3, 1))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", BROADCAST_PAIRS)
def test_zip_equals_numpy_with_broadcasting(shapes, dtype):
    x, y = random_array(shapes[0], dtype, 1), random_array(shapes[1], dtype, 2)
    for fn, reference in [(kc.add, np.add), (kc.subtract, np.subtract),
                          (kc.multiply, np.multiply), (kc.divide, np.divide),
                          (kc.maximum, np.maximum)]:
        out = kc.zip(fn, x, y)
        assert out.shape == np.broadcast_shapes(x.shape, y.shape) and out.dtype == dtype
        np.testing.assert_array_equal(out, reference(x, y))


def test_maximum_propagates_nan_like_numpy():
    x, y = np.array([np.nan, 1.0, 2.0]), np.array([1.0, np.nan, 1.0])
    np.testing.assert_array_equal(kc.zip(kc.maximum, x, y), np.maximum(x, y))


def test_zip_error_names_the_shapes():
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5,\)"):
        kc.zip(kc.add, np.ones((3, 4)), np.ones(5))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axes", [((1,), [None]), ((17,), [None, 0]),
                                         ((33, 65), [None, 0, 1]), ((300,), [None])])
def test_reduce_sum_equals_numpy(shape, axes, dtype):
    x = random_array(shape, dtype, 3)
    for axis in axes:
        total = kc.reduce(kc.add, x, axis)
        assert np.shape(total) == np.shape(x.sum(axis)) and total.dtype == dtype
        np.testing.assert_allclose(total, x.sum(axis), rtol=RTOL[dtype] * 10,
                                   atol=RTOL[dtype] * 10 * np.sqrt(x.size))


def test_reduce_max_equals_numpy():
    x = random_array((33, 65), np.float32, 4)
    np.testing.assert_array_equal(kc.reduce(kc.maximum, x, None, -np.inf), x.max())
    np.testing.assert_array_equal(kc.reduce(kc.maximum, x, 1, -np.inf), x.max(1))


def test_reduce_kernel_leaves_one_result_per_block():
    """Block (p, r) folds elements p*T + t + s*T*parts of row r, then the tree gives their sum."""
    x = random_array((2, 200), np.float64, 5)
    parts, threads = 3, kc.THREADS
    out = np.zeros((2, parts))
    kernel = kc.reduce_kernel(kc.add, from_dtype(x.dtype))
    kernel[(parts, 2), threads](x, np.float64(0), out)
    block_of = (np.arange(200) // threads) % parts   # which block each element belongs to
    expected = np.stack([[row[block_of == p].sum() for p in range(parts)] for row in x])
    np.testing.assert_allclose(out, expected, rtol=1e-13)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tiled", [False, True], ids=["naive", "tiled"])
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (17, 5, 3), (33, 65, 17)])
def test_matmul_equals_numpy(m, k, n, tiled, dtype):
    a, b = random_array((m, k), dtype, 6), random_array((k, n), dtype, 7)
    out = kc.matmul(a, b, tiled=tiled)
    assert out.shape == (m, n) and out.dtype == dtype
    np.testing.assert_allclose(out, a @ b, rtol=RTOL[dtype] * k, atol=RTOL[dtype] * k)


def test_matmul_error_names_the_shapes():
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5, 2\)"):
        kc.matmul(np.ones((3, 4)), np.ones((5, 2)))


def test_device_arrays_stay_on_the_device_between_kernels():
    a, b = random_array((9, 20), np.float64, 8), random_array((20, 18), np.float64, 9)
    product = kc.matmul_device(kc.to_device(a), kc.to_device(b))
    activated = kc.map_device(kc.tanh, product)
    shifted = kc.zip_device(kc.subtract, activated, kc.to_device(np.ones(18)))
    sums = kc.reduce_device(kc.add, shifted)
    for array in (product, activated, shifted, sums):
        assert not isinstance(array, np.ndarray) and hasattr(array, "copy_to_host")
    np.testing.assert_allclose(sums.copy_to_host(), (np.tanh(a @ b) - 1).sum(1), rtol=1e-12)
