"""Hidden checks of lab 1 (the learning problem: softmax cross-entropy, softmax regression, manual
backprop, SGD): the grader half.

Every expected value is computed here with mini: the loss from ``mini.log_softmax``, every
gradient from ``mini.grad`` / ``mini.make_vjp`` (reverse mode through mini's VJP table), never from
a number written here.  Convention of the lab: the loss is the MEAN over the batch, so the gradient
with respect to the logits is ``(S - I_y) / B``.

The student half (:mod:`autograder.probes.lab1`) calls the student's function on the drawn arrays
and answers with arrays.  A check of one fill-in that calls others (``sgd_step`` calls four) has
those calls answered here: the probe puts, in the notebook's place of each, a function that asks
the grader (a stand-in), and the grader answers with mini's result for the arguments a correct
function passes in that check, and refuses any other (:func:`_only_for`), so a stand-in computes
nothing that another check asks for.  The backward passes get their cache as data computed here:
the input of the check, not its answer.  Every array reaches the student's code fresh, and what a
function does to the arrays it was given is part of what ``sgd_step``'s check reports.
"""
import numpy as np

import mini
from autograder.checks import Case, focused

# ---------------------------------------------------------------------------------------------
# The lab's functions written with mini: the expected values and the stand-ins
# ---------------------------------------------------------------------------------------------


def _loss(U, y):
    """Mean softmax cross-entropy, traceable by mini.grad: -(1/B) sum_b log softmax(U)_b,y_b."""
    B, C = U.shape
    return -mini.sum(mini.log_softmax(U, axis=-1) * mini.one_hot(y, C)) / B


def _loss_grad(U, y):
    return mini.grad(_loss)(U, y)


def _softmax(U):
    return mini.softmax(U, axis=-1)


def _mlp_forward(X, Ws):
    """ReLU after every layer except the last; cache {"Z": layer inputs, "A": pre-activations}."""
    Zs, As, Z = [], [], X
    for i, W in enumerate(Ws):
        Zs.append(Z)
        A = Z @ W
        As.append(A)
        Z = A if i == len(Ws) - 1 else mini.relu(A)
    return Z, {"Z": Zs, "A": As}


def _logits(X, Ws):
    return _mlp_forward(X, Ws)[0]


def _vjps(G, X, Ws):
    """The VJP of the logits with respect to every W_i, by mini.make_vjp."""
    return mini.make_vjp(lambda Ws_: _logits(X, Ws_), list(Ws))[0](G)


def _loss_grads(X, Ws, y):
    """The gradient of the mean loss with respect to every W_i, by mini.grad."""
    return mini.grad(lambda Ws_: _loss(_logits(X, Ws_), y))(list(Ws))


def _two_layer_cache(X, W1, W2):
    Z = X @ W1
    H = mini.relu(Z)
    return H @ W2, {"X": X, "Z": Z, "H": H}


# ---------------------------------------------------------------------------------------------
# Stand-ins: the grader answers a check's calls to the other fill-ins, for that check only
# ---------------------------------------------------------------------------------------------

def _only_for(function, arguments, described):
    """A stand-in that answers ``function(*arguments)`` when it is called with ``arguments``
    (arrays equal up to rounding, labels equal), and refuses anything else: the calls a correct
    function makes in this check.  ``described`` says which call it answers, for the refusal."""
    def stand_in(*args):
        if not _same(list(args), list(arguments)):
            raise ValueError(f"this check answers {described}, and no other call; it was "
                             "called with other arguments")
        return function(*arguments)
    return stand_in


def _same(got, wanted):
    """Whether ``got`` (what the student's code passed) is ``wanted`` up to rounding."""
    if isinstance(wanted, dict):
        return (isinstance(got, dict) and set(got) == set(wanted)
                and all(_same(got[key], wanted[key]) for key in wanted))
    if isinstance(wanted, (list, tuple)):
        return (isinstance(got, (list, tuple)) and len(got) == len(wanted)
                and all(_same(g, w) for g, w in zip(got, wanted)))
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return got.shape == np.shape(wanted) and np.allclose(got, wanted, rtol=1e-9, atol=1e-12)


def _loss_stand_ins(U, y, described):
    """softmax, softmax_loss and softmax_loss_grad of the logits ``U`` and labels ``y`` only."""
    return {"softmax": _only_for(_softmax, [U], f"softmax({described})"),
            "softmax_loss": _only_for(lambda *a: float(_loss(*a)), [U, y],
                                      f"softmax_loss({described}, y)"),
            "softmax_loss_grad": _only_for(_loss_grad, [U, y],
                                           f"softmax_loss_grad({described}, y)")}


# ---------------------------------------------------------------------------------------------
# Random problems
# ---------------------------------------------------------------------------------------------

def _logits_and_labels(rng, scale=3.0, offset=0.0, min_batch=2):
    B, C = int(rng.integers(min_batch, 9)), int(rng.integers(2, 7))
    U = scale * rng.standard_normal((B, C)) + offset
    y = rng.integers(0, C, size=B)
    return U, y


def _far_apart_logits(rng):
    """Logits around 1000, and a row whose labelled class is over 800 below that row's maximum:
    exp of the difference underflows to 0, so only the log-sum-exp form stays finite."""
    U, y = _logits_and_labels(rng, scale=300.0, offset=1000.0, min_batch=1)
    b = int(rng.integers(0, len(y)))
    others = np.delete(U[b], y[b])
    U[b, y[b]] = others.max() - float(rng.uniform(800, 1200))
    return U, y


def _rows_far_apart(rng):
    """Logits whose rows lie 1000 apart (row b around 1000 k_b, the k_b a shuffle of the rows'
    numbers, centred on 0): one maximum for the whole batch leaves every exponential of the lower
    rows at 0."""
    U, y = _logits_and_labels(rng)
    levels = rng.permutation(len(y)) - len(y) // 2
    return U + 1000.0 * levels[:, None], y


def _weights(rng, sizes):
    return [rng.standard_normal((m, n)) / np.sqrt(m) for m, n in zip(sizes, sizes[1:])]


def _layer_sizes(rng, layers):
    return [int(rng.integers(1, 6))] + [int(rng.integers(2, 7)) for _ in range(layers)]


def _shape(*arrays):
    return " x ".join(str(np.shape(a)) for a in arrays)


# ---------------------------------------------------------------------------------------------
# softmax and softmax_loss
# ---------------------------------------------------------------------------------------------

ONE_MAXIMUM_PER_ROW = ("subtract each row's OWN maximum (a max along axis 1): one maximum for the "
                       "whole batch leaves every exp(U[b, j] - m) of a row 1000 below it at 0, so "
                       "that row's softmax is 0 / 0 = nan and its log-sum-exp log(0) = -inf")


def _softmax_loss_case(U, y, what, hint):
    return Case(what=what, probe="softmax_and_loss", inputs={"U": U, "y": y},
                expected=lambda: {"softmax": _softmax(U), "loss": _loss(U, y)},
                rtol=1e-6, atol=1e-9, hint=hint)


def check_softmax_loss(rng):
    U, y = _logits_and_labels(rng)
    return _softmax_loss_case(
        U, y, f"softmax(U) and softmax_loss(U, y) with U of shape {U.shape}",
        "softmax(U)[b] = exp(U[b]) / sum_j exp(U[b, j]) (each row sums to 1); softmax_loss is ONE "
        "number, the mean over the B rows of log(sum_j exp(U[b, j])) - U[b, y[b]]")


def check_softmax_loss_large_logits(rng):
    U, y = _far_apart_logits(rng)
    return _softmax_loss_case(
        U, y, f"softmax(U) and softmax_loss(U, y) with large logits (around 1000, some 800 or "
        f"more apart), U of shape {U.shape}",
        "exp(1000) overflows and exp(-1000) underflows to 0, so log(softmax) can be log(0): "
        "subtract each row's maximum m_b first and use log(sum_j exp(U[b, j])) = m_b + "
        "log(sum_j exp(U[b, j] - m_b))")


def check_softmax_loss_rows_far_apart(rng):
    U, y = _rows_far_apart(rng)
    return _softmax_loss_case(
        U, y, f"softmax(U) and softmax_loss(U, y) with U of shape {U.shape} whose rows lie 1000 "
        "apart (one row around 0, the next around 1000 or -1000, ...)", ONE_MAXIMUM_PER_ROW)


# ---------------------------------------------------------------------------------------------
# softmax_loss_grad
# ---------------------------------------------------------------------------------------------

LOSS_GRAD_HINT = ("the gradient of the mean loss with respect to U is (S - I_y) / B: S = "
                  "softmax(U), I_y has a 1 in column y[b] of row b, and B = U.shape[0] because the "
                  "loss averages over the batch")


def _loss_grad_case(U, y, what, hint=LOSS_GRAD_HINT):
    return Case(what=what, probe="loss_grad", inputs={"U": U, "y": y},
                stand_ins={"softmax": _only_for(_softmax, [U], "softmax(U) for this check's U")},
                expected=lambda: _loss_grad(U, y), rtol=1e-6, atol=1e-10, hint=hint)


def check_softmax_loss_grad(rng):
    U, y = _logits_and_labels(rng)
    return _loss_grad_case(U, y, f"softmax_loss_grad(U, y) with U of shape {U.shape}, "
                                 "compared with mini.grad of the mean cross-entropy")


def check_softmax_loss_grad_large_logits(rng):
    U, y = _far_apart_logits(rng)
    return _loss_grad_case(U, y, f"softmax_loss_grad(U, y) with large logits (around 1000, some "
                                 f"800 or more apart), U of shape {U.shape}",
                           LOSS_GRAD_HINT + "; take S from softmax, which stays finite for large "
                           "logits: exp(1000) itself overflows to inf, and inf / inf is nan")


def check_softmax_loss_grad_rows_far_apart(rng):
    U, y = _rows_far_apart(rng)
    return _loss_grad_case(U, y, f"softmax_loss_grad(U, y) with U of shape {U.shape} whose rows "
                                 "lie 1000 apart (one row around 0, the next around 1000 or -1000, "
                                 "...)", LOSS_GRAD_HINT + "; take S from softmax, and in softmax "
                           + ONE_MAXIMUM_PER_ROW)


# ---------------------------------------------------------------------------------------------
# softmax_regression
# ---------------------------------------------------------------------------------------------

def _softmax_regression_case(rng, min_batch):
    B, d, C = int(rng.integers(min_batch, 9)), int(rng.integers(1, 6)), int(rng.integers(2, 6))
    X, W = rng.standard_normal((B, d)), rng.standard_normal((d, C))
    y = rng.integers(0, C, size=B)
    loss = lambda W_: _loss(X @ W_, y)
    return Case(what=f"softmax_regression(X, y, W) with X of shape {X.shape} and W of shape "
                     f"{W.shape}, compared with mini.grad of the loss",
                probe="softmax_regression_result", inputs={"X": X, "y": y, "W": W},
                stand_ins=_loss_stand_ins(X @ W, y, "U = X @ W"),
                expected=lambda: {"loss": float(loss(W)), "grad_W": mini.grad(loss)(W)},
                rtol=1e-6, atol=1e-10,
                hint="the loss is softmax_loss(X @ W, y); its gradient has W's shape (d, C), and "
                     "G_U = softmax_loss_grad(X @ W, y) holds the mean's 1/B already: redo steps "
                     "1-3 of section 4 on a batch of two examples")


def check_softmax_regression(rng):
    return _softmax_regression_case(rng, min_batch=2)


def check_softmax_regression_one_example(rng):
    return _softmax_regression_case(rng, min_batch=1)


# ---------------------------------------------------------------------------------------------
# two_layer_forward and two_layer_backward
# ---------------------------------------------------------------------------------------------

def _two_layer_problem(rng):
    d, h, C = _layer_sizes(rng, 2)
    X = rng.standard_normal((int(rng.integers(2, 9)), d))
    W1, W2 = _weights(rng, [d, h, C])
    return X, W1, W2, rng.integers(0, C, size=len(X))


def check_two_layer_forward(rng):
    X, W1, W2, _ = _two_layer_problem(rng)

    def expected():
        U, cache = _two_layer_cache(X, W1, W2)
        return {"U": U, **cache}
    return Case(what=f"two_layer_forward(X, W1, W2) with X, W1, W2 of shapes {_shape(X, W1, W2)}",
                probe="two_layer_forward_result", inputs={"X": X, "W1": W1, "W2": W2},
                expected=expected,
                hint="Z = X @ W1, H = relu(Z) = max(Z, 0), U = H @ W2; return (U, cache) with "
                     "cache = {'X': X, 'Z': Z, 'H': H}")


def _two_layer_backward_case(rng, real_loss):
    X, W1, W2, y = _two_layer_problem(rng)
    U, cache = _two_layer_cache(X, W1, W2)
    G = _loss_grad(U, y) if real_loss else rng.standard_normal(U.shape)

    def expected():
        if real_loss:   # the gradients of the whole loss, straight from mini.grad
            loss = lambda W1_, W2_: _loss(mini.relu(X @ W1_) @ W2_, y)
            return [mini.grad(loss, 0)(W1, W2), mini.grad(loss, 1)(W1, W2)]
        forward = lambda W1_, W2_: mini.relu(X @ W1_) @ W2_
        return [mini.make_vjp(forward, W1, W2, argnum=0)[0](G),
                mini.make_vjp(forward, W1, W2, argnum=1)[0](G)]

    what = (f"two_layer_backward(G_U, W2, cache) with X, W1, W2 of shapes {_shape(X, W1, W2)}, "
            + ("G_U = softmax_loss_grad(U, y), compared with mini.grad of the loss"
               if real_loss else "a random upstream gradient G_U, compared with mini's VJPs"))
    return Case(what=what, probe="two_layer_backward_result",
                inputs={"G_U": G, "W2": W2, "cache": cache}, expected=expected,
                rtol=1e-6, atol=1e-10,
                hint="grad_W2 = H^T @ G_U and grad_W1 = X^T @ ((G_U @ W2^T) * relu'(Z)), where "
                     "relu'(Z) is 1 where Z > 0 and 0 elsewhere; X, Z, H come from the cache")


def check_two_layer_backward(rng):
    return _two_layer_backward_case(rng, real_loss=False)


def check_two_layer_backward_of_the_loss(rng):
    return _two_layer_backward_case(rng, real_loss=True)


# ---------------------------------------------------------------------------------------------
# mlp_forward and mlp_backward
# ---------------------------------------------------------------------------------------------

def _mlp_problem(rng, min_layers, max_layers):
    L = int(rng.integers(min_layers, max_layers + 1))
    sizes = _layer_sizes(rng, L)
    B = int(rng.integers(3, 9))
    return rng.standard_normal((B, sizes[0])), _weights(rng, sizes), rng.integers(0, sizes[-1], B)


def _mlp_forward_case(rng, min_layers, max_layers):
    X, Ws, _ = _mlp_problem(rng, min_layers, max_layers)

    def expected():
        logits, cache = _mlp_forward(X, Ws)
        return {"logits": logits, **cache}
    return Case(what=f"mlp_forward(X, Ws) with {len(Ws)} layer(s), X of shape {X.shape} and "
                     f"weights of shapes {_shape(*Ws)}",
                probe="mlp_forward_result", inputs={"X": X, "Ws": Ws}, expected=expected,
                hint="A_i = Z_i @ W_i, Z_1 = X, Z_{i+1} = relu(A_i) for every layer but the last, "
                     "whose A_L is the logits (no ReLU); cache['Z'] = [Z_1, ..., Z_L] (the "
                     "inputs of the L layers) and cache['A'] = [A_1, ..., A_L]")


def check_mlp_forward(rng):
    return _mlp_forward_case(rng, 2, 4)


def check_mlp_forward_one_layer(rng):
    return _mlp_forward_case(rng, 1, 1)


def _mlp_backward_case(rng, min_layers, max_layers, real_loss):
    X, Ws, y = _mlp_problem(rng, min_layers, max_layers)
    logits, cache = _mlp_forward(X, Ws)
    G = _loss_grad(logits, y) if real_loss else rng.standard_normal(logits.shape)

    what = (f"mlp_backward(G, Ws, cache) with {len(Ws)} layer(s), X of shape {X.shape}, weights "
            f"of shapes {_shape(*Ws)}, "
            + ("G = softmax_loss_grad(logits, y), compared with mini.grad of the loss"
               if real_loss else "a random upstream gradient G, compared with mini's VJPs"))
    return Case(what=what, probe="mlp_backward_result", inputs={"G": G, "Ws": Ws, "cache": cache},
                expected=lambda: _loss_grads(X, Ws, y) if real_loss else _vjps(G, X, Ws),
                rtol=1e-6, atol=1e-10,
                hint="go from the last layer to the first: D = G * relu'(A_i) (D = G for the last "
                     "layer, which has no ReLU), grad W_i = Z_i^T @ D, then G = D @ W_i^T for the "
                     "layer below; return the gradients in the order of Ws")


def check_mlp_backward(rng):
    return _mlp_backward_case(rng, 2, 4, real_loss=False)


def check_mlp_backward_of_the_loss(rng):
    return _mlp_backward_case(rng, 1, 4, real_loss=True)


def check_mlp_backward_of_the_loss_one_layer(rng):
    return _mlp_backward_case(rng, 1, 1, real_loss=True)


# ---------------------------------------------------------------------------------------------
# sgd_step
# ---------------------------------------------------------------------------------------------

GIVEN, LEFT_AS_THEY_WERE = "the weights it was given", "left as they were"
SGD_HINT = ("one forward pass, mlp_forward(X, Ws) on the weights it was given, and the loss "
            "there (BEFORE the step) with softmax_loss; G = softmax_loss_grad(logits, y), grads = "
            "mlp_backward(G, Ws, cache), then NEW arrays W_i - lr * grad W_i for every layer: "
            "W -= lr * g, or Ws[i] = ..., changes the weights the caller passed in")


def _reference_step(Ws, X, y, lr):
    grads = _loss_grads(X, Ws, y)
    return [W - lr * g for W, g in zip(Ws, grads)], float(_loss(_logits(X, Ws), y))


def _step_stand_ins(X, Ws, y):
    """The calls sgd_step(Ws, X, y, lr) makes, answered for this X, Ws and y only."""
    logits, cache = _mlp_forward(X, Ws)
    G = _loss_grad(logits, y)
    return {"mlp_forward": _only_for(_mlp_forward, [X, Ws], "mlp_forward(X, Ws) with the X and Ws "
                                                            "sgd_step was given"),
            **_loss_stand_ins(logits, y, "the logits mlp_forward returned"),
            "mlp_backward": _only_for(lambda G_, Ws_, _cache: _vjps(G_, X, Ws_), [G, Ws, cache],
                                      "mlp_backward(softmax_loss_grad(logits, y), Ws, the cache "
                                      "mlp_forward returned)")}


def _weights_report(Ws):
    """What ``sgd_step`` did to the weights it was given, in words, from what the probe saw."""
    def report(observed):
        after = observed[GIVEN]
        if not isinstance(after, list) or len(after) != len(Ws):
            changed = "the list itself"
        else:
            changed = ", ".join(f"Ws[{i}]" for i, (a, W) in enumerate(zip(after, Ws))
                                if not np.array_equal(np.asarray(a, dtype=np.float64), W))
        return {**observed, GIVEN: f"changed by the call ({changed})" if changed
                else LEFT_AS_THEY_WERE}
    return report


def check_sgd_step(rng):
    X, Ws, y = _mlp_problem(rng, 1, 3)
    lr = float(rng.uniform(0.05, 0.5))

    def expected():
        new_Ws, loss = _reference_step(Ws, X, y, lr)
        return {"loss": loss, "new_Ws": new_Ws, GIVEN: LEFT_AS_THEY_WERE}
    return Case(what=f"sgd_step(Ws, X, y, lr={lr:.3g}) with {len(Ws)} layer(s), X of shape "
                     f"{X.shape}, weights of shapes {_shape(*Ws)}",
                probe="sgd_step_result", inputs={"Ws": Ws, "X": X, "y": y, "lr": lr},
                stand_ins=_step_stand_ins(X, Ws, y), interpret=_weights_report(Ws),
                expected=expected, rtol=1e-6, atol=1e-10, hint=SGD_HINT)


check_sgd_step_values = focused(check_sgd_step, lambda key: key != GIVEN, "check_sgd_step_values")
check_sgd_step_leaves_the_weights = focused(check_sgd_step, lambda key: key == GIVEN,
                                            "check_sgd_step_leaves_the_weights")


def _any_step_stand_ins(X, shapes, y):
    """The calls sgd_step makes on this X and y for weights of these shapes, which the student's
    own steps choose.  The batch is larger than any other check's, so no answer fits another."""
    def weights(Ws):
        if [np.shape(W) for W in Ws] != shapes:
            raise ValueError(f"this check answers for weights of shapes {shapes} only")
        return [np.asarray(W, dtype=np.float64) for W in Ws]

    def forward(X_, Ws):
        if not _same(X_, X):
            raise ValueError("this check answers mlp_forward for the X sgd_step was given only")
        return _mlp_forward(X, weights(Ws))

    def logits(U, y_):
        if not (_same(y_, y) and np.shape(U) == (len(y), shapes[-1][1])):
            raise ValueError("this check answers for logits of this batch and its labels y only")
        return np.asarray(U, dtype=np.float64)

    def backward(G, Ws, cache):
        Ws = weights(Ws)
        if not _same(cache, _mlp_forward(X, Ws)[1]):
            raise ValueError("this check answers mlp_backward with the cache mlp_forward returned "
                             "for the same Ws only")
        return _vjps(logits(G, y), X, Ws)

    return {"mlp_forward": forward, "softmax": lambda U: _softmax(logits(U, y)),
            "softmax_loss": lambda U, y_: float(_loss(logits(U, y_), y)),
            "softmax_loss_grad": lambda U, y_: _loss_grad(logits(U, y_), y),
            "mlp_backward": backward}


def check_sgd_loss_goes_down(rng):
    sizes = [int(rng.integers(2, 6)), int(rng.integers(4, 8)), int(rng.integers(2, 5))]
    X = rng.standard_normal((int(rng.integers(16, 33)), sizes[0]))
    Ws = _weights(rng, sizes)
    y = rng.integers(0, sizes[-1], size=len(X))
    steps, lr = 6, 0.1

    def expected():
        losses, current = [], Ws
        for _ in range(steps):
            current, loss = _reference_step(current, X, y, lr)
            losses.append(loss)
        return losses

    return Case(what=f"{steps} steps of sgd_step(Ws, X, y, lr={lr}) on a random problem (X of "
                     f"shape {X.shape}, weights of shapes {_shape(*Ws)}): the loss before each "
                     "step, which should go down",
                probe="sgd_losses", inputs={"Ws": Ws, "X": X, "y": y, "lr": lr, "steps": steps},
                stand_ins=_any_step_stand_ins(X, [W.shape for W in Ws], y),
                expected=expected, rtol=1e-6, atol=1e-10,
                hint="a step moves each W_i by MINUS lr times its gradient (a plus sign climbs "
                     "the loss), returns NEW weights for the next step to start from, and the "
                     "loss it returns is the one at the weights it was given")


CHECKS = {
    "softmax_loss": {
        "softmax and the loss of a batch": (2, [check_softmax_loss]),
        "no overflow: large logits, rows far apart": (1, [check_softmax_loss_large_logits,
                                                          check_softmax_loss_rows_far_apart])},
    "softmax_loss_grad": {
        "the gradient of a batch": (3, [check_softmax_loss_grad]),
        "no overflow for large logits": (2, [check_softmax_loss_grad_large_logits,
                                             check_softmax_loss_grad_rows_far_apart])},
    "softmax_regression": {
        "the gradient of a batch": (2, [check_softmax_regression]),
        "any batch size, one example included": (1, [check_softmax_regression_one_example])},
    "two_layer_forward": {"the network's output and cache": (1, [check_two_layer_forward])},
    "two_layer_backward": {
        "the gradients for any upstream gradient": (2, [check_two_layer_backward]),
        "the gradients of the loss": (1, [check_two_layer_backward_of_the_loss])},
    "mlp_forward": {
        "a network of several layers": (3, [check_mlp_forward]),
        "a network of one layer": (2, [check_mlp_forward_one_layer])},
    "mlp_backward": {
        "the gradients for any upstream gradient": (2, [check_mlp_backward]),
        "the gradients of the loss": (1, [check_mlp_backward_of_the_loss,
                                          check_mlp_backward_of_the_loss_one_layer])},
    "sgd_step": {
        "one step's loss and new weights": (2, [check_sgd_step_values]),
        "the weights it was given left as they were": (1, [check_sgd_step_leaves_the_weights]),
        "training: the loss goes down step after step": (1, [check_sgd_loss_goes_down])},
}
