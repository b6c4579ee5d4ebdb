"""The floor benchmarks/autodiff.py measures mini against, and the fast paths its step takes.

* the classifier step written by hand in numpy (``by_hand_classifier_step``) computes mini's loss
  and gradients, at the benchmark's shapes and at others, so that mini / by hand compares the same
  arithmetic;
* ``sum_to_shape`` sums float rows as a product with a vector of ones: the sums numpy gives, for
  float32 and float64, leading axes added and axes of length 1 stretched; other dtypes and full
  sums keep numpy's own reduction, and its dtype.
"""
import importlib.util

import numpy as np
import pytest

import mini
from mini.table import sum_to_shape

from support import ROOT


def _benchmark():
    spec = importlib.util.spec_from_file_location("autodiff_benchmark",
                                                  ROOT / "benchmarks" / "autodiff.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


benchmark = _benchmark()


@pytest.mark.parametrize("seed, shapes", [(0, (1000, 64, 64, 2, 32, 20)),
                                          (1, (50, 8, 6, 3, 5, 6)),
                                          (2, (7, 3, 4, 5, 1, 9)),
                                          (3, (30, 2, 2, 2, 8, 1))])
def test_the_step_by_hand_gives_minis_loss_and_gradients(seed, shapes):
    model, params, ids, mask, labels = benchmark.classifier_batch(seed, shapes, shortest=1)
    loss, grads = mini.value_and_grad(model.loss)(params, ids, mask, labels)
    hand_loss, hand_grads = benchmark.by_hand_classifier_step(params, ids, mask, labels)
    np.testing.assert_allclose(hand_loss, loss, rtol=1e-12)
    assert set(hand_grads) == set(grads)
    for name, grad in grads.items():
        assert hand_grads[name].shape == grad.shape, name
        np.testing.assert_allclose(hand_grads[name], grad, rtol=1e-10, atol=1e-14, err_msg=name)


def test_the_benchmark_checks_every_column_against_mini_before_timing():
    rows = benchmark.programs()
    benchmark.check_agreement(rows)
    mini_step, _, _, by_hand = rows["(a) classifier training step"]
    assert by_hand is not None
    assert all(thunks[3] is None for name, thunks in rows.items() if "chain" in name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("g_shape, shape", [((640, 64), (64,)), ((32, 20, 2), (2,)),
                                            ((5, 4, 3), (4, 1)), ((2, 3, 4), (1, 3, 1)),
                                            ((3, 1, 4), (1, 4)), ((6,), (1,)), ((6,), ()),
                                            ((2, 3), ()), ((4, 0, 3), (3,)), ((0, 3), (3,))])
def test_sum_to_shape_gives_numpys_sums(g_shape, shape, dtype):
    g = np.random.default_rng(7).standard_normal(g_shape).astype(dtype)
    leading = tuple(range(len(g_shape) - len(shape)))
    want = np.sum(g.astype(np.float64), axis=leading)            # exact enough to judge both
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and want.shape[i] != 1)
    want = np.sum(want, axis=stretched, keepdims=True)
    got = sum_to_shape(g, shape)
    assert np.shape(got) == shape and np.asarray(got).dtype == dtype
    terms = g.size // max(want.size, 1)                           # rounding: eps per term added
    np.testing.assert_allclose(got, want, rtol=0, atol=4 * terms * np.finfo(dtype).eps)


@pytest.mark.parametrize("g", [np.arange(12).reshape(4, 3), np.ones((4, 3), bool),
                               np.arange(6.0).reshape(2, 3).tolist()])
def test_sum_to_shape_of_integers_booleans_and_lists_is_numpys_own(g):
    got = sum_to_shape(g, (3,))
    want = np.add.reduce(np.asarray(g), axis=0)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
