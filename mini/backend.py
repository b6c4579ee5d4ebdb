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
import operator

import numpy as np

_FLOAT_SCALARS = (float, np.float64)


def _arithmetic(ufunc, scalar_operator):
    """``ufunc``, except that two float64 scalars meet in numpy's scalar arithmetic
    (``np.float64``'s operators): the same IEEE result, type and warnings, without the ufunc
    machinery, which costs ten times more for one number.  In a traced scalar program (a chain
    of ``x = x * c + d``) that machinery was the largest part of each operation's cost."""
    def compute(x, y):
        if type(x) in _FLOAT_SCALARS and type(y) in _FLOAT_SCALARS:
            return scalar_operator(np.float64(x), y)
        return ufunc(x, y)
    compute.__name__ = compute.__qualname__ = ufunc.__name__
    return staticmethod(compute)


class NumpyBackend:
    """The reference backend: every operation is numpy's own."""

    name = "numpy"
    matmul = staticmethod(np.matmul)
    add = _arithmetic(np.add, operator.add)
    subtract = _arithmetic(np.subtract, operator.sub)
    multiply = _arithmetic(np.multiply, operator.mul)
    divide = _arithmetic(np.divide, operator.truediv)
    maximum = staticmethod(np.maximum)
    exp = staticmethod(np.exp)
    log = staticmethod(np.log)
    tanh = staticmethod(np.tanh)

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        """np.sum, without its Python-level dispatch: it runs several times per training step."""
        return np.add.reduce(x, axis=axis, keepdims=keepdims)


# name -> a zero-argument factory, or the "module:attribute" of one, imported only when first
# chosen, so that numba is never loaded by a student who stays on numpy.
_FACTORIES = {
    "numpy": "mini.backend:NumpyBackend",
    "cpu": "mini.kernels.backends:CpuBackend",
    "cuda": "mini.kernels.backends:CudaBackend",
}

ops = NumpyBackend()


def register(name, factory):
    """Make backend ``name`` one to choose: ``factory`` makes it (a class, or any callable with no
    arguments), or is the ``"module:attribute"`` of one, imported when it is first chosen."""
    _FACTORIES[name] = factory


def unregister(name):
    """Forget backend ``name`` (:func:`register`); the one in use stays in use."""
    _FACTORIES.pop(name, None)


def names():
    """The names of the backends there are to choose from."""
    return sorted(_FACTORIES)


def _make(name):
    if name not in _FACTORIES:
        raise ValueError(f"unknown backend {name!r}; choose one of {names()}")
    factory = _FACTORIES[name]
    if isinstance(factory, str):
        module, attribute = factory.split(":")
        factory = getattr(importlib.import_module(module), attribute)
    return factory()


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
