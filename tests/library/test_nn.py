"""mini.nn: layer shapes, the loss against numpy and central differences, masked pooling, and the
classifier giving the same numbers from both front ends."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import mini
from mini import framework as fw
from mini import nn

# the reference shapes: embedding 1000 x 64, batch 32 x 20 tokens, hidden 64, 2 classes
V, D, H, C, B, T = 1000, 64, 64, 2, 32, 20


def batch(rng, batch_size=B, length=T, vocab=V):
    """Random ids with a random number (>= 1) of real tokens per row, padded with 0."""
    lengths = rng.integers(1, length + 1, batch_size)
    mask = (np.arange(length) < lengths[:, None]).astype(np.float64)
    ids = np.where(mask > 0, rng.integers(2, vocab, (batch_size, length)), 0)
    return ids, mask, rng.integers(0, C, batch_size)


def reference_cross_entropy(logits, labels):
    """-mean log softmax(logits)[label], in plain numpy, shifted by the row max to stay finite."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(labels)), labels].mean()


def test_layer_shapes_and_initialisation():
    rng = np.random.default_rng(0)
    embedding, linear = nn.Embedding(V, D), nn.Linear(D, H, "hidden")
    params = {**embedding.init(rng), **linear.init(rng)}
    assert params["embedding"].shape == (V, D)
    assert params["hidden.W"].shape == (D, H) and params["hidden.b"].shape == (H,)
    assert np.abs(params["hidden.W"]).max() <= 1 / np.sqrt(D)       # Uniform(+-1/sqrt(fan_in))
    assert np.all(params["hidden.b"] == 0)

    ids, _, _ = batch(rng)
    vectors = embedding(params, ids)
    np.testing.assert_array_equal(vectors, params["embedding"][ids])
    assert vectors.shape == (B, T, D) and linear(params, vectors).shape == (B, T, H)
    np.testing.assert_allclose(linear(params, vectors),
                               vectors @ params["hidden.W"] + params["hidden.b"])
    assert np.all(nn.relu(np.array([-1.0, 0.0, 2.0])) == [0.0, 0.0, 2.0])


def test_classifier_shapes():
    model = nn.SentimentClassifier(V, D, H, C)
    rng = np.random.default_rng(1)
    params = model.init(rng)
    assert {name: p.shape for name, p in params.items()} == {
        "embedding": (V, D), "hidden.W": (D, H), "hidden.b": (H,), "output.W": (H, C),
        "output.b": (C,)}
    ids, mask, labels = batch(rng)
    assert model.logits(params, ids, mask).shape == (B, C)
    assert np.ndim(model.loss(params, ids, mask, labels)) == 0


def test_softmax_cross_entropy_matches_numpy_and_is_stable():
    rng = np.random.default_rng(2)
    logits, labels = rng.standard_normal((B, 5)), rng.integers(0, 5, B)
    assert nn.softmax_cross_entropy(logits, labels) == pytest.approx(
        reference_cross_entropy(logits, labels), rel=1e-12)

    huge = logits * 1000                         # exp would overflow without the max shift
    loss = nn.softmax_cross_entropy(huge, labels)
    assert np.isfinite(loss)
    assert loss == pytest.approx(reference_cross_entropy(huge, labels), rel=1e-12)


def test_softmax_cross_entropy_gradient_is_softmax_minus_one_hot_and_central_differences():
    rng = np.random.default_rng(3)
    logits, labels = rng.standard_normal((6, 4)), rng.integers(0, 4, 6)
    mini.check_grads(lambda z: nn.softmax_cross_entropy(z, labels), logits)
    softmax = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(
        mini.grad(nn.softmax_cross_entropy)(logits, labels),
        (softmax - np.eye(4)[labels]) / len(labels), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("labels, lowest, highest", [([0, 1, 2], 0, 2), ([1, -1, 0], -1, 1)])
@pytest.mark.parametrize("use", ["loss", "gradient", "one_hot_like"])
def test_labels_out_of_range_are_named(use, labels, lowest, highest):
    """Too large, or negative (which numpy's indexing would read as counting from the end)."""
    compute = {"loss": nn.softmax_cross_entropy,
               "gradient": lambda z, y: nn.softmax_cross_entropy_grad(1.0, z, y),
               "one_hot_like": lambda z, y: nn.one_hot_like(y, z)}[use]
    with pytest.raises(ValueError, match=rf"labels must lie in 0..1 .* got labels from {lowest} "
                                         rf"to {highest}"):
        compute(np.zeros((3, 2)), np.array(labels))


def test_labels_that_are_not_integers_are_named():
    with pytest.raises(TypeError, match=r"labels must be integers.*got float64 labels"):
        nn.softmax_cross_entropy(np.zeros((3, 2)), np.array([0.0, 1.0, 1.0]))


def test_labels_of_the_wrong_shape_are_named():
    with pytest.raises(ValueError, match=r"labels of shape \(3, 1\) do not fit logits of shape "
                                         r"\(3, 2\).*labels.shape == logits.shape\[:-1\]"):
        nn.softmax_cross_entropy(np.zeros((3, 2)), np.zeros((3, 1), dtype=int))


def _composite_cross_entropy(np_, logits, labels):
    """The loss as lab 4 writes it, in ``np_`` (numpy traced by mini, or autograd.numpy)."""
    shifted = logits - np_.max(logits, axis=-1, keepdims=True)
    log_probs = shifted - np_.log(np_.sum(np_.exp(shifted), axis=-1, keepdims=True))
    return -np_.mean(np_.sum(np.eye(logits.shape[-1])[labels] * log_probs, axis=-1))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_fused_loss_is_the_composite_one_to_the_third_derivative(seed):
    """softmax_cross_entropy is one primitive with its gradient written out: its value, gradient,
    Hessian and a third derivative are the composite loss's, differentiated by autograd."""
    rng = np.random.default_rng(seed)
    logits, labels = 3 * rng.standard_normal((5, 4)), rng.integers(0, 4, 5)
    v = rng.standard_normal((5, 4))

    def ours(z):
        return nn.softmax_cross_entropy(z, labels)

    def theirs(z):
        return _composite_cross_entropy(anp, z, labels)
    assert ours(logits) == pytest.approx(theirs(logits), rel=1e-13)
    np.testing.assert_allclose(mini.grad(ours)(logits), autograd.grad(theirs)(logits),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(mini.hessian(ours)(logits), autograd.hessian(theirs)(logits),
                               rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(   # d/dz <Hessian(z) v, v>: the gradient of the gradient's VJP
        mini.grad(lambda z: mini.sum(mini.hessian_vector_product(ours)(z, v) * v))(logits),
        autograd.grad(lambda z: anp.sum(autograd.hessian_vector_product(theirs)(z, v) * v))(
            logits), rtol=1e-9, atol=1e-12)
    _, jvp = mini.jvp(mini.grad(ours), logits, v)
    np.testing.assert_allclose(jvp.ravel(), autograd.hessian(theirs)(logits).reshape(20, 20)
                               @ v.ravel(), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("seed", [0, 1])
def test_masked_mean_is_the_composite_pooling_to_the_second_derivative_in_both_arguments(seed):
    """masked_mean is one primitive: its derivatives with respect to h and to the mask (weights)
    are those autograd finds for sum(h * mask) / sum(mask)."""
    rng = np.random.default_rng(seed)
    h, weights = rng.standard_normal((3, 4, 2)), rng.uniform(0.5, 2.0, (3, 4))
    u = rng.standard_normal((3, 2))

    def ours(h, m):
        return mini.sum(mini.tanh(nn.masked_mean(h, m)) * u)

    def theirs(h, m):
        pooled = anp.sum(h * m[:, :, None], axis=1) / anp.sum(m, axis=1)[:, None]
        return anp.sum(anp.tanh(pooled) * u)
    assert ours(h, weights) == pytest.approx(theirs(h, weights), rel=1e-13)
    for argnum in (0, 1):
        np.testing.assert_allclose(mini.grad(ours, argnum)(h, weights),
                                   autograd.grad(theirs, argnum)(h, weights), rtol=1e-12)
        np.testing.assert_allclose(mini.hessian(ours, argnum)(h, weights),
                                   autograd.hessian(theirs, argnum)(h, weights), rtol=1e-9,
                                   atol=1e-12)


def test_masked_mean_ignores_padding():
    rng = np.random.default_rng(4)
    h = rng.standard_normal((3, 5, 2))
    mask = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], dtype=float)
    pooled = nn.masked_mean(h, mask)
    np.testing.assert_allclose(pooled, [h[0, :2].mean(0), h[1].mean(0), h[2, 0]])

    garbage = h.copy()
    garbage[mask == 0] = 1e6                     # whatever sits in the padding
    np.testing.assert_allclose(nn.masked_mean(garbage, mask), pooled)

    weights = rng.standard_normal((3, 2))
    grad = mini.grad(lambda h: mini.sum(nn.masked_mean(h, mask) * weights))(h)
    assert np.all(grad[mask == 0] == 0)
    np.testing.assert_allclose(grad[1, 3], weights[1] / 5)
    mini.check_grads(lambda h: nn.masked_mean(h, mask), h)


def test_classifier_gradients_equal_central_differences():
    model = nn.SentimentClassifier(12, 3, 4, 2)
    rng = np.random.default_rng(5)
    params = model.init(rng)
    ids, mask, labels = batch(rng, batch_size=4, length=5, vocab=12)
    grads = mini.grad(model.loss)(params, ids, mask, labels)
    for name in params:
        def loss_of(p, name=name):
            return model.loss({**params, name: p}, ids, mask, labels)
        np.testing.assert_allclose(grads[name], mini.numerical_grad(loss_of, params[name]),
                                   rtol=1e-5, atol=1e-8, err_msg=name)


def test_eager_and_framework_give_the_same_logits_loss_and_gradients():
    model = nn.SentimentClassifier(V, D, H, C)
    rng = np.random.default_rng(6)
    params = model.init(rng)
    ids, mask, labels = batch(rng)

    loss, grads = mini.value_and_grad(model.loss)(params, ids, mask, labels)
    logits = model.logits(params, ids, mask)

    graph = fw.Graph()
    with graph.as_default():
        variables = {name: fw.Variable(value, name) for name, value in params.items()}
        ids_in = fw.Placeholder((None, None), "ids", dtype=np.int64)
        mask_in, labels_in = fw.Placeholder((None, None), "mask"), fw.Placeholder((None,), "labels",
                                                                                  dtype=np.int64)
        logits_node = model.logits(variables, ids_in, mask_in)
        loss_node = nn.softmax_cross_entropy(logits_node, labels_in)
        grad_nodes = fw.gradients(loss_node, list(variables.values()))
    feed = {ids_in: ids, mask_in: mask, labels_in: labels}
    session = fw.Session(graph)
    out = session.run({"logits": logits_node, "loss": loss_node}, feed)
    grad_values = session.run(grad_nodes, feed)

    np.testing.assert_allclose(out["logits"], logits, rtol=1e-12, atol=1e-14)
    assert out["loss"] == pytest.approx(loss, rel=1e-12)
    for name, value in zip(variables, grad_values):
        np.testing.assert_allclose(value, grads[name], rtol=1e-10, atol=1e-14, err_msg=name)


def test_sgd_step_is_theta_minus_lr_grad_and_leaves_the_old_params():
    params = {"w": np.array([1.0, 2.0]), "b": np.array(0.5)}
    grads = {"w": np.array([0.5, -1.0]), "b": np.array(2.0)}
    new = nn.SGD(0.1).step(params, grads)
    np.testing.assert_allclose(new["w"], [0.95, 2.1])
    assert new["b"] == pytest.approx(0.3)
    np.testing.assert_array_equal(params["w"], [1.0, 2.0])


def test_sgd_lowers_the_loss():
    model = nn.SentimentClassifier(50, 8, 8, 2)
    rng = np.random.default_rng(7)
    params = model.init(rng)
    ids, mask, labels = batch(rng, vocab=50)
    losses = []
    for _ in range(50):
        loss, grads = mini.value_and_grad(model.loss)(params, ids, mask, labels)
        params = nn.SGD(1.0).step(params, grads)
        losses.append(loss)
    assert np.all(np.diff(losses) < 0) and losses[-1] < 0.7 * losses[0]
