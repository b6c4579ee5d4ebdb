"""The shortcuts the training step takes give what the general paths give.

* a float array argument is used as it is; ints, lists and Python numbers are still checked and
  converted;
* ``backward_pass`` passes nothing on from an input, yet every node, inputs included, gets its
  gradient, also where a node reads the same parent twice (``x * x``);
* ``toposort`` counts a parent read twice twice;
* the reductions of ``sum_to_like`` and ``logsumexp`` call numpy's ufuncs directly, on arrays,
  lists and numbers, with and without axes;
* the cycle collector is held off while a graph is traced and walked back, and is back on after
  (also when the traced function raises), unless the caller had switched it off;
* and the classifier's traced step gives, bit for bit, what its primitives compute when called
  by hand in the same order: tracing adds no arithmetic of its own.
"""
import gc

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mini
from mini import linear, nn
from mini import primitives as p
from mini.autodiff import Box
from mini.graph import toposort


def _loss(x):
    return mini.sum(mini.tanh(x) * x)


def _autograd_loss(x):
    return anp.sum(anp.tanh(x) * x)


@pytest.mark.parametrize("x", [np.array([0.5, -1.5, 2.0]), np.array([1, -2, 3]), [1.0, 2.0, -0.5],
                               1.5, 3, np.array([True, False])])
def test_arguments_of_every_kind_get_the_gradient_autograd_gives(x):
    ours = mini.grad(_loss)(x)
    theirs = autograd.grad(_autograd_loss)(np.asarray(x, dtype=np.float64))
    assert np.asarray(ours).dtype == np.float64
    assert np.shape(ours) == np.shape(x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


@pytest.mark.parametrize("x", [np.array(["a", "b"]), np.array([1 + 2j]), "word"])
def test_arguments_that_are_not_real_numbers_are_still_refused(x):
    with pytest.raises(TypeError, match="cannot differentiate with respect to argument 0"):
        mini.grad(_loss)(x)


def test_every_node_gets_its_gradient_when_a_node_reads_its_parent_twice():
    x, y = Box(1.5, name="x"), Box(-0.5, name="y")
    square = x * x                                    # parents (x, x)
    z = mini.exp(square * y) + y
    grads = mini.backward_pass(1.0, z)
    assert set(grads) == set(toposort(z))
    f = lambda x, y: anp.exp(x * x * y) + y
    assert np.isclose(grads[x], autograd.grad(f, 0)(1.5, -0.5), rtol=1e-12)
    assert np.isclose(grads[y], autograd.grad(f, 1)(1.5, -0.5), rtol=1e-12)
    assert np.isclose(grads[square], -0.5 * np.exp(-1.125), rtol=1e-12)


def test_toposort_waits_for_every_parent_of_a_node_that_reads_one_twice():
    x = Box(2.0, name="x")
    square = x * x                                    # parents (x, x)
    later = mini.exp(square)
    joined = mini.stack([square, square, later])      # parents (square, square, later)
    order = toposort(joined)
    assert order == [x, square, later, joined]
    place = {id(node): i for i, node in enumerate(order)}
    assert all(place[id(parent)] < place[id(node)] for node in order for parent in node.parents)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.integers(0, 2),
       st.data(), st.integers(0, 2**32 - 1))
def test_broadcast_gradients_match_autograd(shape, extra, data, seed):
    """``x + y`` with ``y`` broadcast (leading axes added, axes of length 1 stretched)."""
    rng = np.random.default_rng(seed)
    y_shape = [data.draw(st.sampled_from([n, 1])) for n in shape]
    x_shape = [data.draw(st.integers(1, 3)) for _ in range(extra)] + shape
    x, y, w = rng.standard_normal(x_shape), rng.standard_normal(y_shape), rng.standard_normal(x_shape)
    ours = mini.grad(lambda y: mini.sum((x + y) * w), 0)(y)
    theirs = autograd.grad(lambda y: anp.sum((x + y) * w))(y)
    assert np.shape(ours) == tuple(y_shape)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("x", [2.5, np.float64(-1.0), [1.0, 2.0, 3.0], np.arange(6.0).reshape(2, 3)])
@pytest.mark.parametrize("axis", [None, -1, 0])
def test_logsumexp_and_softmax_on_arrays_lists_and_numbers(x, axis):
    values = np.asarray(x, dtype=np.float64)
    if axis is not None and values.ndim == 0:
        axis = None
    want = np.log(np.sum(np.exp(values), axis=axis))
    np.testing.assert_allclose(p.logsumexp(x, axis=axis), want, rtol=1e-12)
    np.testing.assert_allclose(p.logsumexp(x, axis=axis, keepdims=True),
                               np.log(np.sum(np.exp(values), axis=axis, keepdims=True)), rtol=1e-12)
    if values.ndim:
        e = np.exp(values)
        np.testing.assert_allclose(p.softmax(x, axis=axis if axis is not None else -1),
                                   e / np.sum(e, axis=-1 if axis is None else axis, keepdims=True),
                                   rtol=1e-12)


def test_logsumexp_of_an_empty_array_names_the_problem():
    with pytest.raises(ValueError, match="zero-size array"):
        p.logsumexp(np.zeros((0,)))


def test_the_cycle_collector_is_held_off_while_tracing_and_back_on_after():
    seen = []

    def f(x):
        seen.append(gc.isenabled())
        return mini.sum(mini.grad(lambda y: mini.sum(y * y))(x) * x)     # a nested trace too

    assert gc.isenabled()
    mini.grad(f)(np.ones(3))
    assert seen == [False] and gc.isenabled()
    with pytest.raises(ZeroDivisionError):
        mini.grad(lambda x: 1 / 0)(1.0)
    assert gc.isenabled()
    gc.disable()
    try:
        mini.grad(f)(np.ones(3))
        assert not gc.isenabled()
    finally:
        gc.enable()


def _classifier_step_by_hand(params, ids, mask, labels):
    """The classifier's loss and gradients from its primitives' own functions and VJPs."""
    E, W1, b1, W2, b2 = (params[k] for k in ("embedding", "hidden.W", "hidden.b",
                                              "output.W", "output.b"))
    v = linear.take.fun(E, ids, axis=0)
    z1 = p.add.fun(linear.matmul.fun(v, W1), b1)
    h = p.relu.fun(z1)
    z2 = p.add.fun(linear.matmul.fun(h, W2), b2)
    logits = nn.masked_mean.fun(z2, mask)
    loss = nn.softmax_cross_entropy.fun(logits, labels)
    g = nn.softmax_cross_entropy_grad.fun(np.ones(()), logits, labels)
    g = nn.masked_mean_adjoint.fun(g, mask)
    gb2, gW2 = p.sum_to_like.fun(g, b2), linear.matmul_adjoint_b.fun(g, h, W2)
    g = linear.matmul_adjoint_a.fun(g, h, W2) * p.greater.fun(z1, 0)
    gb1, gW1 = p.sum_to_like.fun(g, b1), linear.matmul_adjoint_b.fun(g, v, W1)
    gE = linear.untake.fun(linear.matmul_adjoint_a.fun(g, v, W1), ids, E, 0)
    return loss, {"embedding": gE, "hidden.W": gW1, "hidden.b": gb1, "output.W": gW2,
                  "output.b": gb2}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_traced_training_step_is_its_primitives_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    model = nn.SentimentClassifier(50, 8, 6, 3)
    params = model.init(rng)
    lengths = rng.integers(1, 7, 5)
    mask = (np.arange(6) < lengths[:, None]).astype(np.float64)
    ids = np.where(mask > 0, rng.integers(2, 50, (5, 6)), 0)
    labels = rng.integers(0, 3, 5)
    loss, grads = mini.value_and_grad(model.loss)(params, ids, mask, labels)
    want_loss, want = _classifier_step_by_hand(params, ids, mask, labels)
    assert np.asarray(loss).tobytes() == np.asarray(want_loss).tobytes()
    for name in want:
        assert grads[name].shape == want[name].shape, name
        assert grads[name].tobytes() == want[name].tobytes(), name
