"""Derivatives of derivatives: grad(grad(f)), Hessians, Hessian-vector products, jacobian(grad(f)),
nested traces kept apart; against closed forms and the autograd package."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mini
from autograder.checks.programs import listing
from mini import framework as fw
from support.random_programs import a_logsumexp, autograd_call, loss_of, programs


def test_fourth_derivative_of_tanh_equals_the_closed_form_and_autograd():
    d4, a4 = mini.tanh, anp.tanh
    for _ in range(4):
        d4, a4 = mini.grad(d4), autograd.grad(a4)
    for x in np.linspace(-2.0, 2.0, 9):
        t = np.tanh(x)
        closed = 8 * t * (1 - t * t) * (2 - 3 * t * t)     # d^4/dx^4 tanh x
        assert d4(x) == pytest.approx(closed, rel=1e-10, abs=1e-12)
        assert d4(x) == pytest.approx(a4(x), rel=1e-10, abs=1e-12)


def test_second_derivatives_of_each_elementwise_primitive():
    cases = {   # f, f''
        "exp": (mini.exp, np.exp),
        "log": (mini.log, lambda x: -1 / x ** 2),
        "sigmoid": (mini.sigmoid, lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s) * (1 - 2 * s)),
        "power": (lambda x: x ** 3.5, lambda x: 3.5 * 2.5 * x ** 1.5),
        "exponent": (lambda x: 2.0 ** x, lambda x: np.log(2.0) ** 2 * 2.0 ** x),
        "divide": (lambda x: 1.0 / x, lambda x: 2 / x ** 3),
        "relu_square": (lambda x: mini.relu(x) * x, lambda x: 2.0 * (x > 0)),
    }
    for name, (f, second) in cases.items():
        for x in (0.3, 1.7):
            assert mini.grad(mini.grad(f))(x) == pytest.approx(second(x), rel=1e-10), name


@settings(max_examples=100, deadline=None, derandomize=True)
@given(programs(shapes=st.lists(st.integers(1, 3), min_size=1, max_size=2)))
def test_hessians_of_random_programs_equal_autograd(program):
    x = dict(program[0])["x"]
    ours = mini.hessian(loss_of(program))(x)
    theirs = autograd.hessian(loss_of(program, autograd_call))(x)
    assert ours.shape == x.shape + x.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-8, err_msg=listing(program))


def layered(np_, logsumexp, take, x, W, ids):
    """Products, indexing, joins and reductions over several axes, twice differentiable."""
    h = np_.tanh(np_.dot(W, x) + np_.matmul(x, W.T)[::-1])        # (3,)
    rows = take(np_.reshape(x * x, (3, 1)) * W, ids)                 # (4, 3)
    joined = np_.concatenate([rows, np_.transpose(W * h)], axis=0)   # (7, 3)
    return (np_.sum(logsumexp(joined, axis=-1, keepdims=True) ** 2)
            + np_.mean(np_.exp(-joined * joined), axis=(0, 1)) + np_.sum(h[1:] / (1.0 + h[0] ** 2)))


def test_hessian_through_products_indexing_and_joins_equals_autograd():
    rng = np.random.default_rng(0)
    x, W, ids = rng.standard_normal(3), rng.standard_normal((3, 3)), np.array([2, 0, 2, 1])
    f = lambda x, W: layered(np, mini.logsumexp, lambda a, i: mini.take(a, i, axis=0), x, W, ids)
    a = lambda x, W: layered(anp, a_logsumexp, lambda a, i: a[i], x, W, ids)
    for argnum in (0, 1):
        ours = mini.hessian(f, argnum)(x, W)
        theirs = autograd.hessian(a, argnum)(x, W)
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(mini.jacobian(mini.grad(f))(x, W), autograd.hessian(a)(x, W),
                               rtol=1e-8, atol=1e-10)


def test_hessian_vector_products_equal_autograd_and_the_hessian_times_v():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((4, 4))
    f = lambda np_, x: np_.sum(np_.tanh(np_.matmul(A, x)) ** 2) + np_.sum(np_.exp(0.3 * x) * x)
    x = rng.standard_normal(4)
    for _ in range(3):
        v = rng.standard_normal(4)
        ours = mini.hessian_vector_product(lambda x: f(np, x))(x, v)
        theirs = autograd.hessian_vector_product(lambda x: f(anp, x))(x, v)
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ours, mini.hessian(lambda x: f(np, x))(x) @ v, rtol=1e-10)


def test_nested_traces_are_kept_apart():
    """d/dx [x * d/dy (x + y)] = 1; a tracer that confuses the two traces gives 2."""
    f = lambda x: x * mini.grad(lambda y: x + y)(1.0)
    assert mini.grad(f)(1.0) == 1.0 == autograd.grad(
        lambda x: x * autograd.grad(lambda y: x + y)(1.0))(1.0)
    g = lambda x: mini.grad(lambda y: x * y * y)(x)                   # 2 x^2, derivative 4x
    assert mini.grad(g)(3.0) == 12.0


def test_the_inner_gradient_of_a_closure_is_itself_differentiable():
    rng = np.random.default_rng(2)
    W = rng.standard_normal((3, 3))

    def outer(theta, np_, grad):       # one step of gradient descent inside the objective
        inner_loss = lambda w: np_.sum(np_.tanh(np_.matmul(W, w)) * theta)
        w = theta - 0.1 * grad(inner_loss)(theta)
        return np_.sum(w * w)

    theta = rng.standard_normal(3)
    np.testing.assert_allclose(mini.grad(lambda t: outer(t, np, mini.grad))(theta),
                               autograd.grad(lambda t: outer(t, anp, autograd.grad))(theta),
                               rtol=1e-10)


def test_a_framework_backward_graph_can_be_differentiated_again():
    with fw.Graph().as_default() as graph:
        x = fw.Variable(np.array([0.3, -0.7]), "x")
        v = fw.Constant(np.array([1.0, 2.0]), "v")
        loss = mini.sum(mini.tanh(x) ** 3)
        (g,) = fw.gradients(loss, [x])
        (hvp,) = fw.gradients(mini.sum(g * v), [x])
    got = fw.Session(graph).run(hvp)
    expected = autograd.hessian_vector_product(lambda x: anp.sum(anp.tanh(x) ** 3))(
        np.array([0.3, -0.7]), np.array([1.0, 2.0]))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
