"""mini.kernels.sparse: CSR storage and SpMV / SpMM on the CPU and with CUDA (the simulator here)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mini.kernels import sparse


def _dense(rng, rows, cols, density, dtype=np.float64):
    mask = rng.random((rows, cols)) < density
    return np.where(mask, rng.standard_normal((rows, cols)), 0.0).astype(dtype)


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(0, 9), cols=st.integers(1, 9), density=st.floats(0.0, 1.0),
       seed=st.integers(0, 2**16))
def test_csr_round_trips_and_stores_only_the_nonzeros_row_by_row(rows, cols, density, seed):
    dense = _dense(np.random.default_rng(seed), rows, cols, density)
    a = sparse.from_dense(dense)
    assert np.array_equal(a.to_dense(), dense)
    assert a.nnz == np.count_nonzero(dense) and a.indptr.shape == (rows + 1,)
    for r in range(rows):
        stretch = slice(a.indptr[r], a.indptr[r + 1])
        assert np.array_equal(a.indices[stretch], np.flatnonzero(dense[r]))
        assert np.array_equal(a.data[stretch], dense[r][dense[r] != 0])


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 12), cols=st.integers(1, 12), n=st.integers(1, 5),
       density=st.floats(0.0, 1.0), seed=st.integers(0, 2**16))
def test_cpu_products_agree_with_the_dense_product(rows, cols, n, density, seed):
    rng = np.random.default_rng(seed)
    dense = _dense(rng, rows, cols, density)
    a = sparse.from_dense(dense)
    x, X = rng.standard_normal(cols), rng.standard_normal((cols, n))
    assert np.allclose(sparse.spmv(a, x), dense @ x, rtol=1e-12, atol=1e-12)
    assert np.allclose(sparse.spmm(a, X), dense @ X, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 5, 3), (37, 11, 20)])   # more rows than threads
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cuda_products_agree_with_the_dense_product_and_keep_the_dtype(shape, dtype):
    rows, cols, n = shape
    rng = np.random.default_rng(rows)
    dense = _dense(rng, rows, cols, 0.3, dtype)
    a = sparse.from_dense(dense)
    x, X = rng.standard_normal(cols).astype(dtype), rng.standard_normal((cols, n)).astype(dtype)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for got, want in [(sparse.spmv_cuda(a, x), dense.astype(np.float64) @ x),
                      (sparse.spmm_cuda(a, X), dense.astype(np.float64) @ X)]:
        assert got.dtype == dtype
        assert np.allclose(got, want, rtol=tolerance, atol=tolerance)


def test_float32_accumulates_in_float32():
    """1 + 1e-8 rounds to 1 in float32: a float64 accumulator would keep the 1e-8s."""
    a = sparse.from_dense(np.array([[1.0] + [1e-8] * 8], np.float32))
    x = np.ones(9, np.float32)
    assert sparse.spmv(a, x)[0] == np.float32(1.0)
    assert sparse.spmv(a.__class__(a.data.astype(np.float64), a.indices, a.indptr, a.shape),
                       x.astype(np.float64))[0] > 1.0


def test_random_has_about_the_density_asked_for():
    a = sparse.random(200, 100, 0.05, np.random.default_rng(0))
    assert a.data.dtype == np.float32 and 0.04 < a.density < 0.06


@pytest.mark.parametrize("make, message", [
    (lambda: sparse.CSR(np.ones(2), np.array([0]), np.array([0, 2]), (1, 3)), "one length"),
    (lambda: sparse.CSR(np.ones(2), np.array([0, 1]), np.array([0, 2]), (2, 3)), "expected (3,)"),
    (lambda: sparse.CSR(np.ones(2), np.array([0, 1]), np.array([0, 3]), (1, 3)), "end at nnz"),
    (lambda: sparse.CSR(np.ones(2), np.array([0, 5]), np.array([0, 2]), (1, 3)), "[0, 3)"),
    (lambda: sparse.spmv(sparse.from_dense(np.eye(3)), np.ones(4)), "must be (3,)"),
    (lambda: sparse.spmm(np.eye(3), np.ones((3, 2))), "must be a CSR"),
    (lambda: sparse.from_dense(np.ones(3)), "2-D"),
    (lambda: sparse.random(3, 3, 1.5, np.random.default_rng(0)), "density"),
])
def test_bad_input_gets_an_error_that_names_the_problem(make, message):
    with pytest.raises((ValueError, TypeError), match=message.replace("(", r"\(").replace(
            ")", r"\)").replace("[", r"\[")):
        make()
