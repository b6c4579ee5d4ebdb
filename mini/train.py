"""Train the sentiment classifier (L05 slide 4) end to end, from either front end.

    python -m mini.train                                  # eager: mini.value_and_grad + nn.SGD
    python -m mini.train --frontend framework --epochs 10 --seed 0 --out outputs/

Both front ends run the same model code (``mini.nn.SentimentClassifier``), draw the same initial
parameters and the same minibatch order from one seed, and apply the same update
``theta <- theta - lr * grad``; their loss trajectories agree to rounding.  The script prints the
validation accuracy after each epoch, the test accuracy at the end, and saves the loss curve.
Ten epochs take about 2 s on one core (``OPENBLAS_NUM_THREADS=1``; on a busy machine a
multi-threaded BLAS is much slower on these small matrices) and reach about 89% test accuracy.
"""
import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from mini import data as datasets
from mini.autodiff import value_and_grad
from mini.framework import GradientDescentOptimizer, Graph, Placeholder, Session, Variable
from mini.nn import SGD, SentimentClassifier, accuracy, softmax_cross_entropy
from mini.viz import plot_history

FRONTENDS = ("eager", "framework")


@dataclass
class Result:
    """What a training run produced.

    ``history``: ``{"train loss": one float per step, "train loss (epoch mean)" and
    "validation accuracy": one per epoch}``;
    ``params``: the trained ``{name: array}``; ``seconds``: wall time of the training loop.
    """
    history: dict
    test_accuracy: float
    params: dict
    seconds: float


class EagerTrainer:
    """One SGD step = trace the loss with ``mini.value_and_grad``, then ``nn.SGD.step``."""

    def __init__(self, model, params, learning_rate):
        self.model, self.params = model, params
        self.optimizer = SGD(learning_rate)
        self.loss_and_grads = value_and_grad(model.loss)

    def step(self, ids, mask, labels):
        loss, grads = self.loss_and_grads(self.params, ids, mask, labels)
        self.params = self.optimizer.step(self.params, grads)
        return float(loss)

    def logits(self, ids, mask):
        return self.model.logits(self.params, ids, mask)

    def trained_params(self):
        return self.params


class FrameworkTrainer:
    """Phase one builds the graph once: Variables for the parameters, Placeholders for the batch,
    the loss node and ``GradientDescentOptimizer(lr).minimize(loss)``.  Phase two runs it: one
    ``Session.run([loss, train_op], feed_dict)`` per step (slides 35, 43-44)."""

    def __init__(self, model, params, learning_rate):
        self.graph = Graph()
        with self.graph.as_default():
            self.variables = {name: Variable(value, name) for name, value in params.items()}
            self.ids = Placeholder((None, None), "ids", dtype=np.int64)
            self.mask = Placeholder((None, None), "mask")
            self.labels = Placeholder((None,), "labels", dtype=np.int64)
            self.logits_node = model.logits(self.variables, self.ids, self.mask)
            self.loss = softmax_cross_entropy(self.logits_node, self.labels)
            self.train_op = GradientDescentOptimizer(learning_rate).minimize(self.loss)
        self.session = Session(self.graph)

    def step(self, ids, mask, labels):
        feed = {self.ids: ids, self.mask: mask, self.labels: labels}
        loss, _ = self.session.run([self.loss, self.train_op], feed)
        return float(loss)

    def logits(self, ids, mask):
        return self.session.run(self.logits_node, {self.ids: ids, self.mask: mask})

    def trained_params(self):
        return {name: variable.value for name, variable in self.variables.items()}


TRAINERS = {"eager": EagerTrainer, "framework": FrameworkTrainer}


def train(frontend="eager", epochs=10, seed=0, learning_rate=0.5, batch_size=32, dataset=None,
          progress=True, log=tqdm.write):
    """Train ``SentimentClassifier`` with minibatch SGD and return a :class:`Result`.

    Args:
        frontend: "eager" (``mini.grad``) or "framework" (``Session`` and
            ``GradientDescentOptimizer``).
        epochs, seed, learning_rate, batch_size: the run; ``seed`` fixes the initial parameters
            and the order of the minibatches, the same for both front ends.
        dataset: a ``mini.data.Splits`` (default: ``mini.data.load_sentiment()``).
        progress: show a tqdm progress bar.
        log: called with each per-epoch line (``None``: silent); the default, ``tqdm.write``,
            prints without breaking the progress bar.
    """
    if frontend not in TRAINERS:
        raise ValueError(f"unknown frontend {frontend!r}; choose one of {FRONTENDS}")
    dataset = dataset or datasets.load_sentiment()
    vocab = datasets.Vocabulary.build(dataset.train.sentences)
    train_ids, train_mask = datasets.encode_batch(dataset.train.sentences, vocab)
    held_out = {name: (*datasets.encode_batch(split.sentences, vocab), split.labels)
                for name, split in (("validation", dataset.validation), ("test", dataset.test))}
    model = SentimentClassifier(len(vocab))
    rng = np.random.default_rng(seed)
    trainer = TRAINERS[frontend](model, model.init(rng), learning_rate)

    def accuracy_on(name):
        ids, mask, labels = held_out[name]
        return accuracy(trainer.logits(ids, mask), labels)

    history = {"train loss": [], "train loss (epoch mean)": [], "validation accuracy": []}
    steps = -(-len(dataset.train) // batch_size)
    bar = tqdm(total=epochs * steps, desc=f"training ({frontend})", disable=not progress,
               unit="step", leave=False)
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        for ids, mask, labels in datasets.batches(train_ids, train_mask, dataset.train.labels,
                                                  batch_size, rng):
            history["train loss"].append(trainer.step(ids, mask, labels))
            bar.update()
            bar.set_postfix(loss=f"{history['train loss'][-1]:.3f}", refresh=False)
        history["train loss (epoch mean)"].append(float(np.mean(history["train loss"][-steps:])))
        history["validation accuracy"].append(accuracy_on("validation"))
        if log:
            log(f"epoch {epoch:>2}/{epochs}  "
                f"train loss {history['train loss (epoch mean)'][-1]:.4f}  "
                f"validation accuracy {history['validation accuracy'][-1]:.3f}")
    seconds = time.perf_counter() - start
    bar.close()
    return Result(history, accuracy_on("test"), trainer.trained_params(), seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mini.train",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--frontend", choices=FRONTENDS, default="eager")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=0.5, help="learning rate (default 0.5)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", type=Path, default=Path("outputs"),
                        help="folder for the loss curve (default outputs/)")
    args = parser.parse_args(argv)

    result = train(args.frontend, args.epochs, args.seed, args.lr, args.batch_size)
    print(f"test accuracy {result.test_accuracy:.3f} ({args.frontend}, {args.epochs} epochs, "
          f"{result.seconds:.1f} s)")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"loss_curve_{args.frontend}.png"
    plot_history(result.history, title=f"sentiment classifier, {args.frontend} front end") \
        .savefig(path, dpi=120)
    print(f"loss curve saved to {path}")


if __name__ == "__main__":
    main()
