"""Host-side shape handling shared by the CPU and CUDA reductions."""
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
