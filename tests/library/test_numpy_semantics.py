"""numpy calls on traced values compute what numpy computes (value, shape, dtype), and their
gradients equal the autograd package's; whatever mini does not trace is refused by name."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mini

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


def assert_same_array(ours, numpy_says):
    """Value, shape and dtype exactly as numpy (up to rounding of the last bits)."""
    assert np.shape(ours) == np.shape(numpy_says)
    assert np.result_type(ours) == np.result_type(numpy_says), (np.result_type(ours),
                                                               np.result_type(numpy_says))
    np.testing.assert_allclose(ours, numpy_says, rtol=1e-6, atol=1e-6)


def traced_value(fun, x):
    """What ``fun`` computes on a traced ``x`` (the value make_vjp records)."""
    return mini.make_vjp(fun, x)[1]


@st.composite
def arrays(draw, min_dims=1, max_dims=4):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=min_dims, max_size=max_dims)))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    seed = draw(st.integers(0, 2**31))
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def weights_for(value, seed=7):
    return np.random.default_rng(seed).standard_normal(np.shape(value))


# --- transpose: any permutation, negative axes ------------------------------------------------

def test_transpose_with_negative_axes_has_the_inverse_permutation_as_gradient():
    w = np.random.default_rng(0).standard_normal((3, 3, 3))
    got = mini.grad(lambda x: np.sum(np.transpose(x, (-1, 0, 1)) * w))(np.zeros((3, 3, 3)))
    np.testing.assert_array_equal(got, np.transpose(w, (1, 2, 0)))
    w = np.random.default_rng(1).standard_normal((4, 2, 3))
    got = mini.grad(lambda x: np.sum(np.transpose(x, (-1, 0, 1)) * w))(np.zeros((2, 3, 4)))
    assert got.shape == (2, 3, 4)


@SETTINGS
@given(arrays(min_dims=2), st.data())
def test_transpose_values_and_gradients_for_every_permutation(x, data):
    perm = data.draw(st.permutations(range(x.ndim)))
    axes = tuple(a - x.ndim if data.draw(st.booleans()) else a for a in perm)
    w = weights_for(np.transpose(x, axes))
    assert_same_array(traced_value(lambda x: np.transpose(x, axes), x), np.transpose(x, axes))
    assert_same_array(traced_value(lambda x: x.transpose(axes), x), x.transpose(axes))
    ours = mini.grad(lambda x: np.sum(np.transpose(x, axes) * w))(x)
    np.testing.assert_allclose(ours, np.transpose(w, np.argsort(perm)), rtol=1e-12)
    if all(a >= 0 for a in axes):      # autograd's own transpose mishandles negative axes
        theirs = autograd.grad(lambda x: anp.sum(anp.transpose(x, axes) * w))(x)
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


# --- power at zero --------------------------------------------------------------------------------

def test_power_with_exponent_zero_has_zero_gradient_at_zero():
    assert mini.grad(lambda x: x ** 0.0)(0.0) == 0.0                       # was ZeroDivisionError
    np.testing.assert_array_equal(mini.grad(lambda x: np.sum(x ** 0.0))(np.zeros(3)), np.zeros(3))
    assert mini.grad(lambda y: np.power(0.0, y))(2.0) == 0.0               # was nan
    assert autograd.grad(lambda y: anp.power(0.0, y))(2.0) == 0.0


@SETTINGS
@given(st.integers(0, 2**31))
def test_power_gradients_in_both_arguments_equal_autograd(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(0.1, 3.0, (3, 4)), rng.uniform(-2.0, 2.0, 4)
    x[0, 0], y[1] = 0.0, 0.0       # the edge cases: 0 ** 0 and x ** 0
    f = lambda np_, x, y: np_.sum(np_.power(x[1:], y) * (x[1:] + 1.0)) + np_.sum(x[:1] ** 0.0)
    for argnum in (0, 1):
        ours = mini.grad(lambda x, y: f(np, x, y), argnum)(x, y)
        theirs = autograd.grad(lambda x, y: f(anp, x, y), argnum)(x, y)
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


# --- dot: numpy's contraction, not matmul's -------------------------------------------------------

DOT_SHAPES = [((), (3,)), ((3,), ()), ((), ()), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
              ((2, 3), (3, 4)), ((2, 2, 3), (2, 3, 4)), ((2, 3), (2, 3, 4)), ((2, 2, 3), (3,)),
              ((4, 2, 3), (3, 2)), ((2, 3), ())]


@pytest.mark.parametrize("a_shape, b_shape", DOT_SHAPES)
def test_dot_values_and_gradients_equal_numpy_and_autograd(a_shape, b_shape):
    rng = np.random.default_rng(len(a_shape) * 10 + len(b_shape))
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    w = weights_for(np.dot(a, b))
    assert_same_array(traced_value(lambda a: np.dot(a, b), a), np.dot(a, b))
    assert_same_array(traced_value(lambda b: np.dot(a, b), b), np.dot(a, b))
    if np.ndim(a):
        assert_same_array(traced_value(lambda a: a.dot(b), a), a.dot(b))
    for argnum in (0, 1):
        ours = mini.grad(lambda a, b: np.sum(np.dot(a, b) * w), argnum)(a, b)
        theirs = autograd.grad(lambda a, b: anp.sum(anp.dot(a, b) * w), argnum)(a, b)
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


# --- take, concatenate, stack: every axis form ------------------------------------------------

def test_take_without_axis_takes_from_the_flattened_array():
    x = np.arange(20.0).reshape(4, 5)
    idx = np.array([1, 3])
    assert traced_value(lambda x: np.sum(np.take(x, idx)), x) == np.sum(np.take(x, idx)) == 4.0
    expected = np.zeros(20)
    expected[idx] = 1.0
    np.testing.assert_array_equal(mini.grad(lambda x: np.sum(np.take(x, idx)))(x),
                                  expected.reshape(4, 5))


@SETTINGS
@given(arrays(), st.data())
def test_take_values_and_gradients_for_every_axis_and_negative_indices(x, data):
    axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    n = x.size if axis is None else x.shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=6)))
    idx = idx.reshape(data.draw(st.sampled_from([(-1,), (1, -1)])))
    assert_same_array(traced_value(lambda x: np.take(x, idx, axis=axis), x),
                      np.take(x, idx, axis=axis))
    w = weights_for(np.take(x, idx, axis=axis))
    ours = mini.grad(lambda x: np.sum(np.take(x, idx, axis=axis) * w))(x)
    if axis is None:
        theirs = autograd.grad(lambda x: anp.sum(anp.ravel(x)[idx] * w))(x)
    else:
        where = (slice(None),) * (axis % x.ndim) + (idx,)
        theirs = autograd.grad(lambda x: anp.sum(x[where] * w))(x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)


def test_repeated_negative_and_positive_ids_of_one_row_add_up():
    """-1 and n - 1 name the same row: their gradients add (the embedding's backward pass)."""
    E = np.random.default_rng(2).standard_normal((5, 3))
    ids = np.array([[4, -1], [0, -5]])
    g = mini.grad(lambda E: mini.sum(mini.take(E, ids, axis=0) * 2.0))(E)
    expected = np.zeros((5, 3))
    expected[4], expected[0] = 4.0, 4.0
    np.testing.assert_array_equal(g, expected)


@SETTINGS
@given(arrays(), st.data())
def test_concatenate_and_stack_values_and_gradients_for_every_axis(x, data):
    axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    y = (2.0 * x + 1.0).astype(x.dtype)
    joined = np.concatenate([x, y], axis=axis)
    assert_same_array(traced_value(lambda x: np.concatenate([x, y, x * 3], axis=axis), x),
                      np.concatenate([x, y, x * 3], axis=axis))
    w = weights_for(joined)
    ours = mini.grad(lambda x: np.sum(np.concatenate([x * x, y], axis=axis) * w))(x)
    flat = (lambda a: anp.ravel(a)) if axis is None else (lambda a: a)
    theirs = autograd.grad(lambda x: anp.sum(
        anp.concatenate([flat(x * x), flat(y)], axis=0 if axis is None else axis) * w))(x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)

    stack_axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    assert_same_array(traced_value(lambda x: np.stack([x, y], axis=stack_axis), x),
                      np.stack([x, y], axis=stack_axis))
    w = weights_for(np.stack([x, y], axis=stack_axis))
    ours = mini.grad(lambda x: np.sum(np.stack([x * x, x], axis=stack_axis) * w))(x)
    theirs = autograd.grad(lambda x: anp.sum(anp.stack([x * x, x], axis=stack_axis) * w))(x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


# --- reductions and reshapes: axes, tuples, keepdims, dtypes ----------------------------------

@SETTINGS
@given(arrays(), st.data())
def test_sum_mean_reshape_values_and_gradients_for_every_axis_form(x, data):
    axes = st.sampled_from(list(range(-x.ndim, x.ndim)))
    axis = data.draw(st.one_of(st.none(), axes, st.lists(axes, min_size=1, max_size=x.ndim,
                                                         unique_by=lambda a: a % x.ndim)
                               .map(tuple)))
    keepdims = data.draw(st.booleans())
    for name in ("sum", "mean"):
        numpy_f, autograd_f = getattr(np, name), getattr(anp, name)
        assert_same_array(traced_value(lambda x: numpy_f(x, axis=axis, keepdims=keepdims), x),
                          numpy_f(x, axis=axis, keepdims=keepdims))
        w = weights_for(numpy_f(x, axis=axis, keepdims=keepdims)).astype(x.dtype)
        ours = mini.grad(lambda x: np.sum(numpy_f(x * x, axis=axis, keepdims=keepdims) * w))(x)
        theirs = autograd.grad(lambda x: anp.sum(autograd_f(x * x, axis=axis,
                                                            keepdims=keepdims) * w))(x)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
        assert ours.dtype == x.dtype
    assert_same_array(traced_value(lambda x: np.reshape(x, (-1,)), x), np.reshape(x, (-1,)))
    assert_same_array(traced_value(lambda x: x.reshape(1, -1), x), x.reshape(1, -1))


def test_integer_inputs_give_numpys_types():
    x = np.arange(6).reshape(2, 3)
    boxed_sum = traced_value(lambda x: np.sum(x, axis=0), x)     # x is promoted to float64
    assert_same_array(boxed_sum, np.sum(x.astype(np.float64), axis=0))
    assert np.result_type(np.mean(x)) == np.result_type(traced_value(np.mean, x))


# --- comparisons: plain boolean arrays, masks, branches ---------------------------------------

def test_comparisons_on_traced_values_choose_the_right_branch():
    f = lambda x: x * x if x == 1.0 else -x
    assert mini.grad(f)(1.0) == 2.0 and mini.grad(f)(3.0) == -1.0
    g = lambda x: x * x if x != 1.0 else -x
    assert mini.grad(g)(1.0) == -1.0 and mini.grad(g)(3.0) == 6.0
    h = lambda x: x * 3.0 if (x >= 1.0) and (x <= 2.0) and not (x < 1.5) else x
    assert mini.grad(h)(1.7) == 3.0 and mini.grad(h)(1.2) == 1.0


def test_comparisons_give_boolean_masks_without_gradient():
    x = np.array([2.0, 3.0, 2.0, -1.0])
    assert mini.grad(lambda x: np.sum(x * (x == 2.0)))(x).tolist() == [1.0, 0.0, 1.0, 0.0]
    assert autograd.grad(lambda x: anp.sum(x * (x == 2.0)))(x).tolist() == [1.0, 0.0, 1.0, 0.0]
    seen = {}

    def f(x):
        for mask in (x > 0, x < 0, x >= 2.0, x <= 2.0, x == 2.0, x != 2.0, np.greater(x, 0)):
            assert isinstance(mask, np.ndarray) and mask.dtype == bool
            seen[len(seen)] = mask
        return np.sum(x[x > 0] ** 2) + np.sum(np.where(x > 2.5, x, 0.0))

    np.testing.assert_array_equal(mini.grad(f)(x), [4.0, 7.0, 4.0, 0.0])
    assert seen[0].tolist() == (x > 0).tolist() and seen[4].tolist() == (x == 2.0).tolist()


def test_boxes_are_hashed_by_identity_even_with_equal_values():
    def f(x):
        a, b = x * 1.0, x * 1.0                    # equal values, different nodes
        table = {a: "a", b: "b"}
        assert len(table) == 2 and table[a] == "a" and table[b] == "b"
        return a + b
    assert mini.grad(f)(2.0) == 2.0


# --- lists of parameters, several argnums, nested closures --------------------------------------

def test_gradient_with_respect_to_a_list_or_tuple_of_equal_shape_arrays():
    params = [np.ones(2), np.array([2.0, 3.0])]
    got = mini.grad(lambda p: np.sum(p[0] * p[1]))(params)
    assert isinstance(got, list) and [g.tolist() for g in got] == [[2.0, 3.0], [1.0, 1.0]]
    got = mini.grad(lambda p: np.sum(p[0] * p[1] ** 2))(tuple(params))
    theirs = autograd.grad(lambda p: anp.sum(p[0] * p[1] ** 2))(tuple(params))
    assert isinstance(got, tuple)
    for ours, expected in zip(got, theirs):
        np.testing.assert_allclose(ours, expected)
    np.testing.assert_allclose(mini.grad(lambda x: np.sum(x * x))([1.0, 2.0]), [2.0, 4.0])


def test_several_argnums_give_a_tuple_of_gradients():
    f = lambda x, y, z: x * y * y + z
    assert mini.grad(f, argnum=[0, 1])(2.0, 3.0, 5.0) == (9.0, 12.0)
    assert mini.grad(f, argnum=(2, 0))(2.0, 3.0, 5.0) == (1.0, 9.0)
    with pytest.raises(TypeError, match="argnum 3 does not name an argument"):
        mini.grad(f, argnum=3)(2.0, 3.0, 5.0)


def test_a_gradient_inside_a_closure_is_differentiated_too():
    f = lambda x: mini.grad(lambda y: x * y)(1.0) * x               # d/dx (x * x) = 2x
    assert mini.grad(f)(1.0) == 2.0
    assert autograd.grad(lambda x: autograd.grad(lambda y: x * y)(1.0) * x)(1.0) == 2.0


def test_dot_with_a_scalar_operand():
    assert mini.grad(lambda x: np.sum(np.dot(x, 3.0)))(np.ones(2)).tolist() == [3.0, 3.0]
    assert mini.grad(lambda x: np.dot(2.0, x))(5.0) == 2.0


# --- refused clearly, never silently constant -------------------------------------------------

def test_outputs_holding_traced_values_are_refused():
    for output in (lambda x: [x, 2 * x], lambda x: {"a": x}, lambda x: (x,)):
        with pytest.raises(TypeError, match="holding traced values; mini differentiates a single"):
            mini.grad(output)(1.0)


def test_complex_values_are_refused():
    with pytest.raises(TypeError, match="needs a real output, but it returned the complex"):
        mini.grad(lambda x: x * 1j)(1.0)
    with pytest.raises(TypeError, match="expected a number or a numeric array, got complex"):
        mini.grad(lambda x: x * x)(1j)


@pytest.mark.parametrize("call, name", [
    (lambda x: np.sin(x), "numpy.sin"),
    (lambda x: np.max(x), "numpy.max"),
    (lambda x: np.add.reduce(x), "numpy.add.reduce"),
    (lambda x: np.exp(x, out=np.empty(3)), r"numpy.exp without keyword arguments \(out="),
    (lambda x: np.sum(x, dtype=np.float32), "numpy.sum without dtype="),
    (lambda x: np.take(x, [0], mode="clip"), "numpy.take without mode="),
    (lambda x: np.where(x)[0], r"numpy.where\(condition, x, y\) with three"),
])
def test_numpy_calls_mini_does_not_trace_are_named(call, name):
    with pytest.raises(TypeError, match=name):
        mini.grad(lambda x: np.sum(call(x)))(np.ones(3))


def test_array_methods_mini_does_not_trace_are_named():
    with pytest.raises(AttributeError, match=r"mini does not trace the array method or attribute "
                                             r"\.max of a traced value"):
        mini.grad(lambda x: x.max())(np.ones(3))
    assert not hasattr(mini.autodiff.Box(1.0), "__array_interface__")


def test_a_traced_value_never_calls_a_ufunc_mini_traces_untraced():
    """numpy's loops over object arrays call ``entry.sin()`` for ``np.sin``, so a traced value
    refuses the ufuncs mini does not trace by name; ``np.add`` and ``np.maximum`` it traces,
    so ``x.add`` is just a missing attribute, not "mini cannot trace numpy.add"."""
    box = mini.autodiff.Box(1.0)
    for name in ("add", "maximum", "matmul", "greater"):
        with pytest.raises(AttributeError):
            getattr(box, name)
    with pytest.raises(TypeError, match="mini cannot trace numpy.sin"):
        box.sin()
