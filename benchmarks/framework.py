"""One training step of the sentiment classifier three ways, timed side by side in one process.

    python benchmarks/framework.py [--repeats 30]

The same model (``mini.nn.SentimentClassifier`` at the reference shapes: embedding 1000 x 64,
batch 32 x 20 tokens, hidden 64, 2 classes), the same batch, the same update
``theta <- theta - lr * grad``:

* framework: ``Session.run([loss, train_op], feed_dict)``, the graph built once beforehand (static);
* eager: ``mini.value_and_grad`` traces the program anew each step, then ``nn.SGD.step`` (dynamic);
* autograd: the HIPS package's ``value_and_grad`` on the same model in ``autograd.numpy``.

Each time is the median of ``--repeats`` steps after uncounted warm-up steps; the three alternate
within each repeat, in a random order.  numpy is held to one thread.
"""
import os

# one thread for numpy's BLAS, set before numpy loads it; the imports below must come after
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import sys
from pathlib import Path

import autograd
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))    # run from a checkout
import mini
from mini import framework as fw
from mini import nn

from autodiff import autograd_classifier_loss, classifier_batch, median_seconds   # this folder

LEARNING_RATE = 0.5


def framework_step(model, params, ids, mask, labels):
    """Build the graph once (phase one); return a thunk running one step of it (phase two)."""
    with fw.Graph().as_default() as graph:
        variables = {name: fw.Variable(value, name) for name, value in params.items()}
        ids_in = fw.Placeholder((None, None), "ids", dtype=np.int64)
        mask_in = fw.Placeholder((None, None), "mask")
        labels_in = fw.Placeholder((None,), "labels", dtype=np.int64)
        loss = model.loss(variables, ids_in, mask_in, labels_in)
        train_op = fw.GradientDescentOptimizer(LEARNING_RATE).minimize(loss)
    session, feed = fw.Session(graph), {ids_in: ids, mask_in: mask, labels_in: labels}
    return lambda: session.run([loss, train_op], feed)


def eager_step(model, params, ids, mask, labels):
    loss_and_grads, sgd = mini.value_and_grad(model.loss), nn.SGD(LEARNING_RATE)

    def step():
        loss, grads = loss_and_grads(params, ids, mask, labels)
        return loss, sgd.step(params, grads)
    return step


def autograd_step(params, ids, mask, labels):
    loss_and_grads = autograd.value_and_grad(autograd_classifier_loss)

    def step():
        loss, grads = loss_and_grads(params, ids, mask, labels)
        return loss, {name: value - LEARNING_RATE * grads[name] for name, value in params.items()}
    return step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    model, params, ids, mask, labels = classifier_batch()
    steps = {"framework (Session)": framework_step(model, params, ids, mask, labels),
             "eager (mini.grad)": eager_step(model, params, ids, mask, labels),
             "autograd package": autograd_step(params, ids, mask, labels)}
    first_losses = {name: float(step()[0]) for name, step in steps.items()}
    assert np.allclose(list(first_losses.values()), first_losses["eager (mini.grad)"], rtol=1e-12)

    times = dict(zip(steps, median_seconds(list(steps.values()), args.repeats)))
    eager, theirs = times["eager (mini.grad)"], times["autograd package"]
    print(f"{'one training step':<22}{'ms':>9}{'/ eager':>10}{'/ autograd':>12}")
    for name, seconds in times.items():
        print(f"{name:<22}{seconds * 1e3:>9.3f}{seconds / eager:>10.2f}{seconds / theirs:>12.2f}")


if __name__ == "__main__":
    main()
