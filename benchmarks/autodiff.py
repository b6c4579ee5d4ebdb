"""mini against the autograd package (HIPS) and against numpy by hand: the same programs, timed
side by side in one process.

    python benchmarks/autodiff.py [--repeats 51] [--seconds 3]

Three programs, each written once with mini's primitives and once with ``autograd.numpy``:

(a) one training step (forward + backward) of the sentiment classifier at the reference shapes:
    embedding 1000 x 64, batch 32 x 20 tokens, hidden 64, 2 classes (``mini.nn`` on the mini side);
(b) a chain of 1,000 steps ``x = x * c + 0`` on a scalar (2,000 primitive calls), gradient of
    the result: per-operation overhead of tracing and of the reverse pass;
(c) the same chain with 10,000 steps.

Program (a) is also written by hand in plain numpy, its gradients derived on paper: the floor that
any automatic differentiation on numpy can only approach, since it runs the same array operations
and nothing else (no trace, no graph, no table of derivatives).  Where mini's primitive chooses
how to compute (the embedding's rows looked up with ``take`` rather than by indexing with the
ids, its gradient as one ``np.bincount``, a layer over every token as one 2-D matrix product, a
bias's gradient as a product with a vector of ones), the hand-written step makes the same choice,
so that mini / by hand measures what automatic differentiation costs, not a difference of
algorithms.

When PyTorch is importable, each program also runs in PyTorch eager mode (float64 tensors, the
gradient by ``torch.autograd.grad``), held to one thread like numpy; otherwise its column says "not
installed" (``pip install -e .[bench]``; the CPU-only torch wheel is enough, see pyproject.toml).

Each cell is the median of the timings of a row's repeats, after warm-up runs that are not
counted: at least ``--repeats`` of them, and as many more as fit in ``--seconds``, so that the
classifier's step (a few milliseconds) is timed over a thousand or so.  mini, autograd, PyTorch
and the step by hand alternate within each repeat, in a random order, so all see the same
machine state.  On a shared machine, with 51 repeats the classifier's ratios moved by up to 0.03
from one run to the next; over three seconds, by under 0.01.  The targets are
mini / autograd <= 0.5 and mini / PyTorch <= 1.0 on every row, and mini / by hand <= 1.25 where
there is a hand-written step.  numpy is held to one thread, so the numbers describe one core.
"""
import os

# one thread for numpy's BLAS, set before numpy loads it; the imports below must come after
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import autograd
import autograd.numpy as anp
import numpy as np
from autograd.extend import defvjp, primitive

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))    # run from a checkout
import mini
from mini import nn

try:
    import torch
    torch.set_num_threads(1)
except ImportError:
    torch = None

V, D, B, T, H, C = 1000, 64, 32, 20, 64, 2
TARGET_AUTOGRAD, TARGET_PYTORCH, TARGET_BY_HAND = 0.5, 1.0, 1.25


def classifier_batch(seed=0, shapes=(V, D, H, C, B, T), shortest=5):
    """The model, parameters as mini.nn initialises them, and one batch of ids, mask and labels:
    ``shapes`` are the vocabulary, D, H, C, the batch and its tokens, each sentence at least
    ``shortest`` tokens long (tests/library/test_speed_floor.py draws other shapes)."""
    vocab, dim, hidden, classes, batch, tokens = shapes
    rng = np.random.default_rng(seed)
    model = nn.SentimentClassifier(vocab, dim, hidden, classes)
    params = model.init(rng)
    lengths = rng.integers(shortest, tokens + 1, batch)
    mask = (np.arange(tokens) < lengths[:, None]).astype(np.float64)
    ids = np.where(mask > 0, rng.integers(2, vocab, (batch, tokens)), 0)
    return model, params, ids, mask, rng.integers(0, classes, batch)


@primitive
def anp_logsumexp(x, axis=-1, keepdims=True):
    """autograd's own scipy.special.logsumexp (one primitive, as in mini), without needing scipy."""
    m = np.max(x, axis=axis, keepdims=True)
    return m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


defvjp(anp_logsumexp, lambda ans, x, axis=-1, keepdims=True: lambda g: g * np.exp(x - ans))


def autograd_classifier_loss(params, ids, mask, labels):
    """nn.SentimentClassifier.loss, line for line, in autograd.numpy."""
    vectors = params["embedding"][ids]
    hidden = anp.maximum(anp.matmul(vectors, params["hidden.W"]) + params["hidden.b"], 0)
    token_logits = anp.matmul(hidden, params["output.W"]) + params["output.b"]
    mask3 = mask[:, :, None]
    logits = anp.sum(token_logits * mask3, axis=1) / anp.sum(mask3, axis=1)
    log_probs = logits - anp_logsumexp(logits, axis=-1, keepdims=True)
    return -anp.mean(anp.sum(np.eye(logits.shape[-1])[labels] * log_probs, axis=-1))


def by_hand_classifier_step(params, ids, mask, labels):
    """(loss, {name: gradient}) of nn.SentimentClassifier.loss, forward and backward written out.

    Forward: embedding rows, hidden layer and ReLU, output layer, the mean over each sentence's
    real tokens, softmax cross-entropy.  Backward, from the loss down: (softmax - one_hot) / B,
    spread back over the real tokens, through each layer (``x^T g`` for a weight, the sum over
    rows for a bias, ``g W^T`` for the input), through the ReLU's mask, into the rows of the
    embedding that were looked up.
    """
    E, W1, b1, W2, b2 = (params[name] for name in
                         ("embedding", "hidden.W", "hidden.b", "output.W", "output.b"))
    batch, tokens = ids.shape
    vectors = E.take(ids.ravel(), axis=0)                     # (B T, D): every token a row
    pre_activation = vectors @ W1 + b1                        # (B T, H)
    hidden = np.maximum(pre_activation, 0)
    token_logits = (hidden @ W2 + b2).reshape(batch, tokens, -1)
    counts = np.add.reduce(mask, axis=1, keepdims=True)       # (B, 1) real tokens per sentence
    logits = (mask[:, None, :] @ token_logits)[:, 0, :] / counts
    shifted = logits - np.maximum.reduce(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.add.reduce(np.exp(shifted), axis=1, keepdims=True))
    rows = np.arange(batch)
    loss = -np.add.reduce(log_probs[rows, labels]) / batch

    d_logits = np.exp(log_probs)                              # softmax(logits) - one_hot, / B
    d_logits[rows, labels] -= 1
    d_logits /= batch
    d_tokens = ((d_logits / counts)[:, None, :] * mask[:, :, None]).reshape(batch * tokens, -1)
    d_pre_activation = (d_tokens @ W2.T) * (pre_activation > 0)
    d_vectors = d_pre_activation @ W1.T
    rows_of_E = (ids.reshape(-1, 1) * E.shape[1] + np.arange(E.shape[1])).ravel()
    d_E = np.bincount(rows_of_E, weights=d_vectors.ravel(), minlength=E.size).reshape(E.shape)
    ones = np.ones(batch * tokens)                            # sums over the rows, as products
    return loss, {"embedding": d_E,
                  "hidden.W": vectors.T @ d_pre_activation,
                  "hidden.b": ones @ d_pre_activation,
                  "output.W": hidden.T @ d_tokens,
                  "output.b": ones @ d_tokens}


def torch_classifier_loss(params, ids, mask, labels):
    """nn.SentimentClassifier.loss, line for line, in PyTorch (``ids`` and ``labels`` int64)."""
    vectors = params["embedding"][ids]
    hidden = torch.relu(vectors @ params["hidden.W"] + params["hidden.b"])
    token_logits = hidden @ params["output.W"] + params["output.b"]
    mask3 = mask[:, :, None]
    logits = (token_logits * mask3).sum(1) / mask3.sum(1)
    log_probs = logits - torch.logsumexp(logits, -1, keepdim=True)
    return -(torch.eye(logits.shape[-1], dtype=logits.dtype)[labels] * log_probs).sum(-1).mean()


def torch_value_and_grad(loss, params, *data):
    """(loss, {name: gradient}) from fresh leaf tensors, as a training step would compute it."""
    leaves = {name: torch.from_numpy(value).requires_grad_() for name, value in params.items()}
    value = loss(leaves, *data)
    grads = torch.autograd.grad(value, list(leaves.values()))
    return value.item(), {name: g.numpy() for name, g in zip(leaves, grads)}


def torch_chain_grad(steps):
    x = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    return torch.autograd.grad(chain(x, steps), x)[0].item()


def chain(x, steps):
    """``steps`` times x = x * c + 0: two primitives per step, each node read once."""
    for _ in range(steps):
        x = x * 0.999 + 0.0
    return x


def programs():
    """name -> (mini thunk, autograd thunk, PyTorch thunk or None, by-hand thunk or None), each
    computing a gradient from scratch."""
    model, params, ids, mask, labels = classifier_batch()
    mini_step = mini.value_and_grad(model.loss)
    autograd_step = autograd.value_and_grad(autograd_classifier_loss)
    data = None if torch is None else [torch.from_numpy(v) for v in (ids, mask, labels)]
    rows = {"(a) classifier training step": (
        lambda: mini_step(params, ids, mask, labels),
        lambda: autograd_step(params, ids, mask, labels),
        None if torch is None else lambda: torch_value_and_grad(torch_classifier_loss, params,
                                                                *data),
        lambda: by_hand_classifier_step(params, ids, mask, labels))}
    for steps in (1_000, 10_000):
        rows[f"({'b' if steps == 1_000 else 'c'}) scalar chain, {steps:,} steps"] = (
            lambda s=steps: mini.grad(chain)(1.5, s),
            lambda s=steps: autograd.grad(chain)(1.5, s),
            None if torch is None else lambda s=steps: torch_chain_grad(s),
            None)
    return rows


def check_agreement(rows):
    """Before timing: every side must compute the same numbers as mini."""
    for name, (mini_thunk, *others) in rows.items():
        ours = mini_thunk()
        for theirs in (thunk() for thunk in others if thunk is not None):
            _assert_same(name, ours, theirs)


def _assert_same(name, ours, theirs):
    if isinstance(ours, tuple):
        assert np.isclose(ours[0], theirs[0], rtol=1e-10), f"{name}: losses differ"
        ours, theirs = ours[1], theirs[1]
    for key in (ours if isinstance(ours, dict) else [None]):
        a, b = (ours[key], theirs[key]) if key else (ours, theirs)
        assert np.allclose(a, b, rtol=1e-9, atol=1e-12), f"{name}: gradients differ at {key}"


def median_seconds(thunks, repeats, seconds=0.0, warmup=2):
    """Median wall time of each thunk, alternating between them in every repeat, over at least
    ``repeats`` repeats and at least ``seconds`` seconds.

    Each repeat runs them in a new random order (seeded), so that each thunk follows each of
    the others equally often: a thunk finds the caches as the one before it left them, and
    PyTorch leaves them colder than autograd does.  In a fixed order, the classifier's mini /
    autograd ratio moved by 0.09 between "mini after PyTorch" and "mini after autograd".
    """
    for _ in range(warmup):
        for thunk in thunks:
            thunk()
    times, orders, began = [[] for _ in thunks], random.Random(0), time.perf_counter()
    while len(times[0]) < repeats or time.perf_counter() - began < seconds:
        for i in orders.sample(range(len(thunks)), len(thunks)):
            start = time.perf_counter()
            thunks[i]()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(samples) for samples in times]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=51, help="the fewest repeats of a row")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="the shortest time a row's repeats take together")
    args = parser.parse_args(argv)
    rows = programs()
    check_agreement(rows)
    print(f"PyTorch: {'not installed' if torch is None else torch.__version__ + ', 1 thread'}")
    print(f"{'program':<36}{'mini (ms)':>11}{'autograd (ms)':>15}{'PyTorch (ms)':>15}"
          f"{'by hand (ms)':>14}{'mini/autograd':>15}{'mini/PyTorch':>14}{'mini/by hand':>14}"
          f"  targets (<= {TARGET_AUTOGRAD}, <= {TARGET_PYTORCH}, <= {TARGET_BY_HAND})")
    for name, thunks in rows.items():
        timed = iter(median_seconds([t for t in thunks if t is not None], args.repeats,
                                    args.seconds))
        ours, theirs, pytorch, by_hand = (None if t is None else next(timed) for t in thunks)
        ratio = ours / theirs
        pytorch_ms, mini_over_pytorch = _column(ours, pytorch, "not installed")
        by_hand_ms, mini_over_by_hand = _column(ours, by_hand, "-")
        met = (ratio <= TARGET_AUTOGRAD and (pytorch is None or ours / pytorch <= TARGET_PYTORCH)
               and (by_hand is None or ours / by_hand <= TARGET_BY_HAND))
        print(f"{name:<36}{ours * 1e3:>11.3f}{theirs * 1e3:>15.3f}{pytorch_ms:>15}"
              f"{by_hand_ms:>14}{ratio:>15.2f}{mini_over_pytorch:>14}{mini_over_by_hand:>14}"
              f"  {'ok' if met else 'MISSED'}")


def _column(ours, seconds, missing):
    """A column's time in ms and mini's ratio to it, or ``missing`` and "-" where it has none."""
    return (missing, "-") if seconds is None else (f"{seconds * 1e3:.3f}", f"{ours / seconds:.2f}")


if __name__ == "__main__":
    main()
