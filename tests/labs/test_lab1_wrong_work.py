"""Lab 1's checks catch the mistakes students make, and say which.

Each wrong version below replaces one fill-in's answer in the solution notebook; a notebook holds
several of them, in fill-ins whose checks do not call each other's (a check answers the calls to the
other fill-ins itself), so each costs a share of its own test cell's points (the behaviours it gets
wrong, all of them when a visible test catches it) and nothing else. Four notebooks give every
fill-in at least three wrong versions; the third holds mostly mistakes the visible tests let through
(logits clipped instead of shifted, X transposed in the cache, a ReLU on the input, one example's
outer product, a hard-coded learning rate, ...). Two of the new mistakes once scored full marks:
a softmax_loss_grad with its own softmax and one maximum for the whole batch (the third), an
mlp_backward wrong for one layer only (the fourth). The pytest path grades all four notebooks,
the nbgrader path the first and the third; the hidden checks are also run directly on two other mistakes that once scored full marks
(one maximum for the whole batch in softmax_loss, weights updated in place), so that they are
caught even where a visible test would not be.
"""
import re

import nbformat
import numpy as np
import pytest

from autograder.checks import lab1
from autograder.notebooks import source_notebook

from support.wrong_work import (VISIBLE, loses_its_share_on_the_nbgrader_path,
                                loses_its_share_on_the_pytest_path, verdict)

LAB = "lab1_learning"

ONE_MAXIMUM_LOSS = """
    m = np.max(U)                       # one maximum for the whole batch
    log_sum_exp = m + np.log(np.sum(np.exp(U - m), axis=1))
    return float(np.mean(log_sum_exp - U[np.arange(U.shape[0]), y]))
"""
ONE_MAXIMUM_SOFTMAX = """
    E = np.exp(U - np.max(U))           # one maximum for the whole batch
    return E / np.sum(E, axis=1, keepdims=True)
"""
UPDATED_IN_PLACE = """
    logits, cache = mlp_forward(X, Ws)
    loss = softmax_loss(logits, y)
    grads = mlp_backward(softmax_loss_grad(logits, y), Ws, cache)
    for W, g in zip(Ws, grads):
        W -= lr * g                     # the caller's arrays
    return Ws, loss
"""

# fill-in -> (its solution blocks, None where the solution's stays; a phrase of the message; the
# behaviours it gets wrong)
WRONG_ONE = {
    "softmax_loss": ([None, ONE_MAXIMUM_LOSS], "not one maximum for the whole batch", VISIBLE),
    "softmax_regression": (["""
    U = X @ W
    return softmax_loss(U, y), softmax_loss_grad(U, y).T @ X      # transposed: (C, d)
"""], "grad_W should have the shape of W, (2, 3), got (3, 2)", VISIBLE),
    "two_layer_backward": (["""
    X, H = cache["X"], cache["H"]
    return X.T @ (G_U @ W2.T), H.T @ G_U                           # no relu'(Z)
"""], "grad_W1 should be [[-1, 0], [-2, 0]]", VISIBLE),
    "mlp_backward": (["""
    grads = []
    for i in reversed(range(len(Ws))):
        D = G if i == len(Ws) - 1 else G * (cache["A"][i] > 0)
        grads.append(cache["Z"][i].T @ D)                          # last layer first
        G = D @ Ws[i].T
    return grads
"""], "the gradients are in reverse order", VISIBLE),
    "sgd_step": (["""
    logits, cache = mlp_forward(X, Ws)
    grads = mlp_backward(softmax_loss_grad(logits, y), Ws, cache)
    new_Ws = [W - lr * g for W, g in zip(Ws, grads)]
    return new_Ws, softmax_loss(mlp_forward(X, new_Ws)[0], y)      # the loss AFTER the step
"""], "the loss it returns (measured before the step)", VISIBLE),
}
WRONG_TWO = {
    "softmax_loss_grad": (["""
    E = np.exp(U)                                                  # overflows for large logits
    G = E / np.sum(E, axis=1, keepdims=True)
    G[np.arange(U.shape[0]), y] -= 1.0
    return G / U.shape[0]
"""], "exp(1000) itself overflows to inf",
                          ["no overflow for large logits"]),
    "two_layer_forward": (["""
    Z = np.maximum(X @ W1, 0)                                      # Z after the ReLU
    return Z @ W2, {"X": X, "Z": Z, "H": Z}
"""], "cache['Z'] should be X @ W1 = [[3, -5]] (before the ReLU)",
                          VISIBLE),
    "mlp_forward": (["""
    Zs, As, Z = [], [], X
    for W in Ws:
        Zs.append(Z)
        As.append(Z @ W)
        Z = np.maximum(As[-1], 0)                                  # a ReLU on the logits too
    return Z, {"Z": Zs, "A": As}
"""], "with NO ReLU", VISIBLE),
    "sgd_step": ([UPDATED_IN_PLACE], "sgd_step changed the weights it was given",
                 VISIBLE),
}

WRONG_THREE = {
    "softmax_loss": (["""
    E = np.exp(np.clip(U, -500, 500))                              # clipped, not shifted
    return E / np.sum(E, axis=1, keepdims=True)
""", None], "softmax(U) and softmax_loss(U, y) with large logits",
                     ["no overflow: large logits, rows far apart"]),
    "softmax_loss_grad": (["""
    E = np.exp(U - np.max(U))                                      # one maximum for the batch
    G = E / np.sum(E, axis=1, keepdims=True)
    G[np.arange(U.shape[0]), y] -= 1.0
    return G / U.shape[0]
"""], "whose rows lie 1000 apart", ["no overflow for large logits"]),
    "softmax_regression": (["""
    U = X @ W
    return softmax_loss(U, y), X.T @ softmax_loss_grad(U, y) / len(y)   # averaged twice
"""], "grad_W disagrees with central differences", VISIBLE),
    "two_layer_forward": (["""
    Z = X @ W1
    H = np.maximum(Z, 0)
    return H @ W2, {"X": X.T, "Z": Z, "H": H}                      # X.T, ready for X.T @ G_Z
"""], "the result['X'] has shape", ["the network's output and cache"]),
    "two_layer_backward": (["""
    X, Z, H = cache["X"], cache["Z"], cache["H"]
    B = X.shape[0]
    G_Z = (G_U @ W2.T) * (Z > 0)
    return X.T @ G_Z / B, H.T @ G_U / B                            # G_U is a mean already
"""], "grad_W2 disagrees with central differences", VISIBLE),
    "mlp_forward": (["""
    Zs, As, Z = [], [], X
    for W in Ws:
        Z = np.maximum(Z, 0)                                       # the input X too
        Zs.append(Z)
        Z = Z @ W
        As.append(Z)
    return Z, {"Z": Zs, "A": As}
"""], "Z_1 = X", ["a network of several layers", "a network of one layer"]),
    "mlp_backward": (["""
    grads = [None] * len(Ws)
    for i in reversed(range(len(Ws))):
        D = G if i == len(Ws) - 1 else G * (cache["A"][i] > 0)
        grads[i] = np.outer(cache["Z"][i], D)                      # one example's z delta^T
        G = D @ Ws[i].T
    return grads
"""], "grad W_i = Z_i^T @ D", ["the gradients for any upstream gradient",
                                "the gradients of the loss"]),
    "sgd_step": (["""
    logits, cache = mlp_forward(X, Ws)
    loss = softmax_loss(logits, y)
    grads = mlp_backward(softmax_loss_grad(logits, y), Ws, cache)
    return [W - 0.1 * g for W, g in zip(Ws, grads)], loss          # the visible test's lr
"""], "the result['new_Ws'] is wrong", ["one step's loss and new weights"]),
}
WRONG_FOUR = {
    "softmax_loss": ([None, """
    S = softmax(U)
    return float(np.mean(-np.log(S[np.arange(U.shape[0]), y])))   # log of a probability
"""], "use the log-sum-exp form", VISIBLE),
    "softmax_loss_grad": (["""
    G = softmax(U)
    G[np.arange(U.shape[0]), y] -= 1.0
    return G                                                       # not divided by B
"""], "half the gradient per row", VISIBLE),
    "softmax_regression": (["""
    U = X @ W
    return softmax_loss(softmax(U), y), X.T @ softmax_loss_grad(softmax(U), y)   # probabilities
"""], "softmax_regression should pass on the logits X @ W", VISIBLE),
    "two_layer_forward": (["""
    Z = X @ W1
    H = np.maximum(Z, 0)
    return Z @ W2, {"X": X, "Z": Z, "H": H}                        # Z, not H, into W2
"""], "worked example: U should be [[3, 6]]", VISIBLE),
    "two_layer_backward": (["""
    X, Z = cache["X"], cache["Z"]
    G_Z = (G_U @ W2.T) * (Z > 0)
    return X.T @ G_Z, Z.T @ G_U                                    # Z before the ReLU, not H
"""], "grad_W2 should be [[3, -3], [0, 0]]", VISIBLE),
    "mlp_forward": (["""
    Zs, As, Z = [], [], X
    for i, W in enumerate(Ws):
        A = Z @ W
        As.append(A)
        Z = A if i == len(Ws) - 1 else np.maximum(A, 0)
        Zs.append(Z)                                               # each layer's output
    return Z, {"Z": Zs, "A": As}
"""], "cache['Z'][0] should be the input X", VISIBLE),
    "mlp_backward": (["""
    grads = [None] * len(Ws)
    for i in range(len(Ws) - 1, 0, -1):
        D = G if i == len(Ws) - 1 else G * (cache["A"][i] > 0)
        grads[i] = cache["Z"][i].T @ D
        G = D @ Ws[i].T
    grads[0] = cache["Z"][0].T @ (G * (cache["A"][0] > 0))        # the first layer: a ReLU
    return grads
"""], "with 1 layer(s)", ["the gradients of the loss"]),
}


def _solution_with(wrong):
    """The solution notebook with the solution blocks of ``wrong``'s fill-ins replaced."""
    nb = nbformat.read(source_notebook(LAB), as_version=4)
    for cell in nb.cells:
        blocks = wrong.get(cell.metadata.get("nbgrader", {}).get("grade_id"), (None,))[0]
        if blocks:
            cell.source = _replaced(cell.source, blocks)
    return nb


def _replaced(source, blocks):
    parts = re.split(r"(?<=### BEGIN SOLUTION\n)(.*?)(?=\s*### END SOLUTION)", source, flags=re.S)
    assert len(parts) == 2 * len(blocks) + 1, "one replacement per solution block"
    for n, block in enumerate(blocks):
        if block is not None:
            parts[2 * n + 1] = block.strip("\n")
    return "".join(parts)


@pytest.mark.parametrize("wrong", [WRONG_ONE, WRONG_TWO, WRONG_THREE, WRONG_FOUR],
                         ids=["one", "two", "three", "four"])
def test_each_mistake_costs_its_behaviours_share_with_a_message_naming_it(wrong, tmp_path):
    loses_its_share_on_the_pytest_path(LAB, wrong, _solution_with(wrong), tmp_path)


@pytest.mark.parametrize("wrong", [WRONG_ONE, WRONG_THREE], ids=["one", "three"])
def test_the_nbgrader_path_takes_the_same_points_with_the_same_messages(wrong, tmp_path,
                                                                        monkeypatch):
    loses_its_share_on_the_nbgrader_path(LAB, wrong, _solution_with(wrong), tmp_path, monkeypatch)


def _namespace(wrong):
    """The notebook's fill-in code cells (not its written answers), with ``wrong``'s answers, run
    as a self-learner runs them."""
    namespace = {"__name__": "__main__", "np": np}
    for cell in _solution_with(wrong).cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            exec(cell.source, namespace)
    return namespace


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning",
                            "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("blocks", [[None, ONE_MAXIMUM_LOSS], [ONE_MAXIMUM_SOFTMAX, None]],
                         ids=["softmax_loss", "softmax"])
def test_the_hidden_checks_catch_one_maximum_for_the_whole_batch(blocks):
    namespace = _namespace({"softmax_loss": (blocks, "", [])})
    with pytest.raises(AssertionError, match=r"whose rows lie 1000 apart.*\n.*OWN maximum"):
        verdict(LAB, "softmax_loss", lab1.check_softmax_loss_rows_far_apart, namespace)


def test_the_hidden_checks_catch_weights_updated_in_place():
    namespace = _namespace({"sgd_step": ([UPDATED_IN_PLACE], "", [])})
    with pytest.raises(AssertionError, match=r"should be 'left as they were', got str 'changed "
                                             r"by the call \(Ws\[0\]"):
        verdict(LAB, "sgd_step", lab1.check_sgd_step_leaves_the_weights, namespace)
