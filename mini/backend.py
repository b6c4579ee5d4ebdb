"""Where the heavy forward computations run: numpy, Numba on the CPU, or CUDA.

The primitives in ``mini.primitives`` never call numpy for their expensive work directly; they call
``backend.ops.matmul``, ``backend.ops.add``, ... .  Swapping ``ops`` moves every model written with
mini onto other kernels without touching a line of the model or of a derivative (lab 5).

    mini.set_backend("cpu")            # from now on
    with mini.use_backend("cuda"):     # for a block
        ...
"""
import contextlib
import importlib

import numpy as np


class NumpyBackend:
    """The reference backend: every operation is numpy's own."""

    name = "numpy"
    matmul = staticmethod(np.matmul)
    add = staticmethod(np.add)
    subtract = staticmethod(np.subtract)
    multiply = staticmethod(np.multiply)
    divide = staticmethod(np.divide)
    maximum = staticmethod(np.maximum)
    exp = staticmethod(np.exp)
    log = staticmethod(np.log)
    tanh = staticmethod(np.tanh)

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        """np.sum, without its Python-level dispatch: it runs several times per training step."""
        return np.add.reduce(x, axis=axis, keepdims=keepdims)


# name -> "module:attribute" of a zero-argument factory; imported only when first chosen, so that
# numba is never loaded by a student who stays on numpy.
_FACTORIES = {
    "numpy": "mini.backend:NumpyBackend",
    "cpu": "mini.kernels.backends:CpuBackend",
    "cuda": "mini.kernels.backends:CudaBackend",
}

ops = NumpyBackend()


def _make(name):
    if name not in _FACTORIES:
        raise ValueError(f"unknown backend {name!r}; choose one of {sorted(_FACTORIES)}")
    module, attribute = _FACTORIES[name].split(":")
    return getattr(importlib.import_module(module), attribute)()


def set_backend(name):
    """Run the heavy primitives on backend ``name`` ("numpy", "cpu" or "cuda") from now on."""
    global ops
    ops = _make(name)
    return ops


def get_backend():
    """The name of the backend in use."""
    return ops.name


@contextlib.contextmanager
def use_backend(name):
    """Run the heavy primitives on backend ``name`` inside a ``with`` block, then restore."""
    global ops
    previous = ops
    set_backend(name)
    try:
        yield ops
    finally:
        ops = previous
