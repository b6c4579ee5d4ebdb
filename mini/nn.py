"""Layers, loss and optimiser for the sentiment classifier of L05 slide 4, for BOTH front ends.

The classifier reads a sentence as token ids and goes, bottom to top (slide 4)::

    ids (B, T) -> Embedding -> (B, T, D) -> Linear -> ReLU -> (B, T, H) -> Linear -> (B, T, C)
        -> mean over the real tokens (mask) -> logits (B, C) -> softmax

Everything below is made of mini's primitives, so the same code runs on either front end: with
arrays it computes (and under ``mini.grad`` it is traced), with framework nodes (``Variable``,
``Placeholder``) it builds a static graph.  The pooling and the loss are primitives of their own,
defined here with their derivatives written out, as any student's primitive would be: each runs
once per training step, and one node traces faster than the several it replaces.  Parameters
live in a flat dict ``{name: array}``::

    model = SentimentClassifier(vocab_size=1000)
    params = model.init(np.random.default_rng(0))
    loss, grads = mini.value_and_grad(model.loss)(params, ids, mask, labels)    # eager
    params = SGD(0.5).step(params, grads)

    variables = {name: Variable(value, name) for name, value in params.items()}  # framework
    loss = model.loss(variables, ids_placeholder, mask_placeholder, labels_placeholder)
    train_op = GradientDescentOptimizer(0.5).minimize(loss)
"""
import numpy as np

from mini.answers import answer, answers
from mini.primitives import (
    affine, axis_size, defjvp, defvjp, defvjp_zero, getitem, no_tangent, primitive,
    relu, shape_only, sigmoid, softmax, sum, take,
)

__all__ = ["Embedding", "Linear", "relu", "masked_mean", "masked_mean_adjoint", "one_hot_like",
           "softmax_cross_entropy", "softmax_cross_entropy_grad", "sigmoid_cross_entropy", "SGD",
           "SentimentClassifier", "accuracy"]


class Embedding:
    """A lookup table: token id ``i`` becomes row ``i`` of ``E`` (slide 4's bottom layer).

    ``E`` has shape ``(vocab_size, dim)``; ids of any shape ``S`` give vectors of shape
    ``S + (dim,)``.
    The gradient of ``E`` adds each token's gradient into its row (``untake``): rows of words not
    in the batch get zero.  Initialised N(0, 1), so every word starts with a vector of unit-size
    entries, the scale the next layer's initialisation assumes.
    """

    def __init__(self, vocab_size, dim, name="embedding"):
        self.vocab_size, self.dim, self.name = vocab_size, dim, name

    def init(self, rng):
        return {self.name: rng.standard_normal((self.vocab_size, self.dim))}

    @answer("lab4", "classifier")
    def __call__(self, params, ids):
        return take(params[self.name], ids, axis=0)


class Linear:
    """y = x W + b, with ``x`` of shape ``(..., fan_in)``, ``W`` ``(fan_in, fan_out)``, ``b``
    ``(fan_out,)``, ``y`` ``(..., fan_out)``.

    Initialisation: ``W ~ Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in))`` (PyTorch's default for
    ``nn.Linear``), ``b = 0``.  Each output then sums ``fan_in`` terms of variance
    ``var(x) / (3 fan_in)``, so its variance is ``var(x) / 3`` whatever the width: activations
    neither blow up nor vanish as layers get wider.  Computed by one primitive, ``affine``.
    """

    def __init__(self, fan_in, fan_out, name):
        self.fan_in, self.fan_out, self.name = fan_in, fan_out, name

    def init(self, rng):
        bound = 1 / np.sqrt(self.fan_in)
        return {f"{self.name}.W": rng.uniform(-bound, bound, (self.fan_in, self.fan_out)),
                f"{self.name}.b": np.zeros(self.fan_out)}

    @answer("lab4", "classifier")
    def __call__(self, params, x):
        return affine(x, params[f"{self.name}.W"], params[f"{self.name}.b"])


@answer("lab4", "classifier")
@primitive
def masked_mean(h, mask):
    """Average pooling over the real tokens: ``sum_t mask[b,t] h[b,t] / sum_t mask[b,t]``.

    ``h``: ``(B, T, C)``; ``mask``: ``(B, T)``, 1.0 on real tokens and 0.0 on padding (what
    ``mini.data.encode_batch`` returns).  Returns ``(B, C)``.  Whatever ``h`` holds at a padded
    position, it gets weight 0, so padding changes neither the value nor any gradient.

    One primitive rather than the four operations it amounts to (a product, two sums, a
    quotient): one node instead of four on every training step.  Each sentence's mask row times
    its tokens is one batched matrix product.  It is linear in ``h``, so its VJP is its adjoint,
    :func:`masked_mean_adjoint`, and the other way round.
    """
    mask = np.asarray(mask)
    return (mask[:, None, :] @ h)[:, 0, :] / np.add.reduce(mask, axis=1, keepdims=True)


@answer("lab3", "shape_vjps")
@primitive
def masked_mean_adjoint(g, mask):
    """Spread each sentence's ``g[b]`` (``(B, C)``) back over its real tokens, divided by their
    number: ``(B, T, C)``, zero on padding.  The VJP of :func:`masked_mean` for ``h``."""
    mask = np.asarray(mask)
    return (g / np.add.reduce(mask, axis=1, keepdims=True))[:, None, :] * mask[:, :, None]


@answer("lab3", "shape_vjps")
def _masked_mean_vjp_mask(g, ans, h, mask):
    """d mean_b / d mask[b, t] = (h[b, t] - mean_b) / count_b: a token's weight pulls the mean
    towards it."""
    moved = (h - getitem(ans, (slice(None), None))) * getitem(g, (slice(None), None))
    return sum(moved, axis=-1) / sum(mask, axis=1, keepdims=True)


@answer("lab3", "forward_mode")
def _masked_mean_jvp_mask(t, ans, h, mask):
    moved = (h - getitem(ans, (slice(None), None))) * getitem(t, (Ellipsis, None))
    return sum(moved, axis=1) / sum(mask, axis=1, keepdims=True)


@answer("lab3", "forward_mode")
def _masked_mean_adjoint_jvp_mask(t, ans, g, mask):
    """Moving the weights by ``t`` moves ``g[b] mask[b, t] / count_b`` by
    ``g[b] (t[b, t] - mask[b, t] sum_s t[b, s] / count_b) / count_b``."""
    count = sum(mask, axis=1, keepdims=True)
    shifted = t - mask * (sum(t, axis=1, keepdims=True) / count)
    return getitem(g / count, (slice(None), None)) * getitem(shifted, (Ellipsis, None))


with answers("lab3", "shape_vjps"):
    defvjp(masked_mean, lambda g, ans, h, mask: masked_mean_adjoint(g, mask),
           _masked_mean_vjp_mask)
    defvjp(masked_mean_adjoint, lambda g, ans, x, mask: masked_mean(g, mask),
           lambda g, ans, x, mask: _masked_mean_vjp_mask(x, masked_mean(g, mask), g, mask))
with answers("lab3", "forward_mode"):
    defjvp(masked_mean, lambda t, ans, h, mask: masked_mean(t, mask), _masked_mean_jvp_mask)
    defjvp(masked_mean_adjoint, lambda t, ans, x, mask: masked_mean_adjoint(t, mask),
           _masked_mean_adjoint_jvp_mask)


@primitive
def one_hot_like(labels, logits):
    """Rows of the identity sized to ``logits``' last axis: ``one_hot_like([1, 0], (2, 3) logits)
    = [[0, 1, 0], [1, 0, 0]]``.

    Reading the number of classes from ``logits`` when it runs (as the ``*_like`` helpers of
    ``mini.primitives`` do) is what lets a framework graph, whose shapes are known only in a
    Session, use it.  Added with ``mini.primitive`` and ``mini.defvjp_zero``, like any student's
    primitive: it is piecewise constant, so both arguments get zero gradient.
    """
    num_classes = np.shape(logits)[-1]
    return np.eye(num_classes)[_checked_labels(np.asarray(labels), num_classes)]


defvjp_zero(one_hot_like)


@answer("lab1", "softmax_loss")
@primitive
def softmax_cross_entropy(logits, labels):
    """Mean cross-entropy of ``softmax(logits)`` against integer ``labels`` (slides 5-10).

    ``L = -(1/N) sum_n log softmax(logits_n)[labels_n]``, with ``logits`` ``(..., C)`` and
    ``labels`` ints in ``0..C-1`` of shape ``logits.shape[:-1]`` (N entries): for a batch,
    ``(B, C)`` and ``(B,)``.  Each row's maximum is subtracted first, so large logits do not
    overflow: ``log softmax(z) = s - log sum exp(s)`` with ``s = z - max(z)``.

    It is the same as ``-mean(sum(one_hot_like(labels, logits) * log_softmax(logits), axis=-1))``
    (what lab 4 writes), computed as one primitive whose gradient is written out,
    :func:`softmax_cross_entropy_grad`: ``(softmax(logits) - one_hot(labels)) / N``.  Frameworks
    fuse this loss for the same reason (PyTorch's ``cross_entropy``): one node instead of six,
    every training step.
    """
    logits = np.asarray(logits)
    rows = _rows(logits)
    shifted = rows - np.maximum.reduce(rows, axis=1, keepdims=True)
    log_normalizers = np.log(np.add.reduce(np.exp(shifted), axis=1))
    picked = shifted[_label_positions(labels, logits)] - log_normalizers
    return -(np.add.reduce(picked) / picked.size)


@answer("lab1", "softmax_loss_grad")
@primitive
def softmax_cross_entropy_grad(g, logits, labels):
    """``g`` times the gradient of :func:`softmax_cross_entropy` with respect to ``logits``:
    ``g (softmax(logits) - one_hot(labels)) / N``, shaped like ``logits``."""
    probs = softmax.fun(logits, axis=-1)
    rows, labels = _label_positions(labels, probs)
    _rows(probs)[rows, labels] -= 1
    return probs * (g / labels.size)


@answer("lab3", "log_softmax_vjp")
def _cross_entropy_hessian_times(t, g, logits, labels):
    """The Hessian of ``g * softmax_cross_entropy`` at ``logits`` times ``t`` (it is symmetric,
    so this is both the VJP and the JVP of the gradient): ``g/N * s (t - <t, s>)``, the softmax's
    Jacobian row by row."""
    probs = softmax(logits, axis=-1)
    spread = probs * (t - sum(t * probs, axis=-1, keepdims=True))
    return spread * (g / axis_size(labels))


def _rows(x):
    """``x`` as a 2-D view, one row per sample."""
    return x.reshape(-1, x.shape[-1])


def _label_positions(labels, logits):
    """Where each sample's label sits in ``_rows(logits)`` (an array): (row numbers, labels), as
    an index.  The loss and its gradient call it every step, so it reads the arrays' own
    attributes, not numpy's functions of them."""
    labels = np.asarray(labels)
    if labels.shape != logits.shape[:-1]:
        raise ValueError(f"labels of shape {labels.shape} do not fit logits of shape "
                         f"{logits.shape}: softmax_cross_entropy takes one label per row of "
                         "logits, labels.shape == logits.shape[:-1]")
    labels = _checked_labels(labels, logits.shape[-1]).ravel()
    return np.arange(labels.size), labels


def _checked_labels(labels, num_classes):
    """The array ``labels``, after checking that each names one of ``num_classes`` classes.

    One pass over the labels checks both ends: read as unsigned integers, a negative label (which
    numpy's indexing would count from the end) is larger than any class."""
    if labels.dtype.kind not in "iu":
        raise TypeError(f"labels must be integers, the class numbers 0, 1, ...; got {labels.dtype} "
                        "labels")
    if labels.size and np.maximum.reduce(labels.astype(np.uintp), axis=None) >= num_classes:
        raise ValueError(f"labels must lie in 0..{num_classes - 1} for logits with "
                         f"{num_classes} classes; got labels from {labels.min()} to "
                         f"{labels.max()}")
    return labels


with answers("lab3", "log_softmax_vjp"):
    defvjp(softmax_cross_entropy,
           lambda g, ans, logits, labels: softmax_cross_entropy_grad(g, logits, labels),
           shape_only(1))                                    # integer labels: no gradient
    defvjp(softmax_cross_entropy_grad,
           lambda h, ans, g, logits, labels:
           sum(h * softmax_cross_entropy_grad(1.0, logits, labels)),
           lambda h, ans, g, logits, labels: _cross_entropy_hessian_times(h, g, logits, labels),
           shape_only(2))
with answers("lab3", "forward_mode"):
    defjvp(softmax_cross_entropy,
           lambda t, ans, logits, labels:
           sum(t * softmax_cross_entropy_grad(1.0, logits, labels)),
           no_tangent)
    defjvp(softmax_cross_entropy_grad,
           lambda t, ans, g, logits, labels: t * softmax_cross_entropy_grad(1.0, logits, labels),
           lambda t, ans, g, logits, labels: _cross_entropy_hessian_times(t, g, logits, labels),
           no_tangent)


@answer("lab4", "operation")
@primitive
def sigmoid_cross_entropy(z, y):
    """The binary cross-entropy of logits ``z`` against targets ``y`` in [0, 1], entry by entry
    (any shapes that broadcast): -(y log sigmoid(z) + (1 - y) log(1 - sigmoid(z))), which is
    log(1 + e^z) - y z, computed without overflow for logits of any size.  An Operation of the
    kind L05 slide 42 writes, a forward and a backward: dL/dz = sigmoid(z) - y, dL/dy = -z."""
    return np.logaddexp(0.0, z) - y * z


with answers("lab4", "operation"):
    defvjp(sigmoid_cross_entropy, lambda g, ans, z, y: g * (sigmoid(z) - y),
           lambda g, ans, z, y: -(g * z), broadcasting=True)
    defjvp(sigmoid_cross_entropy, lambda t, ans, z, y: t * (sigmoid(z) - y),
           lambda t, ans, z, y: -(t * z))


def accuracy(logits, labels):
    """The fraction of rows whose largest logit is at the label (numpy; not differentiated)."""
    return float(np.mean(np.argmax(logits, axis=-1) == np.asarray(labels)))


class SGD:
    """Stochastic gradient descent on a parameter dict: ``theta <- theta - lr * dL/dtheta``
    (slides 5-10), the same update as the framework's ``GradientDescentOptimizer``."""

    def __init__(self, learning_rate):
        self.learning_rate = learning_rate

    @answer("lab1", "sgd_step")
    def step(self, params, grads):
        """The updated parameters, as a new dict (the old arrays are left as they were)."""
        return {name: value - self.learning_rate * grads[name] for name, value in params.items()}


class SentimentClassifier:
    """Embedding -> Linear -> ReLU -> Linear -> masked mean pooling -> softmax (slide 4).

    Args:
        vocab_size: rows of the embedding (the vocabulary's size, ``<pad>`` and ``<unk>`` included).
        embed_dim, hidden_dim, num_classes: D, H and C in the shapes above.

    ``params`` may hold arrays (eager, traced by ``mini.grad``) or framework ``Variable`` nodes;
    ``ids``, ``mask`` and ``labels`` may be arrays or ``Placeholder`` nodes.  The class holds only
    shapes and names: all state is in ``params``.
    """

    def __init__(self, vocab_size, embed_dim=64, hidden_dim=64, num_classes=2):
        self.embedding = Embedding(vocab_size, embed_dim)
        self.hidden = Linear(embed_dim, hidden_dim, "hidden")
        self.output = Linear(hidden_dim, num_classes, "output")

    def init(self, rng):
        """Fresh parameters ``{name: array}`` drawn from ``rng`` (a ``numpy.random.Generator``)."""
        return {**self.embedding.init(rng), **self.hidden.init(rng), **self.output.init(rng)}

    @answer("lab4", "classifier")
    def logits(self, params, ids, mask):
        """Class scores ``(B, C)`` for token ids ``(B, T)`` with padding mask ``(B, T)``."""
        vectors = self.embedding(params, ids)                       # (B, T, D)
        hidden = relu(self.hidden(params, vectors))                 # (B, T, H)
        return masked_mean(self.output(params, hidden), mask)       # (B, T, C) -> (B, C)

    @answer("lab4", "classifier")
    def loss(self, params, ids, mask, labels):
        """Mean softmax cross-entropy of the batch: a scalar."""
        return softmax_cross_entropy(self.logits(params, ids, mask), labels)
