"""The kernel backends: a model trains identically on numpy, cpu and cuda (simulator where no GPU),
and every backend call returns what numpy returns."""
import warnings

import numpy as np
import pytest

import mini
from mini.backend import NumpyBackend
from mini.kernels import cpu
from mini.kernels.backends import CpuBackend, CudaBackend

TOLERANCE = {np.float64: 1e-10, np.float32: 1e-5}


def _train(backend, dtype, steps=3, lr=0.5):
    """A two-layer classifier, softmax cross-entropy, plain SGD; returns losses and parameters."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 5)).astype(dtype)
    targets = mini.one_hot(rng.integers(0, 3, 6), 3).astype(dtype)
    params = {"W1": rng.standard_normal((5, 7)).astype(dtype) * dtype(0.5),
              "b1": np.zeros(7, dtype),
              "W2": rng.standard_normal((7, 3)).astype(dtype) * dtype(0.5)}

    def loss(p):
        hidden = mini.relu(x @ p["W1"] + p["b1"])
        log_probs = mini.log_softmax(hidden @ p["W2"], axis=1)
        return -mini.mean(mini.sum(log_probs * targets, axis=1))

    losses = []
    with mini.use_backend(backend):
        for _ in range(steps):
            value, grads = mini.value_and_grad(loss)(params)
            losses.append(value)
            params = {name: params[name] - dtype(lr) * grads[name] for name in params}
    return np.array(losses), params


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_model_trains_identically_on_every_backend(dtype):
    reference_losses, reference_params = _train("numpy", dtype)
    assert reference_losses[-1] < reference_losses[0]   # it does learn
    for backend in ("cpu", "cuda"):
        losses, params = _train(backend, dtype)
        assert losses.dtype == dtype
        np.testing.assert_allclose(losses, reference_losses, rtol=TOLERANCE[dtype],
                                   err_msg=f"losses on the {backend} backend")
        for name, value in params.items():
            assert value.dtype == dtype
            np.testing.assert_allclose(value, reference_params[name], rtol=TOLERANCE[dtype],
                                       atol=TOLERANCE[dtype], err_msg=f"{name} on {backend}")


def test_use_backend_restores_the_previous_backend():
    mini.set_backend("numpy")
    with mini.use_backend("cpu") as ops:
        assert mini.get_backend() == "cpu" and isinstance(ops, CpuBackend)
    assert mini.get_backend() == "numpy"
    with pytest.raises(RuntimeError, match="inside"):
        with mini.use_backend("cpu"):
            raise RuntimeError("an error inside the block")
    assert mini.get_backend() == "numpy"


F32 = np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4) / 7
F64 = F32.astype(np.float64)
INTS = np.arange(12).reshape(3, 4)
# (method, args, kwargs): the float cases run on the kernels, the others fall back to numpy
CALLS = [
    ("add", (F32, 1), {}), ("add", (2.5, F32), {}), ("add", (F32, F64), {}),
    ("subtract", (F32, F32[0]), {}), ("multiply", (F64, F64[:, :1]), {}),
    ("divide", (F32, np.float32(3)), {}), ("divide", (INTS, 4), {}), ("divide", (F64, 0.0), {}),
    ("maximum", (F32 - 1, 0), {}), ("maximum", (INTS, 5), {}), ("add", (np.float64(1), 2), {}),
    ("add", (F32.astype(np.float16), 1), {}), ("multiply", (np.ones((0, 4)), F64[0]), {}),
    ("exp", (F32,), {}), ("log", (F64,), {}), ("tanh", (F32.T,), {}), ("exp", (INTS,), {}),
    ("exp", (1.5,), {}), ("log", (np.float32(2),), {}),
    ("sum", (F32,), {}), ("sum", (F64,), dict(axis=0)), ("sum", (F32,), dict(axis=-1)),
    ("sum", (F64,), dict(axis=1, keepdims=True)), ("sum", (F32,), dict(keepdims=True)),
    ("sum", (F64,), dict(axis=(0, 1))), ("sum", (INTS,), dict(axis=0)), ("sum", (2.0,), {}),
    ("matmul", (F32, F32.T), {}), ("matmul", (F64[0], F64.T), {}), ("matmul", (F32, F32[0]), {}),
    ("matmul", (F64[0], F64[0]), {}), ("matmul", (np.stack([F64, F64]), F64.T), {}),
    ("matmul", (F32, F64.T), {}), ("matmul", (INTS, INTS.T), {}),
]


def _same_as_numpy(backend, method, args, kwargs):
    with np.errstate(all="ignore"):
        expected = getattr(NumpyBackend, method)(*args, **kwargs)
        got = getattr(backend, method)(*args, **kwargs)
    assert type(got) is type(expected), (method, args, kwargs)
    assert np.shape(got) == np.shape(expected) and got.dtype == expected.dtype
    rtol = 1e-6 if expected.dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, expected, rtol=rtol, err_msg=f"{backend.name}.{method}")


SCALARS = [1.5, np.float64(-2.25), 0.0, -0.0, np.float64(np.inf), np.float64(np.nan), 1e308]


@pytest.mark.parametrize("method", ["add", "subtract", "multiply", "divide"])
def test_float_scalars_get_the_ufuncs_value_type_and_warnings(method):
    """The numpy backend computes two float scalars without the ufunc: the same value, np.float64
    (not a Python float), and a RuntimeWarning where the ufunc warns (1.0 / 0.0 is inf, not a
    ZeroDivisionError)."""
    ufunc = getattr(np, method)
    for x in SCALARS:
        for y in SCALARS:
            with warnings.catch_warnings(record=True) as ours:
                warnings.simplefilter("always")
                got = getattr(NumpyBackend, method)(x, y)
            with warnings.catch_warnings(record=True) as numpys:
                warnings.simplefilter("always")
                expected = ufunc(x, y)
            assert type(got) is np.float64, (method, x, y, type(got))
            assert got == expected or (np.isnan(got) and np.isnan(expected)), (method, x, y)
            assert np.signbit(got) == np.signbit(expected), (method, x, y)
            assert [w.category for w in ours] == [w.category for w in numpys], (method, x, y)


@pytest.mark.parametrize("method, args, kwargs", CALLS)
def test_cpu_backend_returns_what_numpy_returns(method, args, kwargs):
    _same_as_numpy(CpuBackend(), method, args, kwargs)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")   # from simulator threads
def test_cuda_backend_returns_what_numpy_returns():
    backend = CudaBackend()
    for method, args, kwargs in CALLS:
        _same_as_numpy(backend, method, args, kwargs)


def test_float_arrays_run_on_the_kernels_and_the_rest_on_numpy(monkeypatch):
    used = []

    def spy(name):
        kernel = getattr(cpu, name)
        return lambda *args, **kwargs: used.append(name) or kernel(*args, **kwargs)

    for name in ("map", "zip", "reduce", "matmul"):
        monkeypatch.setattr(cpu, name, spy(name))
    backend = CpuBackend()
    for method, args, kwargs in [("maximum", (F32, 0), {}), ("exp", (F64,), {}),
                                 ("sum", (F32,), dict(axis=1)), ("matmul", (F32, F32.T), {})]:
        getattr(backend, method)(*args, **kwargs)
    assert used == ["zip", "map", "reduce", "matmul"]
    for method, args, kwargs in [("add", (INTS, 1), {}), ("exp", (2.0,), {}),
                                 ("sum", (F64,), dict(axis=(0, 1))),
                                 ("matmul", (F64[0], F64[0]), {})]:
        getattr(backend, method)(*args, **kwargs)
    assert used == ["zip", "map", "reduce", "matmul"]   # nothing more: numpy did those
