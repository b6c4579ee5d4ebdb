"""What the tests of mini's kernels share."""
import numpy as np


def random_array(shape, dtype, seed):
    """Standard normal numbers of ``shape`` and ``dtype``, the same for the same ``seed``."""
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)
