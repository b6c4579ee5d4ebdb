"""Sparse matrices in CSR form and their products with dense vectors and matrices (L05 slide 2).

A matrix that is mostly zeros wastes memory and time when stored dense: ``A @ x`` multiplies and
adds every zero.  CSR (compressed sparse row) stores only the nonzeros, row by row, in three
arrays:

* ``data`` (nnz,): the nonzero values, row 0 first, left to right within a row;
* ``indices`` (nnz,): the column of each value;
* ``indptr`` (rows + 1,): row r's values are ``data[indptr[r]:indptr[r + 1]]``, so
  ``indptr[0] = 0`` and ``indptr[-1] = nnz``.

SpMV ``y = A x`` is then ``y[r] = sum_p data[p] x[indices[p]]`` over row r's stretch p: nnz
multiply-adds instead of rows * cols.  SpMM ``Y = A X`` does the same with whole rows of a dense
``X``.  On the CPU the loop runs row by row, compiled with ``@njit`` (rows are independent, so
``prange`` could split them over cores; serial code compiles in a third of the time, which a lab
notebook that runs once pays on every run); on the GPU one thread owns one row (SpMV) or one
element of Y (SpMM, x threads along Y's columns, so that a warp reads neighbouring elements of a
row of X: coalesced).  An embedding lookup is an SpMM: the one-hot rows of a batch's ids times
the table E.  Accumulators have the matrix's dtype.

Importing this module loads no CUDA; the first CUDA call makes mini's GPU-or-simulator choice.
"""
import dataclasses

import numpy as np
from numba import njit

from mini.answers import answer
from mini.kernels import device


@dataclasses.dataclass(frozen=True)
class CSR:
    """A (rows, cols) sparse matrix: ``data``, ``indices``, ``indptr`` as in the module docstring."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple

    def __post_init__(self):
        rows, cols = self.shape
        data, indices, indptr = (np.asarray(a) for a in (self.data, self.indices, self.indptr))
        if data.ndim != 1 or indices.shape != data.shape:
            raise ValueError(f"CSR: data {data.shape} and indices {indices.shape} must be 1-D "
                             "arrays of one length (one column index per stored value)")
        if indptr.shape != (rows + 1,):
            raise ValueError(f"CSR: indptr has shape {indptr.shape}, expected ({rows + 1},) for "
                             f"{rows} rows (row r's values are data[indptr[r]:indptr[r + 1]])")
        if rows and (indptr[0] != 0 or indptr[-1] != data.size or np.any(np.diff(indptr) < 0)):
            raise ValueError(f"CSR: indptr must start at 0, never decrease and end at nnz = "
                             f"{data.size}; got {indptr[:5].tolist()}...{indptr[-1]}")
        if indices.size and (indices.min() < 0 or indices.max() >= cols):
            raise ValueError(f"CSR: column indices must lie in [0, {cols}), got "
                             f"{indices.min()}..{indices.max()}")
        for name, value in (("data", data), ("indices", indices.astype(np.int64)),
                            ("indptr", indptr.astype(np.int64))):
            object.__setattr__(self, name, np.ascontiguousarray(value))
        object.__setattr__(self, "shape", (int(rows), int(cols)))

    @property
    def nnz(self):
        return self.data.size

    @property
    def density(self):
        """The fraction of entries stored: nnz / (rows * cols)."""
        return self.nnz / max(1, self.shape[0] * self.shape[1])

    def to_dense(self):
        dense = np.zeros(self.shape, self.data.dtype)
        rows = np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))
        dense[rows, self.indices] = self.data
        return dense


@answer("lab5", "to_csr")
def from_dense(dense):
    """The CSR form of a 2-D array: its nonzeros, row by row."""
    dense = np.asarray(dense)
    if dense.ndim != 2:
        raise ValueError(f"from_dense: expected a 2-D array, got shape {dense.shape}")
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
    return CSR(dense[rows, cols], cols, indptr, dense.shape)


def random(rows, cols, density, rng, dtype=np.float32):
    """A random (rows, cols) CSR matrix with about ``density * rows * cols`` normal nonzeros."""
    if not 0.0 <= density <= 1.0:
        raise ValueError(f"random: density must lie in [0, 1], got {density}")
    mask = rng.random((rows, cols)) < density
    return from_dense(np.where(mask, rng.standard_normal((rows, cols)), 0.0).astype(dtype))


def _operand(a, x, ndim, name):
    if not isinstance(a, CSR):
        raise TypeError(f"{name}: a must be a CSR matrix, got {type(a).__name__}")
    x = np.ascontiguousarray(x, dtype=a.data.dtype)
    if x.ndim != ndim or x.shape[0] != a.shape[1]:
        wanted = f"({a.shape[1]},)" if ndim == 1 else f"({a.shape[1]}, n)"
        raise ValueError(f"{name}: a is {a.shape}, so the dense operand must be {wanted}, got "
                         f"{x.shape}")
    return x


# ---------------------------------------------------------------------------------------------
# CPU: row by row
# ---------------------------------------------------------------------------------------------

@answer("lab5", "spmv_kernel")
@njit
def _spmv_cpu(data, indices, indptr, x, y, zero):
    for r in range(y.size):
        acc = zero
        for p in range(indptr[r], indptr[r + 1]):
            acc += data[p] * x[indices[p]]
        y[r] = acc


@answer("lab5", "spmm_kernel")
@njit
def _spmm_cpu(data, indices, indptr, x, y):
    for r in range(y.shape[0]):         # y starts at zero; row r of y is row r's own
        for p in range(indptr[r], indptr[r + 1]):
            value, k = data[p], indices[p]
            for j in range(y.shape[1]):  # along a row of x and of y: stride 1
                y[r, j] += value * x[k, j]


def spmv(a, x):
    """``a @ x`` for a CSR ``a`` (rows, cols) and a dense vector ``x`` (cols,), on the CPU."""
    x = _operand(a, x, 1, "spmv")
    y = np.empty(a.shape[0], a.data.dtype)
    _spmv_cpu(a.data, a.indices, a.indptr, x, y, a.data.dtype.type(0))
    return y


def spmm(a, x):
    """``a @ x`` for a CSR ``a`` (rows, cols) and a dense matrix ``x`` (cols, n), on the CPU."""
    x = _operand(a, x, 2, "spmm")
    y = np.zeros((a.shape[0], x.shape[1]), a.data.dtype)
    _spmm_cpu(a.data, a.indices, a.indptr, x, y)
    return y


# ---------------------------------------------------------------------------------------------
# CUDA: one thread per row (SpMV) or per output element (SpMM), grid-stride loops
# ---------------------------------------------------------------------------------------------

_kernels = {}


def _load_cuda():
    """numba.cuda, after mini's GPU-or-simulator choice, as this module's global ``cuda`` (the
    simulator swaps a kernel's global ``cuda`` for its own while the kernel runs)."""
    global cuda
    device.choose()
    from numba import cuda


@answer("lab5", "spmv_kernel")
def _spmv_kernel():
    """The SpMV kernel, defined on first use: thread g owns the rows g, g + G, ..."""
    if "spmv" not in _kernels:
        _load_cuda()

        @cuda.jit
        def spmv_kernel(data, indices, indptr, x, y, zero):
            for r in range(cuda.grid(1), y.size, cuda.gridsize(1)):
                acc = zero
                for p in range(indptr[r], indptr[r + 1]):
                    acc += data[p] * x[indices[p]]
                y[r] = acc

        _kernels["spmv"] = spmv_kernel
    return _kernels["spmv"]


@answer("lab5", "spmm_kernel")
def _spmm_kernel():
    """The SpMM kernel, defined on first use: one thread per element of Y, x along its rows."""
    if "spmm" not in _kernels:
        _load_cuda()

        @cuda.jit
        def spmm_kernel(data, indices, indptr, x, y, zero):
            col, row = cuda.grid(2)
            cols, rows = cuda.gridsize(2)
            for r in range(row, y.shape[0], rows):
                for j in range(col, y.shape[1], cols):
                    acc = zero
                    for p in range(indptr[r], indptr[r + 1]):
                        acc += data[p] * x[indices[p], j]
                    y[r, j] = acc

        _kernels["spmm"] = spmm_kernel
    return _kernels["spmm"]


def _launch_shape(n, threads):
    """(blocks, threads) along one axis of n elements: fewer on the simulator (a grid-stride loop
    covers the rest), where every thread is a Python thread."""
    most = 2 if device.choose().simulator else 65535
    return max(1, min(most, -(-n // threads))), threads


def spmv_cuda(a, x):
    """``a @ x`` as :func:`spmv`, with one CUDA thread per row."""
    x = _operand(a, x, 1, "spmv_cuda")
    y = np.empty(a.shape[0], a.data.dtype)
    if y.size:
        _spmv_kernel()[_launch_shape(y.size, 32)](
            a.data, a.indices, a.indptr, x, y, a.data.dtype.type(0))
    return y


def spmm_cuda(a, x):
    """``a @ x`` as :func:`spmm`, with one CUDA thread per element of the result."""
    x = _operand(a, x, 2, "spmm_cuda")
    y = np.empty((a.shape[0], x.shape[1]), a.data.dtype)
    if y.size:
        (bx, tx), (by, ty) = _launch_shape(y.shape[1], 16), _launch_shape(y.shape[0], 4)
        _spmm_kernel()[(bx, by), (tx, ty)](
            a.data, a.indices, a.indptr, x, y, a.data.dtype.type(0))
    return y
