"""The Numba CPU kernels (mini.kernels.cpu) equal numpy on awkward shapes, float32 and float64."""
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from mini.kernels import cpu
from support.kernels import random_array

DTYPES = [np.float32, np.float64]
SHAPES = [(1,), (17,), (33, 65), (2, 3, 5)]
RTOL = {np.float32: 2e-6, np.float64: 1e-13}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fn", [np.exp, np.log, np.tanh])
def test_map_equals_numpy(fn, shape, dtype):
    x = random_array(shape, dtype, 0)
    if fn is np.log:
        x = np.abs(x) + dtype(0.1)
    out = cpu.map(fn, x)
    assert out.shape == x.shape and out.dtype == x.dtype
    np.testing.assert_allclose(out, fn(x), rtol=RTOL[dtype])


def _ulps_apart(a, b):
    """How many float32 values lie between a and b (0 when equal, +0 and -0 equal too)."""
    def ordered(v):
        bits = v.view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    return np.abs(ordered(a) - ordered(b))


def _exp_float32_exact(x):
    """e^x rounded once to float32, from float64 (53 bits: double rounding is all but absent)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(x.astype(np.float64)).astype(np.float32)


def test_exp_float32_within_one_ulp_over_the_whole_float32_range():
    # every 1021st bit pattern: 4.2 million numbers, all exponents, both signs, NaNs and infinities
    x = np.arange(0, 2 ** 32, 1021, dtype=np.uint64).astype(np.uint32).view(np.float32)
    out, exact = cpu.map(cpu.exp, x), _exp_float32_exact(x)
    nan = np.isnan(x)
    assert np.all(np.isnan(out[nan]))
    assert _ulps_apart(out[~nan], exact[~nan]).max() <= 1


def test_exp_float32_at_the_edges_of_the_range():
    """Where e^x overflows (x > 88.72), leaves the normal range (x < -87.34), leaves the
    subnormals (x < -103.97); +-0, +-inf and NaN: exactly float32's e^x."""
    edges = []
    for x in np.float32([88.72283935546875, -87.33654475, -103.27892990343184, -103.97207708]):
        for _ in range(8):
            x = np.nextafter(x, np.float32(-np.inf))
        for _ in range(17):
            edges.append(x)
            x = np.nextafter(x, np.float32(np.inf))
    x = np.array(edges + [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e30, -1e30],
                 np.float32)
    np.testing.assert_array_equal(cpu.map(cpu.exp, x), _exp_float32_exact(x))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [1, 3, 17, 1_000_003])
def test_mini_exp_equals_numpy_on_awkward_sizes(size, dtype):
    x = (random_array(size, dtype, 9) * 30).astype(dtype)
    out = cpu.map(cpu.exp, x)
    assert out.dtype == dtype
    if dtype is np.float64:   # the C library's exp (numpy's own is SIMD code on AVX-512 CPUs)
        np.testing.assert_array_equal(out, np.array([math.exp(v) for v in x]))
    else:
        assert _ulps_apart(out, _exp_float32_exact(x)).max() <= 1
    strided = random_array((33, 65), dtype, 10).T            # not contiguous
    np.testing.assert_allclose(cpu.map(cpu.exp, strided), np.exp(strided), rtol=RTOL[dtype])


def test_map_takes_njit_functions_and_strided_input():
    square_plus_one = njit(lambda v: v * v + 1)
    x = random_array((33, 65), np.float64, 1).T   # not contiguous
    np.testing.assert_array_equal(cpu.map(square_plus_one, x), x * x + 1)


def test_map_rejects_a_plain_python_function():
    with pytest.raises(TypeError, match="numpy ufunc or an @njit function"):
        cpu.map_kernel(lambda v: v + 1)


BROADCAST_PAIRS = [((33, 65), (65,)), ((33, 1), (1, 65)), ((17,), ()), ((1,), (17,)),
                   ((2, 3, 5), (3, 1)), ((3, 9000), (9000,)), ((9000, 1), (1,))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", BROADCAST_PAIRS)
@pytest.mark.parametrize("fn", [np.add, np.subtract, np.multiply, np.divide, np.maximum])
def test_zip_equals_numpy_with_broadcasting(fn, shapes, dtype):
    x, y = random_array(shapes[0], dtype, 2), random_array(shapes[1], dtype, 3)
    out = cpu.zip(fn, x, y)
    assert out.shape == np.broadcast_shapes(x.shape, y.shape) and out.dtype == dtype
    np.testing.assert_array_equal(out, fn(x, y))   # one IEEE operation per element: exact


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.data())
def test_zip_broadcasts_like_numpy_on_any_shapes(shape, data):
    # y's shape: a suffix of x's with some sizes replaced by 1
    suffix = shape[data.draw(st.integers(0, len(shape))):]
    y_shape = [data.draw(st.sampled_from([n, 1])) for n in suffix]
    x, y = random_array(shape, np.float64, 4), random_array(y_shape, np.float64, 5)
    np.testing.assert_array_equal(cpu.zip(np.subtract, x, y), x - y)
    np.testing.assert_array_equal(cpu.zip(np.subtract, y, x), y - x)


def test_zip_errors_name_the_dtypes_and_shapes():
    with pytest.raises(TypeError, match="float32.*float64"):
        cpu.zip(np.add, np.ones(3, np.float32), np.ones(3, np.float64))
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5,\)"):
        cpu.zip(np.add, np.ones((3, 4)), np.ones(5))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (17,), (33, 65), (2, 3, 5), (10_000,), (3, 9000)])
def test_reduce_sum_and_max_equal_numpy(shape, dtype):
    x = random_array(shape, dtype, 6)
    for axis in [None] + list(range(-1, len(shape))):
        total = cpu.reduce(np.add, x, axis)
        assert np.shape(total) == np.shape(x.sum(axis)) and total.dtype == dtype
        np.testing.assert_allclose(total, x.sum(axis), rtol=RTOL[dtype] * 10,
                                   atol=RTOL[dtype] * 10 * np.sqrt(x.size))
        np.testing.assert_array_equal(cpu.reduce(np.maximum, x, axis, -np.inf), x.max(axis))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [1, 3, 17, 1_000_003])
def test_reduce_max_is_nan_wherever_a_nan_is(size, dtype):
    x = random_array(size, dtype, 11)
    assert cpu.reduce(np.maximum, x, None, -np.inf) == x.max()
    for where in {0, size // 2, size - 1}:
        y = x.copy()
        y[where] = np.nan
        assert np.isnan(cpu.reduce(np.maximum, y, None, -np.inf)), f"NaN at {where} of {size}"
    y = x.copy()
    y[size // 3] = np.inf
    assert cpu.reduce(np.maximum, y, None, -np.inf) == np.inf
    y[size // 3] = -np.inf
    assert cpu.reduce(np.maximum, y, None, -np.inf) == y.max()


@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_max_by_rows_with_nan_inf_and_strided_input(dtype):
    x = random_array((7, 5000), dtype, 12)
    x[1, 4999], x[3, 0], x[4, :] = np.nan, np.inf, -np.inf
    x[5, 2500] = np.nan
    for axis in (0, 1, -1, None):
        np.testing.assert_array_equal(cpu.reduce(np.maximum, x, axis, -np.inf), x.max(axis))
    strided = x[::2, ::3]
    np.testing.assert_array_equal(cpu.reduce(np.maximum, strided, 1, -np.inf), strided.max(1))


def test_reduce_of_all_elements_returns_a_numpy_scalar():
    total = cpu.reduce(np.add, np.arange(10.0))
    assert isinstance(total, np.float64) and total == 45.0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (17, 5, 3), (33, 65, 17), (5, 1, 7),
                                     (66, 300, 130), (128, 64, 256)])
def test_matmul_equals_numpy(m, k, n, dtype):
    a, b = random_array((m, k), dtype, 7), random_array((k, n), dtype, 8)
    out = cpu.matmul(a, b)
    assert out.shape == (m, n) and out.dtype == dtype and out.flags.c_contiguous
    _assert_matmul_close(out, a, b)


def _assert_matmul_close(out, a, b):
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b)   # bounds the rounding error of each sum
    assert np.all(np.abs(out - exact) <= 4 * a.shape[1] * np.finfo(a.dtype).eps * scale + 1e-30)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_on_strided_operands_across_task_and_k_blocks(dtype):
    """m, n and k each longer than one task's block (ROWS_PER_TASK, COLS_PER_TASK, K_CHUNK) and
    not a multiple of the register tile; both operands not contiguous."""
    m, k, n = cpu.ROWS_PER_TASK + 3, cpu.K_CHUNK + 477, cpu.COLS_PER_TASK + 5
    a = random_array((m, 2 * k), dtype, 13)[:, ::2]
    b = random_array((n, k), dtype, 14).T
    assert not (a.flags.c_contiguous or b.flags.c_contiguous)
    out = cpu.matmul(a, b)
    assert out.shape == (m, n) and out.dtype == dtype
    _assert_matmul_close(out, a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_carries_nan_and_inf_as_numpy(dtype):
    a, b = np.abs(random_array((17, 33), dtype, 15)), np.abs(random_array((33, 19), dtype, 16))
    a[2, 5], a[4, 0], b[7, 3] = np.nan, np.inf, np.inf
    out, expected = cpu.matmul(a, b), a @ b
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(out[finite], expected[finite], rtol=RTOL[dtype] * 100)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 40))
def test_matmul_on_any_shape(m, k, n):
    a, b = random_array((m, k), np.float64, m), random_array((k, n), np.float64, n)
    np.testing.assert_allclose(cpu.matmul(a, b), a @ b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("transposed", [False, True])
def test_matmul_on_every_edge_of_the_register_tile(transposed, dtype):
    """m, n around the register tile's 6 rows and 2-vector width (16 or 32 columns of float32,
    8 or 16 of float64), from 1 to 70; k from 0 to 70; operands made by transposing (not
    contiguous) or not."""
    for m in (1, 2, 5, 6, 7, 12, 13, 70):
        for n in (1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65, 70):
            for k in (0, 1, 3, 70):
                a, b = random_array((m, k), dtype, m), random_array((k, n), dtype, n)
                if transposed:
                    a, b = np.ascontiguousarray(a.T).T, np.ascontiguousarray(b.T).T
                out = cpu.matmul(a, b)
                assert out.shape == (m, n) and out.dtype == dtype and out.flags.c_contiguous
                _assert_matmul_close(out, a, b)


def test_matmul_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5, 2\).*4.*5"):
        cpu.matmul(np.ones((3, 4)), np.ones((5, 2)))
    with pytest.raises(ValueError, match="2-D"):
        cpu.matmul(np.ones(3), np.ones((3, 2)))


def test_cpu_kernels_never_touch_cuda():
    """A student on the CPU backend sees no CUDA message and never loads numba.cuda."""
    script = ("import sys, numpy as np, mini\n"
              "from mini.kernels import cpu\n"
              "x = np.ones((5, 4))\n"
              "with mini.use_backend('cpu'):\n"
              "    mini.sum(mini.exp(x @ x.T + 1.0))\n"
              "cpu.reduce(np.maximum, cpu.zip(np.add, x, x), 0, -np.inf)\n"
              "print(sorted(m for m in sys.modules if m.startswith('numba.cuda')))\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
    assert "CUDA" not in run.stderr
