"""Layers, loss and optimiser for the sentiment classifier of L05 slide 4, for BOTH front ends.

The classifier reads a sentence as token ids and goes, bottom to top (slide 4)::

    ids (B, T) -> Embedding -> (B, T, D) -> Linear -> ReLU -> (B, T, H) -> Linear -> (B, T, C)
        -> mean over the real tokens (mask) -> logits (B, C) -> softmax

Everything below is written with mini's primitives only, so the same code runs on either front end:
with arrays it computes (and under ``mini.grad`` it is traced), with framework nodes (``Variable``,
``Placeholder``) it builds a static graph.  Parameters live in a flat dict ``{name: array}``::

    model = SentimentClassifier(vocab_size=1000)
    params = model.init(np.random.default_rng(0))
    loss, grads = mini.value_and_grad(model.loss)(params, ids, mask, labels)    # eager
    params = SGD(0.5).step(params, grads)

    variables = {name: Variable(value, name) for name, value in params.items()}  # framework
    loss = model.loss(variables, ids_placeholder, mask_placeholder, labels_placeholder)
    train_op = GradientDescentOptimizer(0.5).minimize(loss)
"""
import numpy as np

from mini.primitives import (
    affine, defvjp_zero, getitem, log_softmax, mean, primitive, relu, sum, take,
)

__all__ = ["Embedding", "Linear", "relu", "masked_mean", "one_hot_like", "softmax_cross_entropy",
           "SGD", "SentimentClassifier", "accuracy"]


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

    def __call__(self, params, x):
        return affine(x, params[f"{self.name}.W"], params[f"{self.name}.b"])


def masked_mean(h, mask):
    """Average pooling over the real tokens: ``sum_t mask[b,t] h[b,t] / sum_t mask[b,t]``.

    ``h``: ``(B, T, C)``; ``mask``: ``(B, T)``, 1.0 on real tokens and 0.0 on padding (what
    ``mini.data.encode_batch`` returns).  Returns ``(B, C)``.  Whatever ``h`` holds at a padded
    position, it gets weight 0, so padding changes neither the value nor any gradient.
    """
    mask3 = getitem(mask, (slice(None), slice(None), None))            # (B, T, 1)
    return sum(h * mask3, axis=1) / sum(mask3, axis=1)


@primitive
def one_hot_like(labels, logits):
    """Rows of the identity sized to ``logits``' last axis: ``one_hot_like([1, 0], (2, 3) logits)
    = [[0, 1, 0], [1, 0, 0]]``.

    Reading the number of classes from ``logits`` when it runs (as the ``*_like`` helpers of
    ``mini.primitives`` do) is what lets a framework graph, whose shapes are known only in a
    Session, use it.  Added with ``mini.primitive`` and ``mini.defvjp_zero``, like any student's
    primitive: it is piecewise constant, so both arguments get zero gradient.
    """
    labels = np.asarray(labels)
    num_classes = np.shape(logits)[-1]
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"labels must lie in 0..{num_classes - 1} for logits with {num_classes} "
                         f"classes; got labels from {labels.min()} to {labels.max()}")
    return np.eye(num_classes)[labels]


defvjp_zero(one_hot_like)


def softmax_cross_entropy(logits, labels):
    """Mean cross-entropy of ``softmax(logits)`` against integer ``labels`` (slides 5-10).

    ``L = -(1/B) sum_b log softmax(logits_b)[labels_b]``, with ``logits`` ``(B, C)`` and ``labels``
    ``(B,)`` ints in ``0..C-1``.  Computed as ``-mean(sum(one_hot * log_softmax(logits)))``;
    ``log_softmax`` subtracts the row maximum first, so large logits do not overflow.  Its gradient
    with respect to the logits is ``(softmax(logits) - one_hot(labels)) / B``.
    """
    return -mean(sum(one_hot_like(labels, logits) * log_softmax(logits, axis=-1), axis=-1))


def accuracy(logits, labels):
    """The fraction of rows whose largest logit is at the label (numpy; not differentiated)."""
    return float(np.mean(np.argmax(logits, axis=-1) == np.asarray(labels)))


class SGD:
    """Stochastic gradient descent on a parameter dict: ``theta <- theta - lr * dL/dtheta``
    (slides 5-10), the same update as the framework's ``GradientDescentOptimizer``."""

    def __init__(self, learning_rate):
        self.learning_rate = learning_rate

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

    def logits(self, params, ids, mask):
        """Class scores ``(B, C)`` for token ids ``(B, T)`` with padding mask ``(B, T)``."""
        vectors = self.embedding(params, ids)                       # (B, T, D)
        hidden = relu(self.hidden(params, vectors))                 # (B, T, H)
        return masked_mean(self.output(params, hidden), mask)       # (B, T, C) -> (B, C)

    def loss(self, params, ids, mask, labels):
        """Mean softmax cross-entropy of the batch: a scalar."""
        return softmax_cross_entropy(self.logits(params, ids, mask), labels)
