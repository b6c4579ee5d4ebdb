"""Student half of lab 1's checks: the student's function called on the arrays of the task, and
what it returned (arrays and numbers) sent back.

No probe here computes a softmax, a loss, a forward or a backward pass.  A check that needs the
lab's other fill-ins (``sgd_step`` calls four of them) puts, in the notebook's place of each, a
function that asks the grader (:func:`_asking`); the cache a backward pass reads comes in the
task, as arrays the grader computed.
"""
import numpy as np

from autograder.probes import probe

LOSS_FUNCTIONS = ("softmax", "softmax_loss", "softmax_loss_grad")
STEP_FUNCTIONS = ("mlp_forward", *LOSS_FUNCTIONS, "mlp_backward")
"""The notebook's functions that softmax_regression and sgd_step may call."""


def _asking(grader, names):
    """``{name: function}``: each notebook function ``name`` answered by the grader's stand-in."""
    def asking(name):
        def stand_in(*args):
            return grader.stand_in(name, *args)
        stand_in.__name__ = name
        return stand_in
    return {name: asking(name) for name in names}


def _pair(result, function, what):
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"{function} should return a pair ({what}), got {type(result).__name__}")
    return result


def _numbers(value, what):
    """``value`` as an array of float64 numbers, or a TypeError saying what it was."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{what} should be numbers, got {type(value).__name__} "
                        f"{value!r:.80}") from None


def _arrays(values, function, count, what):
    if not isinstance(values, (list, tuple)) or len(values) != count:
        raise TypeError(f"{function} should return a list of {count} {what}, got "
                        f"{type(values).__name__}" + (f" of {len(values)}" if isinstance(
                            values, (list, tuple)) else ""))
    return [_numbers(value, f"{function}'s {what}") for value in values]


def _entries(cache, keys, function):
    """The cache's entries, or an error saying what the cache should be."""
    if not isinstance(cache, dict) or not set(keys) <= set(cache):
        got = sorted(map(str, cache)) if isinstance(cache, dict) else type(cache).__name__
        raise TypeError(f"the cache {function} returns should be a dict with keys "
                        f"{list(keys)}, got {got}")
    return {key: cache[key] for key in keys}


# ---------------------------------------------------------------------------------------------
# The loss and its gradient
# ---------------------------------------------------------------------------------------------

@probe
def softmax_and_loss(student, grader, U, y):
    """softmax(U) and softmax_loss(U, y), each given its own copy of the arrays."""
    return {"softmax": _numbers(student.softmax(U.copy()), "softmax(U)"),
            "loss": _numbers(student.softmax_loss(U.copy(), y.copy()), "softmax_loss(U, y)")}


@probe
def loss_grad(student, grader, U, y):
    """softmax_loss_grad(U, y), its softmax answered by the grader."""
    with student.using(**_asking(grader, ["softmax"])):
        return _numbers(student.softmax_loss_grad(U, y), "softmax_loss_grad(U, y)")


@probe
def softmax_regression_result(student, grader, X, y, W):
    """softmax_regression(X, y, W), the loss functions it calls answered by the grader."""
    with student.using(**_asking(grader, LOSS_FUNCTIONS)):
        loss, grad_W = _pair(student.softmax_regression(X, y, W), "softmax_regression",
                             "loss, grad_W")
    return {"loss": float(_numbers(loss, "softmax_regression's loss")),
            "grad_W": _numbers(grad_W, "softmax_regression's grad_W")}


# ---------------------------------------------------------------------------------------------
# Forward and backward passes
# ---------------------------------------------------------------------------------------------

@probe
def two_layer_forward_result(student, grader, X, W1, W2):
    """two_layer_forward(X, W1, W2): the logits and the cache's X, Z and H."""
    U, cache = _pair(student.two_layer_forward(X, W1, W2), "two_layer_forward", "U, cache")
    entries = _entries(cache, ("X", "Z", "H"), "two_layer_forward")
    return {"U": _numbers(U, "two_layer_forward's U"),
            **{key: _numbers(value, f"cache[{key!r}]") for key, value in entries.items()}}


@probe
def two_layer_backward_result(student, grader, G_U, W2, cache):
    """two_layer_backward(G_U, W2, cache) with the cache the grader computed."""
    result = _pair(student.two_layer_backward(G_U, W2, cache), "two_layer_backward",
                   "grad_W1, grad_W2")
    return _arrays(result, "two_layer_backward", 2, "gradients")


@probe
def mlp_forward_result(student, grader, X, Ws):
    """mlp_forward(X, Ws): the logits and the cache's lists Z and A."""
    logits, cache = _pair(student.mlp_forward(X, Ws), "mlp_forward", "logits, cache")
    entries = _entries(cache, ("Z", "A"), "mlp_forward")
    return {"logits": _numbers(logits, "mlp_forward's logits"),
            **{key: [_numbers(value, f"cache[{key!r}]'s entries") for value in values]
               if isinstance(values, (list, tuple)) else repr(values)[:80]
               for key, values in entries.items()}}


@probe
def mlp_backward_result(student, grader, G, Ws, cache):
    """mlp_backward(G, Ws, cache) with the cache the grader computed."""
    return _arrays(student.mlp_backward(G, Ws, cache), "mlp_backward", len(Ws), "gradients")


# ---------------------------------------------------------------------------------------------
# sgd_step
# ---------------------------------------------------------------------------------------------

def _step(student, Ws, X, y, lr):
    new_Ws, loss = _pair(student.sgd_step(Ws, X, y, lr), "sgd_step", "new_Ws, loss")
    return (_arrays(new_Ws, "sgd_step", len(Ws), "new weight matrices first"),
            float(_numbers(loss, "sgd_step's loss")))


@probe
def sgd_step_result(student, grader, Ws, X, y, lr):
    """One sgd_step, the functions it calls answered by the grader: the new weights, the loss,
    and the weights it was given as they are after the call."""
    with student.using(**_asking(grader, STEP_FUNCTIONS)):
        new_Ws, loss = _step(student, Ws, X, y, lr)
    return {"loss": loss, "new_Ws": new_Ws, "the weights it was given":
            [_numbers(W, "the weights sgd_step was given") for W in Ws]}


@probe
def sgd_losses(student, grader, Ws, X, y, lr, steps):
    """The losses ``steps`` calls of sgd_step returned, each from the weights the one before
    returned."""
    losses = []
    with student.using(**_asking(grader, STEP_FUNCTIONS)):
        for _ in range(steps):
            Ws, loss = _step(student, Ws, X, y, lr)
            losses.append(loss)
    return losses
