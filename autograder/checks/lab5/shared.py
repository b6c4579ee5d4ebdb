"""What lab 5's checks share: sizes and arrays drawn from the seed, tolerances by dtype, and the
two views of a kernel's compiled code that each kernel's checks score apart."""
import numpy as np

from autograder.checks import focused
from autograder.checks.ptx import COMPILES, FLOAT64


def odd(rng, low, high):
    """An odd size in [low, high]: no multiple of any power-of-two tile or block."""
    return int(rng.integers(low // 2, (high - 1) // 2 + 1)) * 2 + 1


def array(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def tolerances(dtype):
    return {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}



def layout(code_check):
    """What ``code_check`` reads in the PTX but its float64 instructions: how the work is laid
    out (the grid's size, shared arrays, barriers)."""
    return focused(code_check, lambda key: key != FLOAT64, f"{code_check.__name__}_layout")


def float32(code_check):
    return focused(code_check, lambda key: key in (COMPILES, FLOAT64),
                   f"{code_check.__name__}_float32")

