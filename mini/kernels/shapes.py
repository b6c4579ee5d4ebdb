"""Host-side shape handling shared by the CPU and CUDA kernels."""
import numpy as np


def reduction_rows(x, axis):
    """``(rows, kept)``: ``x`` as a 2-D array whose rows are what a reduction over ``axis`` (an int,
    or None for all elements) combines, and the shape of the result.  The reduced axis is moved
    last, so that each row is contiguous in memory (a copy when it was not last already)."""
    if axis is None:
        return x.reshape(1, -1), ()
    moved = np.moveaxis(x, axis, -1)
    kept = moved.shape[:-1]
    return moved.reshape(int(np.prod(kept)), x.shape[axis]), kept


def check_matmul(a, b):
    """Raise a clear error unless ``a @ b`` is a product of two 2-D arrays of one dtype."""
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ValueError(f"matmul: a and b must be 2-D, got a {a.shape} and b {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: a {a.shape} and b {b.shape}: a's columns ({a.shape[1]}) "
                         f"must equal b's rows ({b.shape[0]})")
    if a.dtype != b.dtype:
        raise TypeError(f"matmul: a is {a.dtype} and b is {b.dtype}; convert both to one dtype")
