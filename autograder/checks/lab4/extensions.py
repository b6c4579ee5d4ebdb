"""Lab 4's checks of the student's own Operation, of minimize and of numerical_gradients.

``operation``: the student's primitive ``sigmoid_cross_entropy`` runs in the student half on
arrays (its forward, and its VJPs called as a backward pass calls them) and on framework nodes
(where its VJPs must build nodes: the graph they build is described and run here with mini's
Session, the student's Operation replaced by mini's, whose forward the first behaviour checks).
Expected values are mini's own Operation and its VJPs, and central differences of it.

``minimize``: the student half hands ``gradients`` and ``sgd_update`` stand-ins that only record
what they are given; here the Variables the loss reads are found with mini's prune.

``gradient_check``: the student's numerical_gradients runs with a ``session_run`` stand-in that
asks here for each run, with the Variables' values of that moment; expected is mini's
numerical_gradients on a copy of the graph.
"""
import numpy as np

import mini
from autograder.checks import Case
from autograder.checks.lab4.graphs import (copy_of, description_of, inputs, run, student_graph,
                                           values_or_problem)
from autograder.probes.lab4 import OPERATION
from mini import framework as fw
from mini import nn

# ---------------------------------------------------------------------------------------------
# operation: sigmoid_cross_entropy with its forward and backward
# ---------------------------------------------------------------------------------------------

OPERATION_HINT = ("the forward is the loss of every entry; each VJP returns g times the "
                  "derivative of the loss with respect to its argument, shaped like that "
                  "argument (derive both by hand first, and check them on the worked example)")


def _on_arrays(z, y, g):
    """mini's Operation on arrays: the forward and its two VJPs, as the probe reports them."""
    ans = nn.sigmoid_cross_entropy(z, y)
    return {"forward": ans, "vjp z": mini.vjp_of(nn.sigmoid_cross_entropy, 0)(g, ans, z, y),
            "vjp y": mini.vjp_of(nn.sigmoid_cross_entropy, 1)(g, ans, z, y)}


def _arrays_case(what, z, y, keep, hint=OPERATION_HINT):
    g = np.random.default_rng(int(np.size(z))).uniform(0.5, 2.0, size=np.shape(z))
    return Case(what=what, probe="operation_on_arrays", inputs={"z": z, "y": y, "g": g},
                expected=lambda: {key: value for key, value in _on_arrays(z, y, g).items()
                                  if key in keep},
                interpret=lambda observed: {key: observed[key] for key in keep},
                rtol=1e-7, atol=1e-9, hint=hint)


def operation_forward_check(rng):
    shape = tuple(int(v) for v in rng.integers(2, 5, size=2))
    z, y = 3 * rng.standard_normal(shape), rng.uniform(0, 1, size=shape)
    return _arrays_case(f"sigmoid_cross_entropy(z, y), z and y of shape {shape}", z, y,
                        ["forward"])


def operation_large_logits_check(rng):
    z = np.array([800.0, -800.0, 40.0, -40.0]) * rng.choice([1.0, 1.25])
    y = rng.uniform(0, 1, size=4)
    return _arrays_case(f"sigmoid_cross_entropy(z, y) for large logits z = {z.tolist()}: the "
                        "loss is finite and exact, whatever the size of z", z, y, ["forward"],
                        hint="e^z overflows for z above about 709; write log(1 + e^z) in a form "
                             "that never takes e of a large positive number")


def operation_backward_check(rng):
    shape = tuple(int(v) for v in rng.integers(2, 5, size=2))
    z, y = 2 * rng.standard_normal(shape), rng.uniform(0, 1, size=shape)
    return _arrays_case(f"the VJPs of sigmoid_cross_entropy for z and y of shape {shape}", z, y,
                        ["vjp z", "vjp y"])


def operation_broadcast_check(rng):
    k = int(rng.integers(2, 5))
    z, y = rng.standard_normal((3, k)), float(rng.uniform(0, 1))
    return _arrays_case(f"the VJPs of sigmoid_cross_entropy(z, y) for z of shape (3, {k}) and a "
                        "single target y (a float): y's gradient is a number", z, y,
                        ["vjp z", "vjp y"],
                        hint="y was broadcast against z, so its gradient sums the contributions "
                             "of every entry it reached, back to y's shape. " + OPERATION_HINT)


def operation_nodes_check(rng):
    k = int(rng.integers(2, 5))
    n = inputs(fw.Graph(), z=("Placeholder", (None, k)), y=("Placeholder", (None, k)),
               g=("Placeholder", (None, k)))
    entries, at = description_of(list(n.values()), n)
    feed = {at["z"]: 2 * rng.standard_normal((3, k)), at["y"]: rng.uniform(0, 1, size=(3, k)),
            at["g"]: rng.uniform(0.5, 2.0, size=(3, k))}
    extra = {OPERATION: nn.sigmoid_cross_entropy}

    def expected():
        z, y, g = (feed[at[name]] for name in "zyg")
        return {"the VJPs build nodes": True,
                **{f"the node of {key}": value for key, value in _on_arrays(z, y, g).items()
                   if key != "forward"}}

    def interpret(observed):
        graph, nodes, items = student_graph(entries, observed, extra)
        fed = {nodes[i]: value for i, value in feed.items()}
        shares = items[1:]
        return {"the VJPs build nodes": all(isinstance(share, fw.Tensor) for share in shares),
                **{f"the node of vjp {name}": values_or_problem(graph, [share], fed,
                                                                  f"vjp {name}")[0]
                   if isinstance(share, fw.Tensor) else f"not a node: {share}"
                   for name, share in zip("zy", shares)}}

    return Case(what=f"the VJPs of sigmoid_cross_entropy called on framework nodes z, y, g of "
                     f"shape (None, {k}) (as gradients() calls them), run with z, y, g of shape "
                     f"(3, {k})", probe="operation_on_nodes",
                inputs={"graph": entries, "z": at["z"], "y": at["y"], "g": at["g"]},
                expected=expected, interpret=interpret, rtol=1e-7, atol=1e-9,
                hint="on nodes, a VJP must build the backward graph: write it with mini's "
                     "primitives (mini.exp, mini.sigmoid, +, *, ...), not numpy's functions, "
                     "so that called on nodes it adds nodes instead of computing")


# ---------------------------------------------------------------------------------------------
# minimize, with gradients and sgd_update stand-ins that record their calls
# ---------------------------------------------------------------------------------------------

MINIMIZE_HINT = ("minimize trains every Variable the loss depends on, each once, and nothing "
                 "else: hand their list to gradients with the loss, then hand the same list, "
                 "the gradient nodes and the learning rate to sgd_update")


def _minimize_case(what, n, learning_rate, hint=MINIMIZE_HINT):
    entries, at = description_of([n["loss"]], n)
    graph_nodes = copy_of(entries)[1]
    trained = sorted(i for i, node in enumerate(graph_nodes) if isinstance(node, fw.Variable))
    names = [str(entry[1]) for entry in entries]

    def report(observed):
        if "raised" in observed:
            return {"raised": observed["raised"],
                    "the message names the loss": names[at["loss"]] in observed["message"]}
        if len(observed["gradients"]) != 1 or len(observed["sgd_update"]) != 1:
            return {"calls of gradients and of sgd_update": [len(observed["gradients"]),
                                                             len(observed["sgd_update"])]}
        (of_loss, asked), = observed["gradients"]
        handed, grads_handed_on, rate = observed["sgd_update"][0]
        named = sorted(names[i] if isinstance(i, int) else str(i) for i in asked)
        return {"gradients asked of the loss": of_loss,
                "the variables handed to gradients": named,
                "sgd_update given the same variables, with their gradient nodes":
                    handed == asked and grads_handed_on,
                "the learning rate handed on": rate,
                "returned sgd_update's node": observed["returned sgd_update's node"]}

    def expected():
        if not trained:
            return {"raised": "ValueError", "the message names the loss": True}
        return {"gradients asked of the loss": True,
                "the variables handed to gradients": sorted(names[i] for i in trained),
                "sgd_update given the same variables, with their gradient nodes": True,
                "the learning rate handed on": learning_rate, "returned sgd_update's node": True}

    return Case(what=what, probe="minimize_calls",
                inputs={"graph": entries, "loss": at["loss"], "learning_rate": learning_rate},
                expected=expected, interpret=report, hint=hint)


def minimize_regression_check(rng):
    d = int(rng.integers(2, 5))
    n = inputs(fw.Graph(), X=("Placeholder", (None, d)), t=("Placeholder", (None,)),
               w=("Variable", rng.standard_normal(d)), b=("Variable", 0.0),
               scale=("Constant", float(rng.uniform(1, 2))))
    residual = n["scale"] * (n["X"] @ n["w"] + n["b"]) - n["t"]
    n["loss"] = mini.mean(residual * residual)
    lr = float(rng.choice([0.05, 0.1, 0.3]))
    return _minimize_case(f"minimize(loss, {lr}) for loss = mean((scale (X @ w + b) - t)^2): "
                          "Variables w and b, a Constant scale, Placeholders X and t", n, lr)


def minimize_shared_check(rng):
    n = inputs(fw.Graph(), x=("Placeholder", (None,)), w=("Variable", rng.standard_normal(3)),
               c=("Variable", float(rng.uniform(0.5, 2))))
    hidden = mini.tanh(n["w"] * n["x"])
    n["loss"] = mini.sum(hidden * n["w"]) + n["c"] * mini.sum(hidden * hidden) + n["c"]
    return _minimize_case("minimize(loss, 0.1) for loss = sum(tanh(w x) w) + c sum(tanh(w x)^2) "
                          "+ c: w and c are each read several times", n, 0.1,
                          hint="each Variable is trained once, however many nodes read it. "
                               + MINIMIZE_HINT)


def minimize_nothing_to_train_check(rng):
    n = inputs(fw.Graph(), x=("Placeholder", (None,)), c=("Constant", float(rng.uniform(1, 2))))
    n["loss"] = mini.sum(mini.tanh(n["c"] * n["x"]))
    return _minimize_case("minimize(loss, 0.1) for loss = sum(tanh(c x)), which reads no Variable",
                          n, 0.1, hint="a loss that reads no Variable has nothing to train: "
                                       "raise a ValueError that names the loss node")


# ---------------------------------------------------------------------------------------------
# numerical_gradients, with session_run answered here
# ---------------------------------------------------------------------------------------------

NUMERICAL_HINT = ("entry k of a variable's estimate is (L(theta + h e_k) - L(theta - h e_k)) / "
                  "2h, where only entry k of that one variable moves and L is the sum of the "
                  "loss's entries, run in a Session with the feed you were given")


def _numerical_case(what, n, variables, feed, h=1e-6, keep=("estimates",), hint=NUMERICAL_HINT):
    entries, at = description_of([n["loss"]], n)
    held = [i for i, entry in enumerate(entries) if entry[0] == "Variable"]

    def run_stand_in(fetched, values, fed):
        graph, nodes = copy_of(entries)
        if set(values) != set(held) or not all(isinstance(i, int) for i in fetched):
            raise ValueError("session_run was asked for nodes that are not in this graph")
        for i, value in values.items():
            nodes[i].assign(value)
        return run(graph, [nodes[i] for i in fetched],
                   {nodes[i]: value for i, value in fed.items()})

    def expected():
        graph, nodes = copy_of(entries)
        fed = {nodes[at[name]]: value for name, value in feed.items()}
        estimates = fw.numerical_gradients(nodes[at["loss"]], [nodes[at[v]] for v in variables],
                                           fed, h)
        return {"estimates": estimates, "Variables as they were": True}

    return Case(what=what, probe="numerical_estimates",
                inputs={"graph": entries, "loss": at["loss"],
                        "variables": [at[v] for v in variables],
                        "feed": {at[name]: value for name, value in feed.items()}, "h": h},
                expected=lambda: {key: value for key, value in expected().items() if key in keep},
                interpret=lambda observed: {key: observed[key] for key in keep},
                stand_ins={"run": run_stand_in}, rtol=1e-7, atol=1e-8, hint=hint)


def _regression(rng):
    m, d = int(rng.integers(3, 6)), int(rng.integers(2, 4))
    n = inputs(fw.Graph(), X=("Placeholder", (None, d)), t=("Placeholder", (None,)),
               w=("Variable", rng.standard_normal(d)), b=("Variable", float(rng.standard_normal())))
    residual = mini.tanh(n["X"] @ n["w"] + n["b"]) - n["t"]
    n["loss"] = mini.mean(residual * residual)
    return n, {"X": rng.standard_normal((m, d)), "t": rng.standard_normal(m)}, (m, d)


def numerical_regression_check(rng):
    n, feed, shape = _regression(rng)
    return _numerical_case(f"numerical_gradients(loss, [w, b], feed) for loss = mean((tanh(X @ w "
                           f"+ b) - t)^2), X of shape {shape} fed, b a number", n, ["w", "b"], feed)


def numerical_matrix_check(rng):
    d, k = (int(v) for v in rng.integers(2, 4, size=2))
    n = inputs(fw.Graph(), x=("Placeholder", (None, d)),
               W=("Variable", rng.standard_normal((d, k))))
    n["loss"] = mini.tanh(n["x"] @ n["W"])
    return _numerical_case(f"numerical_gradients(loss, [W], feed) for loss = tanh(x @ W), W of "
                           f"shape ({d}, {k}): a matrix Variable, and a loss of shape (2, {k}) "
                           "(its entries summed)", n, ["W"], {"x": rng.standard_normal((2, d))},
                           hint="move every entry of a matrix Variable, one at a time, and sum "
                                "the entries of a loss that is not a scalar. " + NUMERICAL_HINT)


def numerical_restores_check(rng):
    n, feed, shape = _regression(rng)
    return _numerical_case("numerical_gradients(loss, [w, b], feed) for loss = mean((tanh(X @ w "
                           "+ b) - t)^2): afterwards w and b hold the values they held before, "
                           "and the arrays they held are unchanged", n, ["w", "b"], feed,
                           keep=("Variables as they were",),
                           hint="training goes on from the values the Variables held before the "
                                "check: give each one its old value back when you are done with "
                                "it, and move a Variable with assign (a new array), never by "
                                "changing its array in place")


CHECKS = {
    "operation": {
        "the forward: the loss of every entry": (1, [operation_forward_check]),
        "the forward stays finite for large logits": (1, [operation_large_logits_check]),
        "the backward: both VJPs, shaped like their arguments": (
            2, [operation_backward_check, operation_broadcast_check]),
        "the backward builds nodes on framework nodes": (1, [operation_nodes_check])},
    "minimize": {
        "every Variable the loss reads, each once, handed on": (
            2, [minimize_regression_check, minimize_shared_check]),
        "a loss without Variables is an error": (1, [minimize_nothing_to_train_check])},
    "gradient_check": {
        "central differences of every entry of every Variable": (
            2, [numerical_regression_check, numerical_matrix_check]),
        "the Variables are left as they were": (1, [numerical_restores_check])},
}
