"""Hidden checks of lab 1 (the learning problem: softmax cross-entropy, softmax regression, manual
backprop, SGD).

Every expected value comes from mini at grading time: the loss from ``mini.log_softmax``, every
gradient from ``mini.grad`` / ``mini.make_vjp`` (reverse mode through mini's VJP table), never from
a number written here.  Convention of the lab: the loss is the MEAN over the batch, so the gradient
with respect to the logits is ``(S - I_y) / B``.

A check of one fill-in gives the student's function plain-numpy versions of the fill-ins it calls
(``student.using(**STAND_INS)``), and the backward passes receive their cache from the plain-numpy
forward, so one early mistake costs the points of that fill-in only.  The call side (which runs in
the grading worker) uses numpy only; mini is used on the expected side.  Inputs are copied before they reach
student code, so a function that writes into its arguments cannot change what is expected.
"""
import numpy as np

import mini
from autograder.checks import Case

# Switched off in the grading worker while lab 1 is graded (autograder.guard): the lab asks for the
# loss and for gradients worked out BY HAND, so mini's softmax family and its automatic
# differentiation are not available to the submission.  Nothing on the call side below uses them.
REFERENCE = ("mini.softmax", "mini.log_softmax", "mini.logsumexp",
             "mini.grad", "mini.value_and_grad", "mini.make_vjp", "mini.backward_pass",
             "mini.jacobian")

# ---------------------------------------------------------------------------------------------
# Reference versions of the lab's functions, written with mini (used as stand-ins and to expect)
# ---------------------------------------------------------------------------------------------


def _loss(U, y):
    """Mean softmax cross-entropy, traceable by mini.grad: -(1/B) sum_b log softmax(U)_b,y_b."""
    B, C = U.shape
    return -mini.sum(mini.log_softmax(U, axis=-1) * mini.one_hot(y, C)) / B


def _loss_grad(U, y):
    return mini.grad(_loss)(U, y)


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


def _with(Ws, i, W):
    return list(Ws[:i]) + [W] + list(Ws[i + 1:])


def _vjps(G, X, Ws):
    """The VJP of the logits with respect to each W_i, by mini.make_vjp."""
    return [mini.make_vjp(lambda W, i=i: _logits(X, _with(Ws, i, W)), Ws[i])[0](G)
            for i in range(len(Ws))]


def _two_layer_cache(X, W1, W2):
    Z = X @ W1
    H = np.maximum(Z, 0)
    return H @ W2, {"X": X, "Z": Z, "H": H}


# Plain-numpy versions of the fill-ins, given to a student's function in place of the notebook's
# own (``student.using``).  They run on the worker's side, so they use nothing of mini that the
# runner might switch off while this lab is graded.

def _np_softmax(U):
    E = np.exp(U - np.max(U, axis=-1, keepdims=True))
    return E / np.sum(E, axis=-1, keepdims=True)


def _np_loss(U, y):
    m = np.max(U, axis=1)
    return float(np.mean(m + np.log(np.sum(np.exp(U - m[:, None]), axis=1))
                         - U[np.arange(len(y)), y]))


def _np_loss_grad(U, y):
    S = _np_softmax(U)
    S[np.arange(len(y)), y] -= 1.0
    return S / len(y)


def _np_mlp_forward(X, Ws):
    Zs, As, Z = [], [], X
    for i, W in enumerate(Ws):
        Zs.append(Z)
        As.append(Z @ W)
        Z = As[-1] if i == len(Ws) - 1 else np.maximum(As[-1], 0)
    return Z, {"Z": Zs, "A": As}


def _np_mlp_backward(G, Ws, cache):
    grads = [None] * len(Ws)
    for i in reversed(range(len(Ws))):
        D = G if i == len(Ws) - 1 else G * (cache["A"][i] > 0)
        grads[i] = cache["Z"][i].T @ D
        G = D @ Ws[i].T
    return grads


STAND_INS = {"softmax": _np_softmax, "softmax_loss": _np_loss,
             "softmax_loss_grad": _np_loss_grad, "mlp_forward": _np_mlp_forward,
             "mlp_backward": _np_mlp_backward}


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


def _weights(rng, sizes):
    return [rng.standard_normal((m, n)) / np.sqrt(m) for m, n in zip(sizes, sizes[1:])]


def _layer_sizes(rng, layers):
    return [int(rng.integers(1, 6))] + [int(rng.integers(2, 7)) for _ in range(layers)]


def _copies(arrays):
    return [np.array(a, dtype=np.float64, copy=True) for a in arrays]


def _entries(cache, keys, function):
    """The cache's entries as arrays/lists, or an error saying what the cache should be."""
    if not isinstance(cache, dict) or not set(keys) <= set(cache):
        got = sorted(cache) if isinstance(cache, dict) else type(cache).__name__
        raise TypeError(f"the cache {function} returns should be a dict with keys "
                        f"{list(keys)}, got {got}")
    return {key: cache[key] for key in keys}


def _pair(result, function, what):
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"{function} should return a pair ({what}), got {type(result).__name__}")
    return result


def _shape(*arrays):
    return " x ".join(str(np.shape(a)) for a in arrays)


# ---------------------------------------------------------------------------------------------
# softmax and softmax_loss
# ---------------------------------------------------------------------------------------------

def _softmax_loss_case(U, y, what, hint):
    return Case(
        what=what,
        call=lambda student: {"softmax": student.softmax(U.copy()),
                              "loss": student.softmax_loss(U.copy(), y.copy())},
        expected=lambda: {"softmax": mini.softmax(U), "loss": _loss(U, y)},
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


# ---------------------------------------------------------------------------------------------
# softmax_loss_grad
# ---------------------------------------------------------------------------------------------

def _loss_grad_case(U, y, what):
    def call(student):
        with student.using(softmax=_np_softmax):
            return student.softmax_loss_grad(U.copy(), y.copy())
    return Case(what=what, call=call, expected=lambda: _loss_grad(U, y), rtol=1e-6, atol=1e-10,
                hint="the gradient of the mean loss with respect to U is (S - I_y) / B: S = "
                     "softmax(U), I_y has a 1 in column y[b] of row b, and B = U.shape[0] "
                     "because the loss averages over the batch")


def check_softmax_loss_grad(rng):
    U, y = _logits_and_labels(rng)
    return _loss_grad_case(U, y, f"softmax_loss_grad(U, y) with U of shape {U.shape}, "
                                 "compared with mini.grad of the mean cross-entropy")


def check_softmax_loss_grad_large_logits(rng):
    U, y = _far_apart_logits(rng)
    return _loss_grad_case(U, y, f"softmax_loss_grad(U, y) with large logits (around 1000, some 800 "
                                 f"or more apart), U of shape {U.shape}")


# ---------------------------------------------------------------------------------------------
# softmax_regression
# ---------------------------------------------------------------------------------------------

def _softmax_regression_case(rng, min_batch):
    B, d, C = int(rng.integers(min_batch, 9)), int(rng.integers(1, 6)), int(rng.integers(2, 6))
    X, W = rng.standard_normal((B, d)), rng.standard_normal((d, C))
    y = rng.integers(0, C, size=B)

    def call(student):
        with student.using(softmax=_np_softmax, softmax_loss=_np_loss,
                           softmax_loss_grad=_np_loss_grad):
            loss, grad_W = _pair(student.softmax_regression(X.copy(), y.copy(), W.copy()),
                                 "softmax_regression", "loss, grad_W")
        return {"loss": float(loss), "grad_W": grad_W}

    def expected():
        loss = lambda W_: _loss(X @ W_, y)
        return {"loss": float(loss(W)), "grad_W": mini.grad(loss)(W)}
    return Case(what=f"softmax_regression(X, y, W) with X of shape {X.shape} and W of shape "
                     f"{W.shape}, compared with mini.grad of the loss",
                call=call, expected=expected, rtol=1e-6, atol=1e-10,
                hint="the loss is softmax_loss(X @ W, y); its gradient has W's shape (d, C), and "
                     "entry (k, j) is the sum over the batch of X[b, k] * G_U[b, j] with G_U = "
                     "softmax_loss_grad(X @ W, y): one matrix product of X transposed and G_U")


def check_softmax_regression(rng):
    return _softmax_regression_case(rng, min_batch=2)


def check_softmax_regression_one_example(rng):
    return _softmax_regression_case(rng, min_batch=1)


# ---------------------------------------------------------------------------------------------
# two_layer_forward and two_layer_backward
# ---------------------------------------------------------------------------------------------

def check_two_layer_forward(rng):
    d, h, C = _layer_sizes(rng, 2)
    B = int(rng.integers(2, 9))
    X = rng.standard_normal((B, d))
    W1, W2 = _weights(rng, [d, h, C])

    def call(student):
        U, cache = _pair(student.two_layer_forward(*_copies([X, W1, W2])), "two_layer_forward",
                         "U, cache")
        return {"U": U, **_entries(cache, ("X", "Z", "H"), "two_layer_forward")}

    def expected():
        U, cache = _two_layer_cache(X, W1, W2)
        return {"U": U, **cache}
    return Case(what=f"two_layer_forward(X, W1, W2) with X, W1, W2 of shapes {_shape(X, W1, W2)}",
                call=call, expected=expected,
                hint="Z = X @ W1, H = relu(Z) = max(Z, 0), U = H @ W2; return (U, cache) with "
                     "cache = {'X': X, 'Z': Z, 'H': H}")


def _two_layer_backward_case(rng, real_loss):
    d, h, C = _layer_sizes(rng, 2)
    B = int(rng.integers(2, 9))
    X = rng.standard_normal((B, d))
    W1, W2 = _weights(rng, [d, h, C])
    y = rng.integers(0, C, size=B)
    G = _np_loss_grad(_two_layer_cache(X, W1, W2)[0], y) if real_loss else \
        rng.standard_normal((B, C))

    def call(student):
        _, cache = _two_layer_cache(*_copies([X, W1, W2]))
        return list(_pair(student.two_layer_backward(G.copy(), W2.copy(), cache),
                          "two_layer_backward", "grad_W1, grad_W2"))

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
    return Case(what=what, call=call, expected=expected, rtol=1e-6, atol=1e-10,
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

    def call(student):
        logits, cache = _pair(student.mlp_forward(X.copy(), _copies(Ws)), "mlp_forward",
                              "logits, cache")
        entries = _entries(cache, ("Z", "A"), "mlp_forward")
        return {"logits": logits, "Z": [np.asarray(z) for z in entries["Z"]],
                "A": [np.asarray(a) for a in entries["A"]]}

    def expected():
        logits, cache = _mlp_forward(X, Ws)
        return {"logits": logits, **cache}
    return Case(what=f"mlp_forward(X, Ws) with {len(Ws)} layer(s), X of shape {X.shape} and "
                     f"weights of shapes {_shape(*Ws)}",
                call=call, expected=expected,
                hint="A_i = Z_i @ W_i, Z_1 = X, Z_{i+1} = relu(A_i) for every layer but the last, "
                     "whose A_L is the logits (no ReLU); cache['Z'] = [Z_1, ..., Z_L] (the "
                     "inputs of the L layers) and cache['A'] = [A_1, ..., A_L]")


def check_mlp_forward(rng):
    return _mlp_forward_case(rng, 2, 4)


def check_mlp_forward_one_layer(rng):
    return _mlp_forward_case(rng, 1, 1)


def _mlp_backward_case(rng, min_layers, max_layers, real_loss):
    X, Ws, y = _mlp_problem(rng, min_layers, max_layers)
    G = _np_loss_grad(_np_mlp_forward(X, Ws)[0], y) if real_loss else rng.standard_normal(
        (X.shape[0], Ws[-1].shape[1]))

    def call(student):
        _, cache = _np_mlp_forward(X.copy(), _copies(Ws))
        grads = student.mlp_backward(G.copy(), _copies(Ws), cache)
        if not isinstance(grads, (list, tuple)):
            raise TypeError(f"mlp_backward should return a list of {len(Ws)} gradients, got "
                            f"{type(grads).__name__}")
        return [np.asarray(g) for g in grads]

    def expected():
        if real_loss:
            return [mini.grad(lambda W, i=i: _loss(_logits(X, _with(Ws, i, W)), y))(Ws[i])
                    for i in range(len(Ws))]
        return _vjps(G, X, Ws)

    what = (f"mlp_backward(G, Ws, cache) with {len(Ws)} layer(s), X of shape {X.shape}, weights "
            f"of shapes {_shape(*Ws)}, "
            + ("G = softmax_loss_grad(logits, y), compared with mini.grad of the loss"
               if real_loss else "a random upstream gradient G, compared with mini's VJPs"))
    return Case(what=what, call=call, expected=expected, rtol=1e-6, atol=1e-10,
                hint="go from the last layer to the first: D = G * relu'(A_i) (D = G for the last "
                     "layer, which has no ReLU), grad W_i = Z_i^T @ D, then G = D @ W_i^T for the "
                     "layer below; return the gradients in the order of Ws")


def check_mlp_backward(rng):
    return _mlp_backward_case(rng, 2, 4, real_loss=False)


def check_mlp_backward_of_the_loss(rng):
    return _mlp_backward_case(rng, 1, 4, real_loss=True)


# ---------------------------------------------------------------------------------------------
# sgd_step
# ---------------------------------------------------------------------------------------------

def _reference_step(Ws, X, y, lr):
    loss_at = lambda *Ws_: _loss(_logits(X, list(Ws_)), y)
    grads = [mini.grad(loss_at, i)(*Ws) for i in range(len(Ws))]
    return [W - lr * g for W, g in zip(Ws, grads)], float(loss_at(*Ws))


def _student_step(student, Ws, X, y, lr):
    with student.using(**STAND_INS):
        result = _pair(student.sgd_step(_copies(Ws), X.copy(), y.copy(), lr), "sgd_step",
                       "new_Ws, loss")
    new_Ws, loss = result
    if not isinstance(new_Ws, (list, tuple)) or len(new_Ws) != len(Ws):
        raise TypeError(f"sgd_step should return a list of {len(Ws)} new weight matrices first, "
                        f"got {type(new_Ws).__name__}")
    return [np.array(W, dtype=np.float64) for W in new_Ws], float(loss)


def check_sgd_step(rng):
    X, Ws, y = _mlp_problem(rng, 1, 3)
    lr = float(rng.uniform(0.05, 0.5))

    def call(student):
        new_Ws, loss = _student_step(student, Ws, X, y, lr)
        return {"loss": loss, "new_Ws": new_Ws}

    def expected():
        new_Ws, loss = _reference_step(Ws, X, y, lr)
        return {"loss": loss, "new_Ws": new_Ws}
    return Case(what=f"sgd_step(Ws, X, y, lr={lr:.3g}) with {len(Ws)} layer(s), X of shape "
                     f"{X.shape}, weights of shapes {_shape(*Ws)}",
                call=call, expected=expected, rtol=1e-6, atol=1e-10,
                hint="forward with mlp_forward, loss with softmax_loss (at the weights BEFORE the "
                     "step), G = softmax_loss_grad(logits, y), grads = mlp_backward(G, Ws, cache), "
                     "then W_i - lr * grad W_i for every layer")


def check_sgd_loss_goes_down(rng):
    sizes = [int(rng.integers(2, 6)), int(rng.integers(4, 8)), int(rng.integers(2, 5))]
    X = rng.standard_normal((int(rng.integers(16, 33)), sizes[0]))
    Ws = _weights(rng, sizes)
    y = rng.integers(0, sizes[-1], size=len(X))
    steps, lr = 6, 0.1

    def trajectory(step):
        losses, current = [], _copies(Ws)
        for _ in range(steps):
            current, loss = step(current)
            losses.append(loss)
        return losses

    return Case(what=f"{steps} steps of sgd_step(Ws, X, y, lr={lr}) on a random problem (X of "
                     f"shape {X.shape}, weights of shapes {_shape(*Ws)}): the loss before each "
                     "step, which should go down",
                call=lambda student: trajectory(lambda W: _student_step(student, W, X, y, lr)),
                expected=lambda: trajectory(lambda W: _reference_step(W, X, y, lr)),
                rtol=1e-6, atol=1e-10,
                hint="a step moves each W_i by MINUS lr times its gradient (a plus sign climbs "
                     "the loss), returns NEW weights for the next step to start from, and the "
                     "loss it returns is the one at the weights it was given")


CHECKS = {
    "softmax_loss": [check_softmax_loss, check_softmax_loss_large_logits],
    "softmax_loss_grad": [check_softmax_loss_grad, check_softmax_loss_grad_large_logits],
    "softmax_regression": [check_softmax_regression, check_softmax_regression_one_example],
    "two_layer_forward": [check_two_layer_forward],
    "two_layer_backward": [check_two_layer_backward, check_two_layer_backward_of_the_loss],
    "mlp_forward": [check_mlp_forward, check_mlp_forward_one_layer],
    "mlp_backward": [check_mlp_backward, check_mlp_backward_of_the_loss],
    "sgd_step": [check_sgd_step, check_sgd_loss_goes_down],
}
