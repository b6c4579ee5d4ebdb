"""Training the sentiment classifier end to end from both front ends (python -m mini.train)."""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from mini import data, train
from support import ROOT

EPOCHS, SEED = 10, 0
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One full training run per front end (about 2 s each), shared by the tests below.

    They run in a child process with one BLAS thread: the requirement is one core, and on a busy
    machine a multi-threaded BLAS spins on these small matrices, ten times slower or worse.
    """
    out = tmp_path_factory.mktemp("runs") / "runs.pickle"
    code = ("import pickle, sys; from mini import train; pickle.dump({f: train.train(f, epochs="
            f"{EPOCHS}, seed={SEED}, progress=False, log=None) for f in train.FRONTENDS}}, "
            "open(sys.argv[1], 'wb'))")
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code, str(out)], env=env, cwd=ROOT, check=True,
                   timeout=600)
    return pickle.loads(out.read_bytes())


def small_dataset(size=320):
    """The shipped data with the training split cut to ``size`` sentences: quick runs."""
    full = data.load_sentiment()
    return data.Splits(data.Split(full.train.sentences[:size], full.train.labels[:size]),
                       full.validation, full.test)


@pytest.mark.parametrize("frontend", train.FRONTENDS)
def test_reaches_85_percent_test_accuracy_in_under_a_minute(runs, frontend):
    result = runs[frontend]
    assert result.test_accuracy >= 0.85, f"{frontend}: test accuracy {result.test_accuracy:.3f}"
    assert result.seconds < 60
    assert len(result.history["validation accuracy"]) == EPOCHS
    assert len(result.history["train loss"]) == EPOCHS * 150       # 4,800 sentences / 32
    first, last = result.history["train loss (epoch mean)"][0], result.history[
        "train loss (epoch mean)"][-1]
    assert last < 0.7 * first


def test_both_front_ends_follow_the_same_loss_trajectory(runs):
    eager, framework = runs["eager"], runs["framework"]
    np.testing.assert_allclose(framework.history["train loss"], eager.history["train loss"],
                               rtol=0, atol=1e-8)
    assert framework.history["validation accuracy"] == eager.history["validation accuracy"]
    for name, value in eager.params.items():
        np.testing.assert_allclose(framework.params[name], value, rtol=0, atol=1e-8, err_msg=name)


def test_the_seed_decides_the_run():
    dataset = small_dataset()
    a, b, c = (train.train(epochs=1, seed=seed, dataset=dataset, progress=False, log=None)
               for seed in (1, 1, 2))
    assert a.history["train loss"] == b.history["train loss"] != c.history["train loss"]


def test_command_line_prints_accuracies_and_saves_the_loss_curve(tmp_path, capsys):
    train.main(["--frontend", "framework", "--epochs", "1", "--seed", "3", "--out",
                str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert "epoch  1/1" in printed and "validation accuracy" in printed
    assert "test accuracy" in printed
    png = tmp_path / "out" / "loss_curve_framework.png"
    assert png.read_bytes().startswith(b"\x89PNG")


def test_unknown_frontend_is_named():
    with pytest.raises(ValueError, match="unknown frontend 'pytorch'"):
        train.train("pytorch")
