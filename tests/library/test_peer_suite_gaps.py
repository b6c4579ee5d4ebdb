"""What a public autodiff library's own test suite, run against mini, found wrong: each case
against autograd (or central differences, where the derivative is a limit)."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import mini

H = 1e-6


@pytest.mark.parametrize("argument", [[1.0, 2.0, 3.0], (1.0, 2.0, 3.0), [1, 2, 3]])
def test_a_list_or_tuple_of_numbers_is_differentiated_as_an_array(argument):
    for ours, theirs in ((lambda x: x[:-1][0], lambda x: x[:-1][0]),
                         (lambda p: p[0] * p[0] * p[1], lambda p: p[0] * p[0] * p[1])):
        got = mini.grad(ours)(argument)
        want = autograd.grad(theirs)([float(v) for v in argument])
        assert isinstance(got, np.ndarray) and got.dtype == np.float64
        np.testing.assert_allclose(got, np.array(want, dtype=float), rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_std_has_autograds_gradient_and_zero_where_its_entries_are_all_equal(seed):
    x = np.random.default_rng(seed).standard_normal((3, 4))
    for axis, ddof in ((None, 0), (0, 1), (1, 0), ((0, 1), 1)):
        def loss(x, numpy):
            s = numpy.std(x, axis=axis, ddof=ddof)
            return numpy.sum(s * s + s)
        got = mini.grad(lambda x: loss(x, np))(x)
        want = autograd.grad(lambda x: loss(x, anp))(x)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert mini.grad(np.std)(3.5) == 0.0
    column = x[:1]                                    # an axis of length 1: std is 0 there, always
    assert np.array_equal(mini.grad(lambda c: mini.sum(np.std(c, axis=0)))(column),
                          np.zeros_like(column))
    d = np.random.default_rng(seed + 10).standard_normal(x.shape)   # and np.var stays right
    f = lambda x: np.var(x, axis=1).sum()            # noqa: E731
    numeric = (f(x + H * d) - f(x - H * d)) / (2 * H)
    assert np.isclose(np.sum(mini.grad(f)(x) * d), numeric, rtol=1e-6)


def test_a_gradient_may_be_changed_in_place():
    gradient = mini.grad(lambda x: np.sum(x))(np.ones(3))
    gradient *= 0.5
    assert np.array_equal(gradient, [0.5, 0.5, 0.5])


def test_forward_mode_of_a_function_with_several_outputs_gives_each_value_and_tangent():
    x, v = np.array([0.3, -1.2]), np.array([1.0, 0.5])
    values, tangents = mini.make_jvp(lambda x: (mini.tanh(x), x * x, 2.0), x)(v)
    assert isinstance(values, tuple) and isinstance(tangents, tuple)
    np.testing.assert_allclose(values[0], np.tanh(x))
    np.testing.assert_allclose(tangents[0], (1 - np.tanh(x) ** 2) * v)
    np.testing.assert_allclose(tangents[1], 2 * x * v)
    assert values[2] == 2.0 and tangents[2] == 0.0
    for index, output in enumerate((anp.tanh, lambda x: x * x)):     # each against autograd
        np.testing.assert_allclose(tangents[index], autograd.make_jvp(output)(x)(v)[1],
                                   rtol=1e-12)
