"""mini backends that run the heavy primitives on mini's own kernels (lab 5).

    mini.set_backend("cpu")     # Numba CPU kernels (mini.kernels.cpu)
    mini.set_backend("cuda")    # CUDA kernels (mini.kernels.cuda), on a GPU or the simulator

A backend answers the calls ``mini.primitives`` makes (``matmul``, ``add``, ..., ``exp``, ``sum``)
with exactly what numpy would return: same shape, same dtype (numpy's promotion rules, Python
scalars included: ``relu`` calls ``maximum(x, 0)`` and float32 stays float32).  The kernels cover
the float32/float64 arrays that carry a model's work; every other case (integers, 0-d values,
empty arrays, axis tuples, batched matmul operands) goes to numpy itself, so a backend is never
wrong, only sometimes not faster.
"""
import numpy as np

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class KernelBackend:
    """Routes each operation to ``self.kernels`` (a module with map, zip, reduce, matmul and the
    scalar functions exp, log, tanh, add, subtract, multiply, divide, maximum) when it covers
    the case, and to numpy when it does not."""

    name = None
    kernels = None

    def add(self, x, y):
        return self._zip("add", x, y)

    def subtract(self, x, y):
        return self._zip("subtract", x, y)

    def multiply(self, x, y):
        return self._zip("multiply", x, y)

    def divide(self, x, y):
        return self._zip("divide", x, y)

    def maximum(self, x, y):
        return self._zip("maximum", x, y)

    def exp(self, x):
        return self._map("exp", x)

    def log(self, x):
        return self._map("log", x)

    def tanh(self, x):
        return self._map("tanh", x)

    def sum(self, x, axis=None, keepdims=False):  # noqa: A003 (numpy's name)
        if not (_float_array(x) and (axis is None or _valid_axis(axis, x.ndim))):
            return np.sum(x, axis=axis, keepdims=keepdims)
        out = self.kernels.reduce(self.kernels.add, x, axis)
        if keepdims:
            out = np.reshape(out, tuple(1 if axis is None or i == axis % x.ndim else n
                                        for i, n in enumerate(x.shape)))
        return out

    def matmul(self, a, b):
        """a @ b; the kernels do (..., m, k) @ (k, n), a 1-D a being a row and a 1-D b a column
        (numpy does vector @ vector, which it returns as a scalar, and batched b)."""
        if not (_float_array(a) and _float_array(b) and b.ndim <= 2 and a.ndim + b.ndim > 2
                and a.shape[-1] == b.shape[0]):
            return np.matmul(a, b)
        dtype = np.result_type(a, b)
        a2 = a.astype(dtype, copy=False).reshape(-1, a.shape[-1])
        b2 = b.astype(dtype, copy=False).reshape(b.shape[0], -1)
        out = self.kernels.matmul(a2, b2)
        return out.reshape(a.shape[:-1] + b.shape[1:])

    def _map(self, name, x):
        if not _float_array(x):
            return getattr(np, name)(x)
        return self.kernels.map(getattr(self.kernels, name), x)

    def _zip(self, name, x, y):
        dtype = np.result_type(x, y) if _number_or_array(x) and _number_or_array(y) else None
        if dtype not in FLOATS or not (_float_array(x) or _float_array(y)):
            return getattr(np, name)(x, y)
        x, y = np.asarray(x, dtype), np.asarray(y, dtype)
        if x.ndim == y.ndim == 0 or x.size == 0 or y.size == 0:
            return getattr(np, name)(x, y)
        return self.kernels.zip(getattr(self.kernels, name), x, y)

    def __repr__(self):
        return f"<mini backend {self.name!r}>"


class CpuBackend(KernelBackend):
    """Numba CPU kernels (``mini.kernels.cpu``)."""

    name = "cpu"

    def __init__(self):
        from mini.kernels import cpu
        self.kernels = cpu


class CudaBackend(KernelBackend):
    """CUDA kernels (``mini.kernels.cuda``); making one decides GPU or simulator (and says which).

    Every call copies its operands to the GPU and the result back: simple and always correct, but
    for speed on a real GPU keep data there with the ``*_device`` functions of mini.kernels.cuda.
    """

    name = "cuda"

    def __init__(self):
        from mini.kernels import cuda
        self.kernels = cuda


def _float_array(x):
    """A non-empty float32/float64 array of at least one dimension: what the kernels cover."""
    return isinstance(x, np.ndarray) and x.dtype in FLOATS and x.ndim > 0 and x.size > 0


def _number_or_array(x):
    return isinstance(x, (np.ndarray, np.generic, int, float))


def _valid_axis(axis, ndim):
    return isinstance(axis, (int, np.integer)) and -ndim <= axis < ndim
