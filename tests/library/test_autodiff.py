"""mini.autodiff against closed forms, the autograd package and central differences; random
programs from autograder.checks.programs, run with mini and with autograd.numpy."""
import warnings
import weakref

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mini
from mini.autodiff import Box
from autograder.checks.programs import listing
from support.random_programs import autograd_call, loss_of, programs

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True)


# --- the two-layer net of DLSys lecture 3 ---------------------------------------------------------

def test_two_layer_net_gradients_equal_the_closed_forms():
    rng = np.random.default_rng(0)
    X, W1, W2 = rng.standard_normal((7, 5)), rng.standard_normal((5, 4)), rng.standard_normal((4, 3))
    y = rng.integers(0, 3, 7)
    I_y = np.eye(3)[y]

    def loss(W1, W2):
        U = mini.relu(X @ W1) @ W2
        return -mini.sum(mini.one_hot(y, 3) * mini.log_softmax(U))

    H = np.maximum(X @ W1, 0)
    S = np.exp(H @ W2) / np.exp(H @ W2).sum(axis=1, keepdims=True)
    G_U = S - I_y
    assert np.allclose(mini.grad(loss, 1)(W1, W2), H.T @ G_U, rtol=1e-12, atol=1e-12)
    assert np.allclose(mini.grad(loss, 0)(W1, W2), X.T @ ((G_U @ W2.T) * (X @ W1 > 0)),
                       rtol=1e-12, atol=1e-12)


# --- random compositions vs autograd ------------------------------------------------------------

@SETTINGS
@given(programs())
def test_random_programs_match_autograd(program):
    x = dict(program[0])["x"]
    ours = mini.grad(loss_of(program))(x)
    theirs = autograd.grad(loss_of(program, autograd_call))(x)
    assert np.allclose(ours, theirs, rtol=1e-9, atol=1e-9), (listing(program), ours, theirs)
    mini.check_grads(loss_of(program), x)


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 4), st.integers(0, 2**31))
def test_matmul_take_concat_reshape_transpose_match_autograd(batch, k, n, seed):
    rng = np.random.default_rng(seed)
    A, B, E = rng.standard_normal((batch, 3, k)), rng.standard_normal((k, n)), rng.standard_normal((6, k))
    v = rng.standard_normal(k)
    ids = rng.integers(0, 6, (batch, 3))          # repeated indices must sum

    def f(np_, take, concatenate, A, B, E):
        H = np_.tanh(take(E, ids) @ B + A @ B)    # (batch, 3, n): batched @ 2-D, embedding rows
        row = (A @ v)[0] @ H[0]                   # 1-D @ 2-D -> (n,)
        column = H[0] @ row                       # 2-D @ 1-D -> (3,)
        both = concatenate([H.reshape((batch, -1)),
                            np_.transpose(H, (0, 2, 1)).reshape((batch, -1))], axis=1)
        return (np_.sum(both * both[:, ::-1]) + np_.sum(column * column)
                + np_.sum(A[:, 1:, ::2] ** 2))

    mf = lambda *a: f(mini, lambda x, i: mini.take(x, i, axis=0), mini.concatenate, *a)
    af = lambda *a: f(anp, lambda x, i: x[i], anp.concatenate, *a)
    for argnum in range(3):
        ours = mini.grad(mf, argnum)(A, B, E)
        theirs = autograd.grad(af, argnum)(A, B, E)
        assert np.allclose(ours, theirs, rtol=1e-9, atol=1e-9), argnum
    mini.check_grads(mf, A, B, E)


def test_float32_inputs_keep_their_type():
    x = np.ones((2, 3), dtype=np.float32)
    g = mini.grad(lambda x: mini.sum(mini.tanh(x) * 2.0))(x)
    assert g.dtype == np.float32 and g.shape == (2, 3)


def test_jacobian_is_built_from_one_vjp_per_output():
    rng = np.random.default_rng(1)
    W, x = rng.standard_normal((3, 4)), rng.standard_normal(4)
    assert np.allclose(mini.jacobian(lambda x: W @ x)(x), W)
    J = mini.jacobian(lambda W: mini.tanh(W @ x))(W)
    assert J.shape == (3, 3, 4)
    assert np.allclose(J, autograd.jacobian(lambda W: anp.tanh(W @ x))(W), rtol=1e-12)


def test_make_vjp_returns_the_value_and_J_transpose_g():
    W, x, g = np.arange(6.0).reshape(2, 3), np.ones(3), np.array([1.0, -1.0])
    vjp, value = mini.make_vjp(lambda x: W @ x, x)
    assert np.array_equal(value, W @ x)
    assert np.allclose(vjp(g), W.T @ g)          # slide 23: x_bar = W^T y_bar
    vjp, _ = mini.make_vjp(lambda W, x: W @ x, W, x, argnum=0)
    assert np.allclose(vjp(g), np.outer(g, x))


# --- diagnosis and errors --------------------------------------------------------------------------

def test_diagnose_names_the_first_node_with_a_wrong_vjp(monkeypatch):
    def model(x):
        h = mini.exp(x) * 2.0
        y = mini.tanh(h)                          # <- its VJP is broken below
        return mini.sum(mini.log(y * y + 1.0))

    x = np.random.default_rng(0).standard_normal(4) * 0.3
    assert mini.diagnose(model, x) is None
    monkeypatch.setitem(mini.vjp_table, mini.tanh, {0: lambda g, ans, x: g * (1 - ans)})
    with pytest.raises(AssertionError, match="argument 0"):
        mini.check_grads(model, x)
    report = mini.diagnose(model, x)
    assert report.startswith("operation 3 of 7, 'tanh' (argument 0)")
    assert "test_autodiff.py" in report and "y = mini.tanh(h)" in report


def test_grad_of_a_non_scalar_output_says_so():
    with pytest.raises(TypeError, match=r"needs a scalar output.*shape \(3,\)"):
        mini.grad(lambda x: x * 2.0)(np.ones(3))


def test_a_primitive_without_vjp_is_named():
    square_root = mini.primitive(np.sqrt)
    with pytest.raises(NotImplementedError, match="'sqrt' has no VJPs"):
        mini.grad(lambda x: square_root(x))(4.0)
    mini.defvjp(square_root, lambda g, ans, x: g / (2 * ans))
    assert mini.grad(lambda x: square_root(x))(4.0) == 0.25
    with pytest.raises(NotImplementedError, match="'getitem' has no VJP for argument 1"):
        mini.vjp_of(mini.getitem, 1)


def test_numpy_functions_without_a_primitive_are_named():
    with pytest.raises(TypeError, match="numpy.sin"):
        mini.grad(lambda x: np.sin(x))(1.0)
    assert mini.grad(lambda x: np.exp(x) + np.sum(x))(0.0) == 2.0


def test_non_numeric_arguments_are_refused_clearly():
    with pytest.raises(TypeError, match="argument 0: expected a number or a numeric array, got str"):
        mini.grad(lambda x: x)("three")
    assert mini.grad(lambda x: x * x)(3) == 6.0   # integers are promoted to float64


def test_an_output_independent_of_the_input_gets_zeros_and_a_warning():
    with pytest.warns(UserWarning, match="does not depend on argument 0"):
        assert np.array_equal(mini.grad(lambda x, y: mini.sum(y * 2.0))(np.ones(2), np.ones(3)),
                              np.zeros(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mini.grad(lambda x: x * 2.0)(1.0)


def test_check_grads_reports_argument_and_index():
    bad = mini.primitive(lambda x: x ** 3)
    mini.defvjp(bad, lambda g, ans, x: g * 3 * x)          # should be 3 x^2
    with pytest.raises(AssertionError, match=r"argument 0 \(shape \(3,\)\) is wrong at index"):
        mini.check_grads(lambda x: mini.sum(bad(x)), np.array([1.0, 2.0, 3.0]))


def test_backward_pass_with_only_returns_those_gradients_and_frees_the_rest_as_it_goes():
    """Along a chain of 12 nodes, the full pass still holds every gradient it has passed on when
    it calls the last VJP; with ``only`` (what mini.grad asks for), none: each is freed as soon
    as its node is done.  The gradients asked for are the full pass's."""
    held = []                               # per VJP call: gradients passed on still alive
    passed_on = []

    @mini.primitive
    def scaled(x):
        return 1.5 * x

    def scaled_vjp(g, ans, x):
        held.append(sum(ref() is not None for ref in passed_on))
        passed_on.append(weakref.ref(g))
        return 1.5 * g

    mini.defvjp(scaled, scaled_vjp)
    rng = np.random.default_rng(0)
    x = Box(rng.standard_normal(4))
    end = x
    for _ in range(12):
        end = scaled(end)
    seed = rng.standard_normal(4)
    full = mini.backward_pass(seed.copy(), end)
    assert held == list(range(12)) and len(full) == 13
    held.clear(), passed_on.clear()
    only = mini.backward_pass(seed.copy(), end, only={x})
    assert held == [0] * 12
    assert list(only) == [x]
    np.testing.assert_array_equal(only[x], full[x])

    def chain(v):
        for _ in range(12):
            v = scaled(v)
        return mini.sum(v * seed)
    held.clear(), passed_on.clear()
    np.testing.assert_array_equal(mini.grad(chain)(x.value), full[x])
    assert held == [0] * 12                 # mini.grad keeps its inputs' gradients alone
