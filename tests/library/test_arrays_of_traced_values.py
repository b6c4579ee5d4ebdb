"""np.array of traced values (lists, nested lists mixing traced values and numbers) and numpy's
reductions of such lists: numpy's value, shape and dtype, and autograd's gradients and JVPs, under
grad of grad too; what mini still cannot trace through them is refused by name."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mini
from mini.gradcheck import numerical_grad
from mini.numpy_tracing import UFUNCS

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)


def pieces(x, coefficients, np_module):
    """Entries of the list: c_i * x ** (i + 1), so each entry depends on x differently."""
    return [c * x ** (i + 1) if i % 2 == 0 else c * np_module.tanh(x) + x * x
            for i, c in enumerate(coefficients)]


@st.composite
def lists_of_traced(draw):
    shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    length = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), rng.standard_normal(length), rng


@SETTINGS
@given(lists_of_traced())
def test_np_array_of_a_list_stacks_with_numpys_value_shape_dtype_and_autograds_gradient(case):
    x, coefficients, rng = case
    expected = np.array(pieces(x, coefficients, np))
    ours = mini.make_vjp(lambda x: np.array(pieces(x, coefficients, np)), x)[1]
    assert isinstance(ours, np.ndarray) and ours.dtype == expected.dtype
    assert ours.shape == expected.shape == (len(coefficients),) + x.shape
    np.testing.assert_allclose(ours, expected, rtol=1e-12)
    w = rng.standard_normal(expected.shape)
    f = lambda x: np.sum(np.array(pieces(x, coefficients, np)) * w)
    theirs = autograd.grad(lambda x: anp.sum(anp.array(pieces(x, coefficients, anp)) * w))(x)
    np.testing.assert_allclose(mini.grad(f)(x), theirs, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mini.grad(f)(x), numerical_grad(f, x), rtol=1e-5, atol=1e-6)


@SETTINGS
@given(lists_of_traced(), st.sampled_from(["sum", "mean", "prod"]), st.sampled_from([None, 0, -1]))
def test_reductions_of_lists_of_traced_values_equal_numpy_and_autograd(case, name, axis):
    x, coefficients, rng = case
    if axis == -1 and x.ndim == 0:
        axis = 0
    reduce, autograd_reduce = getattr(np, name), getattr(anp, name)
    expected = reduce(pieces(x, coefficients, np), axis=axis)
    ours = mini.make_vjp(lambda x: reduce(pieces(x, coefficients, np), axis=axis), x)[1]
    assert np.shape(ours) == np.shape(expected)
    assert np.result_type(ours) == np.result_type(expected)
    np.testing.assert_allclose(ours, expected, rtol=1e-12)
    w = rng.standard_normal(np.shape(expected))
    f = lambda x: np.sum(reduce(pieces(x, coefficients, np), axis=axis) * w)
    theirs = autograd.grad(lambda x: anp.sum(
        autograd_reduce(anp.array(pieces(x, coefficients, anp)), axis=axis) * w))(x)
    np.testing.assert_allclose(mini.grad(f)(x), theirs, rtol=1e-10, atol=1e-12)


def test_the_two_examples_from_numpys_semantics():
    assert mini.grad(lambda x: np.sum(np.array([x, 2 * x])))(1.0) == 3.0
    assert mini.grad(lambda x: np.mean([x, x + 2]))(1.0) == 1.0
    assert mini.make_vjp(lambda x: np.mean([x, x + 2]), 1.0)[1] == 2.0


def test_nested_lists_mixing_traced_values_and_numbers():
    x = np.random.default_rng(3).standard_normal(())
    w = np.random.default_rng(4).standard_normal((2, 3))
    rows = lambda x, np_module: [[x, 1.0, np_module.exp(x)], [2.0, x * x, -3.0]]
    value = mini.make_vjp(lambda x: np.array(rows(x, np)), x)[1]
    np.testing.assert_array_equal(value, np.array(rows(x, np)))
    assert value.dtype == np.float64 and value.shape == (2, 3)
    ours = mini.grad(lambda x: np.sum(np.array(rows(x, np)) * w))(x)
    theirs = autograd.grad(lambda x: anp.sum(anp.array(rows(x, anp)) * w))(x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_a_primitive_or_a_traced_value_applied_to_an_array_of_traced_values():
    x = np.random.default_rng(5).standard_normal(3)
    f = lambda x: mini.sum(mini.exp(np.array([x, 2 * x])) @ x)
    g = lambda x: anp.sum(anp.dot(anp.exp(anp.array([x, 2 * x])), x))
    np.testing.assert_allclose(mini.grad(f)(x), autograd.grad(g)(x), rtol=1e-12)
    np.testing.assert_allclose(mini.grad(lambda x: np.sum(x * np.array([x, 2 * x])))(x),
                               autograd.grad(lambda x: anp.sum(x * anp.array([x, 2 * x])))(x))


@pytest.mark.parametrize("seed", range(4))
def test_grad_of_grad_and_jvp_through_np_array_equal_autograd(seed):
    x = np.random.default_rng(seed).standard_normal()
    f = lambda x: np.mean([x ** 3, np.tanh(x) * x, 2.0]) + np.sum(np.array([[x, x * x]]) ** 2)
    g = lambda x: anp.mean(anp.array([x ** 3, anp.tanh(x) * x, 2.0])) + anp.sum(
        anp.array([[x, x * x]]) ** 2)
    np.testing.assert_allclose(mini.grad(mini.grad(f))(x), autograd.grad(autograd.grad(g))(x),
                               rtol=1e-10)
    np.testing.assert_allclose(mini.grad(mini.grad(mini.grad(f)))(x),
                               autograd.grad(autograd.grad(autograd.grad(g)))(x), rtol=1e-10)
    outputs = lambda x: np.array([x * x, np.exp(x), 1.0])
    value, tangent = mini.jvp(outputs, x, 0.5)
    their_value, theirs = autograd.make_jvp(lambda x: anp.array([x * x, anp.exp(x), 1.0]))(x)(0.5)
    np.testing.assert_allclose(value, their_value, rtol=1e-12)
    np.testing.assert_allclose(tangent, theirs, rtol=1e-12)
    np.testing.assert_allclose(mini.jacobian(outputs)(x), theirs / 0.5, rtol=1e-12)


def test_conversions_that_would_drop_the_trace_are_refused_by_name():
    with pytest.raises(TypeError, match=r"into a float64 array, which mini cannot differentiate"):
        mini.grad(lambda x: np.sum(np.array([x, 2 * x], dtype=float)))(1.0)
    with pytest.raises(TypeError, match=r"into float\(\), which mini cannot differentiate"):
        mini.grad(lambda x: float(x))(1.0)


# --- ufuncs and reductions of object arrays of traced values: numpy's value, shape and dtype ----

def grid(x, np_module):
    """A 2 x 3 array of different positive functions of a positive ``x`` of shape (3,): an object
    array of traced values when ``x`` is traced, the equivalent plain array when it is not."""
    return np_module.array([[x[0], x[1] * x[2], 2.0 * x[2]],
                            [x[0] * x[0], x[1] + 0.5, x[2] / x[0]]])


def positive_input(seed, dtype):
    return np.random.default_rng(seed).uniform(0.5, 2.0, 3).astype(dtype)


def assert_numpys_array(ours, plain, dtype):
    """numpy's shape and dtype exactly, and its value up to the last bits of ``dtype``."""
    assert np.shape(ours) == np.shape(plain) and np.result_type(ours) == np.result_type(plain)
    np.testing.assert_allclose(ours, plain, rtol=1e-6 if dtype == np.float32 else 1e-13)


UNARY = sorted((ufunc for ufunc in UFUNCS if ufunc.nin == 1), key=lambda ufunc: ufunc.__name__)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ufunc", UNARY, ids=lambda ufunc: ufunc.__name__)
@pytest.mark.parametrize("seed", range(3))
def test_every_unary_ufunc_mini_traces_applies_to_an_object_array_as_to_the_plain_one(
        seed, ufunc, dtype):
    x = positive_input(seed, dtype)
    ours = mini.make_vjp(lambda x: ufunc(grid(x, np)), x)[1]
    assert_numpys_array(ours, ufunc(grid(x, np)), dtype)
    x, w = x.astype(np.float64), np.random.default_rng(seed + 10).standard_normal((2, 3))
    theirs = autograd.grad(lambda x: anp.sum(getattr(anp, ufunc.__name__)(grid(x, anp)) * w))(x)
    np.testing.assert_allclose(mini.grad(lambda x: np.sum(ufunc(grid(x, np)) * w))(x), theirs,
                               rtol=1e-12)


AXES = [None, 0, 1, -1, (0, 1), (-1, 0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_and_mean_of_an_object_array_have_numpys_value_shape_and_dtype(keepdims, axis, dtype):
    x = positive_input(1, dtype)
    for reduce in (np.sum, np.mean):
        ours = mini.make_vjp(lambda x: reduce(grid(x, np), axis=axis, keepdims=keepdims), x)[1]
        assert_numpys_array(ours, reduce(grid(x, np), axis=axis, keepdims=keepdims), dtype)
        w = np.random.default_rng(4).standard_normal(np.shape(ours)).astype(dtype)
        f = lambda x: np.sum(reduce(grid(x, np), axis=axis, keepdims=keepdims) * w)
        assert mini.grad(f)(x).dtype == dtype
        theirs = autograd.grad(lambda x: anp.sum(getattr(anp, reduce.__name__)(
            grid(x, anp), axis=axis, keepdims=keepdims) * w))(x.astype(np.float64))
        np.testing.assert_allclose(mini.grad(f)(x.astype(np.float64)), theirs, rtol=1e-12)


VARIANCES = [(axis, ddof, keepdims) for axis in AXES for ddof in (0, 1, 1.5)
             for keepdims in (False, True)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis, ddof, keepdims", VARIANCES)
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_and_std_of_an_object_array_and_of_a_traced_array_equal_numpy_and_autograd(
        name, axis, ddof, keepdims, dtype):
    x = positive_input(2, dtype)
    reduce, theirs_reduce = getattr(np, name), getattr(anp, name)
    kwargs = dict(axis=axis, ddof=ddof, keepdims=keepdims)
    plain = reduce(grid(x, np), **kwargs)
    assert_numpys_array(mini.make_vjp(lambda x: reduce(grid(x, np), **kwargs), x)[1], plain, dtype)
    assert_numpys_array(mini.make_vjp(lambda x: reduce(x, **kwargs), grid(x, np))[1], plain, dtype)
    x, w = x.astype(np.float64), np.random.default_rng(3).standard_normal(np.shape(plain))
    theirs = autograd.grad(lambda x: anp.sum(theirs_reduce(grid(x, anp), **kwargs) * w))(x)
    f = lambda x: np.sum(reduce(grid(x, np), **kwargs) * w)
    np.testing.assert_allclose(mini.grad(f)(x), theirs, rtol=1e-10)
    np.testing.assert_allclose(mini.grad(f)(x), numerical_grad(f, x), rtol=1e-5, atol=1e-7)
    theirs = autograd.grad(lambda y: anp.sum(theirs_reduce(y, **kwargs) * w))(grid(x, np))
    np.testing.assert_allclose(mini.grad(lambda y: np.sum(reduce(y, **kwargs) * w))(grid(x, np)),
                               theirs, rtol=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_second_derivatives_and_jvps_of_std_of_an_object_array_equal_autograd(seed):
    x = positive_input(seed, np.float64)
    f = lambda x: np.std(grid(x, np), ddof=1) * np.sum(np.sqrt(grid(x, np)))
    g = lambda x: anp.std(grid(x, anp), ddof=1) * anp.sum(anp.sqrt(grid(x, anp)))
    np.testing.assert_allclose(mini.hessian(f)(x), autograd.hessian(g)(x), rtol=1e-9)
    v = np.random.default_rng(seed).standard_normal(3)
    columns = lambda np_module: lambda x: np_module.var(grid(x, np_module), axis=0)
    value, ours = mini.jvp(columns(np), x, v)
    their_value, theirs = autograd.make_jvp(columns(anp))(x)(v)
    np.testing.assert_allclose(value, their_value, rtol=1e-12)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)


@pytest.mark.parametrize("call, name", [
    (lambda a: np.sin(a), "numpy.sin"), (lambda a: np.cos(a), "numpy.cos"),
    (lambda a: np.abs(a), "numpy.absolute"), (lambda a: +a, "numpy.positive"),
    (lambda a: np.rint(a), "numpy.rint"), (lambda a: np.arctan2(a, a), "numpy.arctan2"),
    (lambda a: np.floor(a), "numpy.floor"), (lambda a: np.ceil(a), "numpy.ceil"),
    (lambda a: np.trunc(a), "numpy.trunc"), (lambda a: np.invert(a), "numpy.invert"),
])
def test_ufuncs_mini_does_not_trace_are_named_for_object_arrays_and_traced_arrays(call, name):
    x = np.ones(3)
    with pytest.raises(TypeError, match=f"mini cannot trace {name}: use a mini primitive"):
        mini.grad(lambda x: np.sum(call(np.array([x[0], 2 * x[1]]))))(x)
    with pytest.raises(TypeError, match=f"mini cannot trace {name}: use a mini primitive"):
        mini.grad(lambda x: np.sum(call(x)))(x)
