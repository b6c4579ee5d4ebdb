"""Student half of lab 5's checks: the student's kernels launched on the inputs the grader drew,
and their code handed to the grader to compile.

A launch probe runs ``kernel[grid, block](...)`` on the arrays of its inputs (on Numba's CUDA
simulator where there is no GPU), with outputs that start as NaN so that an element no thread
writes shows, and returns the outputs: the grader compares them with numpy's.  A code probe
returns the kernel as plain data (``mini.kernels.ptx.describe``: its code object and the values it
reads, the check's own function by name); the grader compiles it for a real GPU in a process of
its own and reads the PTX.  The scalar functions of the checks come as source, and nothing here
computes what a fill-in computes.
"""
import math
import warnings

import numpy as np

from autograder.probes import probe
from mini.kernels import ptx


def scalar_function(source):
    """The check's scalar function, from its source (``"lambda v: 2.0 * v + 1.0"``); it may read
    ``math`` and ``cuda`` (``cuda.grid(1)``: the number of the thread that calls it)."""
    from mini.kernels import device
    device.choose()                     # the notebook chose already; numba.cuda is the chosen one
    from numba import cuda
    return eval(source, {"math": math, "cuda": cuda})


def _kernel(kernel, made_by):
    if not (callable(getattr(kernel, "py_func", None)) and hasattr(kernel, "__getitem__")):
        raise TypeError(f"{made_by} should be a CUDA kernel made with @cuda.jit (launched as "
                        "kernel[blocks, threads](...)), got "
                        f"{type(kernel).__name__} {kernel!r:.60}")
    return kernel


def _launch(kernel, made_by, grid, block, *args):
    """``kernel[grid, block](*args)`` after checking that ``kernel`` is a CUDA kernel."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # on a GPU: "host array used in kernel", "grid too small"
        _kernel(kernel, made_by)[grid, block](*args)


def _nans(shape, dtype):
    return np.full(shape, np.nan, dtype)


@probe
def map_launch(student, grader, source, grid, block, x):
    """``out`` after ``map_kernel(fn)[grid, block](x, out)``."""
    out = _nans(x.shape, x.dtype)
    _launch(student.map_kernel(scalar_function(source)), f"map_kernel({source})", grid, block,
            x, out)
    return out


@probe
def zip_launch(student, grader, source, grid, block, x, y):
    """``out`` after ``zip_kernel(fn)[grid, block](x, y, out)``."""
    out = _nans(x.shape, x.dtype)
    _launch(student.zip_kernel(scalar_function(source)), f"zip_kernel({source})", tuple(grid),
            tuple(block), x, y, out)
    return out


@probe
def reduce_launch(student, grader, source, blocks, x, start, threads=None):
    """``partial`` after ``reduce_kernel(fn)[blocks, THREADS](x, start, partial)``, with the
    notebook's THREADS, or ``threads`` in its place."""
    constants = {"THREADS": threads} if threads else {}
    partial = _nans(blocks, x.dtype)
    with student.using(**constants):
        _launch(student.reduce_kernel(scalar_function(source)), f"reduce_kernel({source})",
                blocks, int(student.THREADS), x, x.dtype.type(start), partial)
    return partial


@probe
def matmul_launch(student, grader, a, b):
    """``C`` after ``matmul_tiled[(ceil(N/TILE), ceil(M/TILE)), (TILE, TILE)](A, B, C)``."""
    tile = int(student.TILE)
    (m, _), n = a.shape, b.shape[1]
    c = _nans((m, n), a.dtype)
    _launch(student.matmul_tiled, "matmul_tiled", (-(-n // tile), -(-m // tile)), (tile, tile),
            a, b, c)
    return c


@probe
def spmv_launch(student, grader, data, indices, indptr, x, blocks, threads):
    """``y`` after ``spmv_kernel[blocks, threads](data, indices, indptr, x, y)``."""
    y = _nans(indptr.size - 1, data.dtype)
    _launch(student.spmv_kernel, "spmv_kernel", blocks, threads, data, indices, indptr, x, y)
    return y


@probe
def spmm_launch(student, grader, data, indices, indptr, x, grid, block):
    """``Y`` after ``spmm_kernel[grid, block](data, indices, indptr, X, Y)``."""
    y = _nans((indptr.size - 1, x.shape[1]), data.dtype)
    _launch(student.spmm_kernel, "spmm_kernel", tuple(grid), tuple(block), data, indices, indptr,
            x, y)
    return y


@probe
def spmm_writers(student, grader, data, indices, indptr, x, grid, block):
    """For each element of ``Y``, the ``cuda.grid(2)`` of the thread that stored it, from the
    simulator's record of ``spmm_kernel[grid, block](data, indices, indptr, X, Y)``."""
    from mini.kernels import traffic
    y = _nans((indptr.size - 1, x.shape[1]), data.dtype)
    kernel = _kernel(student.spmm_kernel, "spmm_kernel")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = traffic.count(kernel, tuple(grid), tuple(block), data, indices, indptr, x, y,
                               names=["data", "indices", "indptr", "X", "Y"])
    return record.writers("Y")


@probe
def kernel_code(student, grader, fill_in, source=None, constants=None):
    """The kernel of ``fill_in`` as plain data, for the grader to compile: the notebook's kernel,
    or the one its factory makes for the function ``source`` (named ``fn`` in the description),
    with the notebook's names ``constants`` (``{"TILE": 4}``) set while it is described."""
    with student.using(**(constants or {})):
        kernel, named = getattr(student, fill_in), {}
        if source is not None:
            named = {"fn": scalar_function(source)}
            kernel = kernel(named["fn"])
        return ptx.describe(_kernel(kernel, fill_in if source is None else
                                    f"{fill_in}({source})"), named)


@probe
def traffic_counts(student, grader, shapes):
    """The student's counts ``tiled_traffic(M, K, N, T)`` for each shape, as two arrays."""
    counts = [student.tiled_traffic(*(int(side) for side in shape)) for shape in shapes]
    return {name: np.array([float(count[name]) for count in counts]) for name in ("A", "B")}


@probe
def to_csr_arrays(student, grader, dense):
    """The student's CSR arrays of ``dense``, and the dtype of its values."""
    data, indices, indptr = student.to_csr(dense)
    return {"data": np.asarray(data), "indices": np.asarray(indices),
            "indptr": np.asarray(indptr), "dtype of data": np.asarray(data).dtype.name}


@probe
def embedding_rows(student, grader, ids, grad_out, vocab_size):
    """The student's row-sparse gradient of an embedding lookup."""
    rows, values = student.embedding_grad(ids, grad_out, vocab_size)
    return {"rows": np.asarray(rows), "values": np.asarray(values)}
