"""Lab 4's checks of gradients and sgd_update.

``gradients``: the student half builds the described forward graph, calls the student's
gradients on it and describes the backward graph it built; here that graph is built again on a
copy of the forward graph and run by mini's Session, against mini's gradients on another copy.

``sgd_update``: the gradient nodes the student's update reads are mini's (built here, described:
a stand-in that is data), and no Session runs the update node, which calls a primitive the
student made: the student half calls its forward once per step with the gradient values a
Session would hand it, computed here for the Variables' values at that step (a stand-in the
grader answers), and reports the Variables after each step, and whether the arrays the update
read (the Variables' old ones, the gradient values) were left as they were.
"""
import numpy as np

import mini
from autograder.checks import Case
from autograder.checks.lab4.graphs import (copy_of, description_of, inputs, placeholder_values,
                                           program_nodes, random_program, run, student_graph,
                                           values_or_problem)
from autograder.checks.programs import listing
from mini import framework as fw
from mini import nn

GRADIENTS_HINT = ("Build nodes, compute nothing: start from a node that stands for d loss / d loss "
                  "= 1, shaped like the loss; reach each node only once its gradient is complete "
                  "(every node that reads it has sent back its share); call the VJPs of mini's "
                  "table on nodes (an Operation stands for its own output, and its arguments and "
                  "keyword arguments are the node's own); add up the contributions that reach a "
                  "node. A variable no contribution reaches gets zeros shaped like it, as a node.")


def _gradients_case(what, entries, loss, wrt, feed, hint=GRADIENTS_HINT):
    """Case: the values of the nodes the student's ``gradients(loss, wrt)`` builds (positions in
    the description), run by mini's Session with ``feed`` ({position: value})."""
    names = [str(entries[i][1]) for i in wrt]

    def report(graph, nodes, grads, uncomputed):
        fed = {nodes[i]: value for i, value in feed.items()}
        if len(grads) != len(wrt):
            return {"gradients(...) returns": f"a list of {len(grads)} items, expected {len(wrt)}"}
        values = [values_or_problem(graph, [g], fed, f"the gradient with respect to {name}")
                  for name, g in zip(names, grads)]
        return {"the forward graph is left uncomputed": uncomputed,
                **{f"gradient with respect to {name}":
                   value[0] if isinstance(value, list) else value
                   for name, value in zip(names, values)}}

    def expected():
        graph, nodes = copy_of(entries)
        return report(graph, nodes, fw.gradients(nodes[loss], [nodes[i] for i in wrt]), True)

    def interpret(observed):
        graph, nodes, grads = student_graph(entries, observed)
        return report(graph, nodes, grads, observed["forward graph left uncomputed"])

    return Case(what=what, probe="gradients_built",
                inputs={"graph": entries, "loss": loss, "wrt": wrt}, expected=expected,
                interpret=interpret, rtol=1e-8, atol=1e-10, hint=hint)


def gradients_running_example_check(rng):
    x1, x2 = (float(v) for v in rng.uniform(-1.0, 1.0, size=2))
    n = inputs(fw.Graph(), x1=("Placeholder", ()), x2=("Placeholder", ()))
    n["x7"] = n["x1"] + mini.exp(1.5 * n["x1"] + 2.0 * n["x2"])
    entries, at = description_of([n["x7"]], n)
    return _gradients_case(f"gradients(x7, [x1, x2]) for the running example at x1 = {x1:.4g}, "
                           f"x2 = {x2:.4g} (x1 is read twice: its contributions add up)", entries,
                           at["x7"], [at["x1"], at["x2"]], {at["x1"]: x1, at["x2"]: x2})


def _random_gradients_check(n_steps):
    def check(rng):
        program, kinds, fetches = random_program(rng, n_steps)
        nodes = program_nodes(program, kinds, fw.Graph())
        end, middle = nodes[fetches[0]], nodes[fetches[1]]
        nodes["loss"] = mini.sum(end) + 0.5 * mini.sum(middle * middle)
        read = {id(node) for node in fw.prune([nodes["loss"]])}
        wrt = [name for name in kinds if id(nodes[name]) in read]
        entries, at = description_of(list(nodes.values()), nodes)
        feed = {at[name]: value for name, value in placeholder_values(program, kinds).items()}
        return _gradients_case(
            f"gradients(loss, [every input the loss reads]) for loss = sum({fetches[0]}) + 0.5 * "
            f"sum({fetches[1]}^2) on the random graph below (broadcasting, fan-out, numbers "
            f"written into operations, keyword arguments){listing(program, kinds)}\n", entries,
            at["loss"], [at[name] for name in wrt], feed)
    check.__name__ = f"gradients_random_graph_{n_steps}_check"
    return check


def gradients_keyword_arguments_check(rng):
    k = int(rng.integers(2, 5))
    m = k + int(rng.integers(1, 3))
    n = inputs(fw.Graph(), X=("Placeholder", (None, k)), w=("Variable", rng.standard_normal(k)))
    scaled = n["X"] * n["w"]
    rows = mini.sum(mini.tanh(scaled), axis=1)
    columns = mini.mean(mini.log_softmax(scaled, axis=0), axis=-1, keepdims=True)
    n["loss"] = mini.sum(rows * rows) + mini.sum(columns * n["X"])
    entries, at = description_of([n["loss"]], n)
    return _gradients_case(
        f"gradients(loss, [w, X]) for loss = sum(r * r) + sum(c * X), r = sum(tanh(X * w), "
        f"axis=1), c = mean(log_softmax(X * w, axis=0), axis=-1, keepdims=True), X of shape "
        f"({m}, {k}) fed: VJPs that depend on the keyword arguments", entries, at["loss"],
        [at["w"], at["X"]], {at["X"]: rng.standard_normal((m, k))},
        hint="a VJP needs the node's keyword arguments too (the axis a sum reduced, whether it "
             "kept it), exactly as the forward got them. " + GRADIENTS_HINT)


def gradients_unreached_check(rng):
    size = int(rng.integers(2, 6))
    shape = tuple(int(v) for v in rng.integers(1, 4, size=2))
    n = inputs(fw.Graph(), x=("Placeholder", (None,)), w=("Variable", rng.standard_normal(size)),
               unused=("Variable", rng.standard_normal(shape)))
    n["loss"] = mini.mean(mini.tanh(n["w"] * n["x"]))
    entries, at = description_of([n["loss"], n["unused"]], n)
    return _gradients_case(
        f"gradients(loss, [unused, w]) for loss = mean(tanh(w * x)), x of shape ({size},) fed, "
        f"and a Variable 'unused' of shape {shape} that the loss does not read", entries,
        at["loss"], [at["unused"], at["w"]], {at["x"]: rng.standard_normal(size)},
        hint="a variable that no contribution reaches gets zeros shaped like it, as a node "
             "(its shape may be known only when the graph runs). " + GRADIENTS_HINT)


def classifier_inputs(graph, params):
    """``{name: node}``: a Variable per parameter, Placeholders ids and labels (int64), mask."""
    return inputs(graph, **{name: ("Variable", value) for name, value in params.items()},
                  ids=("Placeholder", ((None, None), "int64")),
                  mask=("Placeholder", (None, None)),
                  labels=("Placeholder", ((None,), "int64")))


def random_batch(rng, vocab, batch, length):
    """(ids, mask, labels): every sentence has at least one word; padding holds word ids too."""
    ids = rng.integers(0, vocab, size=(batch, length))
    mask = (np.arange(length) < rng.integers(1, length + 1, size=(batch, 1))).astype(float)
    return ids, mask, rng.integers(0, 2, size=batch)


def gradients_classifier_check(rng):
    vocab, length, batch = (int(rng.integers(low, high)) for low, high in ((6, 12), (3, 6), (2, 5)))
    model = nn.SentimentClassifier(vocab, embed_dim=3, hidden_dim=4)
    params = model.init(rng)
    n = classifier_inputs(fw.Graph(), params)
    n["loss"] = model.loss(n, n["ids"], n["mask"], n["labels"])
    entries, at = description_of([n["loss"]], n)
    ids, mask, labels = random_batch(rng, vocab, batch, length)
    return _gradients_case(
        f"gradients(loss, [its {len(params)} Variables]) for the sentiment classifier's loss "
        f"(vocabulary {vocab}, embedding 3, hidden 4) on a batch of {batch} sentences of "
        f"{length} positions", entries, at["loss"], [at[name] for name in sorted(params)],
        {at["ids"]: ids, at["mask"]: mask, at["labels"]: labels})


# ---------------------------------------------------------------------------------------------
# sgd_update: its forward fed gradient values computed here
# ---------------------------------------------------------------------------------------------

SGD_HINT = ("Return ONE node: calling a primitive of your own on the gradient nodes builds it. A "
            "Session computes the gradient nodes first (they are its inputs) and hands their "
            "values to your primitive's function on every run; that function gives each Variable "
            "its new value.")


def _sgd_case(what, n, variables, lr, feeds, hint=SGD_HINT, gradients_read=False,
              stateful=False):
    """Case: ``len(feeds)`` steps of the update ``sgd_update(variables, gradients(loss,
    variables), lr)`` (``n``: the graph's nodes by name, with "loss"; ``feeds``: per step,
    {Placeholder name: value}), against mini's GradientDescentOptimizer run by mini's Session.
    The gradient nodes are mini's; each step's gradient values are computed here. With
    ``gradients_read``, the gradient values the update was handed must be left as they were too
    (a Session hands them on to every node that reads them, and to the caller); with
    ``stateful``, the update's primitive must be marked stateful."""
    grads = fw.gradients(n["loss"], [n[name] for name in variables])
    named = {**n, **{f"gradient_{name}": g for name, g in zip(variables, grads)}}
    entries, at = description_of([n["loss"], *grads], named)
    at_grad = [at[f"gradient_{name}"] for name in variables]
    held = [i for i, entry in enumerate(entries) if entry[0] == "Variable"]
    names = [str(entries[i][1]) for i in held]

    def gradient_values(step, values):
        graph, nodes = copy_of(entries)
        for i, value in zip(held, values, strict=True):
            nodes[i].assign(value)
        feed = {nodes[at[name]]: value for name, value in feeds[step].items()}
        return run(graph, [nodes[i] for i in at_grad], feed)

    def expected():
        graph, nodes = copy_of(entries)
        update = fw.GradientDescentOptimizer(lr).minimize(nodes[at["loss"]],
                                                           [nodes[at[name]] for name in variables])
        steps = []
        for feed in feeds:
            run(graph, update, {nodes[at[name]]: value for name, value in feed.items()})
            steps.append({"Variables": [nodes[i].value for i in held], "old arrays kept": True,
                          "gradient values kept": True})
        return _report(names, {"building changed no Variable": True, "steps": steps,
                               "stateful": True}, gradients_read, stateful)

    return Case(what=what, probe="sgd_steps",
                inputs={"graph": entries, "variables": [at[name] for name in variables],
                        "grads": at_grad, "learning_rate": lr, "steps": len(feeds)},
                expected=expected,
                interpret=lambda observed: _report(names, observed, gradients_read, stateful),
                stand_ins={"gradients": gradient_values}, rtol=1e-9, atol=1e-12, hint=hint)


def _report(names, observed, gradients_read=False, stateful=False):
    """What the steps did, in words: ``observed`` as the student half reports it (and whether
    each step left the gradient values it was handed as they were, with ``gradients_read``;
    whether the update's primitive is marked stateful, with ``stateful``)."""
    report = {"building the update node left every Variable as it was":
              observed["building changed no Variable"]}
    if stateful:
        report["the update's primitive is marked stateful"] = observed["stateful"]
    for step, after in enumerate(observed["steps"], start=1):
        report.update({f"{name} after step {step}": value
                       for name, value in zip(names, after["Variables"], strict=True)})
        report[f"step {step} left the Variables' old arrays as they were"] = \
            after["old arrays kept"]
        if gradients_read:
            report[f"step {step} left the gradient values it was handed as they were"] = \
                after["gradient values kept"]
    return report


def _regression(rng, extra=False):
    """``(nodes by name, feeds of three steps, X's shape)`` of loss = mean((X @ w + b - t)^2)
    (times a Variable c that is not trained, with ``extra``)."""
    m, d = (int(v) for v in rng.integers(3, 7, size=2))
    n = inputs(fw.Graph(), X=("Placeholder", (None, d)), t=("Placeholder", (None,)),
               w=("Variable", rng.standard_normal(d)), b=("Variable", float(rng.standard_normal())))
    prediction = n["X"] @ n["w"] + n["b"]
    if extra:
        n.update(inputs(n["X"].graph, c=("Variable", float(rng.uniform(0.5, 2)))))
        prediction = prediction * n["c"]
    n["loss"] = mini.mean((prediction - n["t"]) * (prediction - n["t"]))
    feeds = [{"X": rng.standard_normal((m, d)), "t": rng.standard_normal(m)} for _ in range(3)]
    return n, feeds, (m, d)


def sgd_one_step_check(rng):
    n, feeds, shape = _regression(rng)
    lr = float(rng.choice([0.05, 0.1, 0.3]))
    return _sgd_case(f"one run of update = sgd_update([w, b], gradients(loss, [w, b]), {lr}) for "
                     f"loss = mean((X @ w + b - t)^2), X of shape {shape} fed", n, ["w", "b"], lr,
                     feeds[:1])


def sgd_several_runs_check(rng):
    n, feeds, shape = _regression(rng)
    lr = float(rng.choice([0.05, 0.1, 0.2]))
    return _sgd_case(f"three runs of the node sgd_update([w, b], gradients(loss, [w, b]), {lr}) "
                     f"for loss = mean((X @ w + b - t)^2), each run fed a new X of shape {shape} "
                     "and t", n, ["w", "b"], lr, feeds,
                     hint="each run must use the gradients computed in THAT run, at the current "
                          "parameters: the update is a node, not a step taken once when the graph "
                          "is built. " + SGD_HINT)


def sgd_only_listed_check(rng):
    n, feeds, shape = _regression(rng, extra=True)
    lr = float(rng.choice([0.05, 0.1, 0.2]))
    return _sgd_case(f"sgd_update([b, w], gradients(loss, [b, w]), {lr}) for loss = "
                     f"mean(((X @ w + b) * c - t)^2), which also depends on a Variable c that is "
                     "not in the list; w, b and c after one run", n, ["b", "w"], lr, feeds[:1],
                     hint="update exactly the variables you are given, each with the gradient at "
                          "the same position in grads; others keep their values. " + SGD_HINT)


def sgd_not_in_place_check(rng):
    n, feeds, shape = _regression(rng)
    lr = float(rng.choice([0.05, 0.1, 0.2]))
    return _sgd_case(f"two runs of update = sgd_update([w, b], gradients(loss, [w, b]), {lr}), "
                     f"loss = mean((X @ w + b - t)^2), w of shape ({shape[1]},): the arrays w and "
                     "b held before a run, and the gradient values handed to it, must be left as "
                     "they were", n, ["w", "b"], lr, feeds[:2],
                     hint="give each Variable a NEW array (variable.assign); `variable.value -= "
                          "...` changes the old array in "
                          "place, and with it every value already computed from it in this run "
                          "(a fetched w, say); `grad *= learning_rate` changes the gradient "
                          "value the Session computed, which it also hands to every other reader "
                          "and to the caller. Building the node must not change any value. "
                          + SGD_HINT, gradients_read=True)


def sgd_training_check(rng):
    vocab, length, batch, steps = int(rng.integers(8, 15)), 5, 6, 12
    model = nn.SentimentClassifier(vocab, embed_dim=4, hidden_dim=5)
    params = model.init(rng)
    n = classifier_inputs(fw.Graph(), params)
    n["loss"] = model.loss(n, n["ids"], n["mask"], n["labels"])
    feeds = [dict(zip(("ids", "mask", "labels"), random_batch(rng, vocab, batch, length)))
             for _ in range(steps)]
    return _sgd_case(f"{steps} training steps of the sentiment classifier (vocabulary {vocab}, "
                     f"embedding 4, hidden 5) on random batches of {batch} sentences: update = "
                     f"sgd_update(its {len(params)} Variables, their gradients, 0.5)", n,
                     sorted(params), 0.5, feeds)


def sgd_stateful_check(rng):
    n, feeds, shape = _regression(rng)
    return _sgd_case("update = sgd_update([w, b], gradients(loss, [w, b]), 0.1) for loss = "
                     "mean((X @ w + b - t)^2): a node with a side effect, which the optimisation "
                     "passes of section 8 must neither compute early nor merge", n, ["w", "b"],
                     0.1, feeds[:1], stateful=True,
                     hint="mark the primitive of the update node as stateful (stateful = True on "
                          "the primitive) before you call it on the gradient nodes")


CHECKS = {
    "gradients": {
        "the gradients of a graph, contributions added up": (
            2, [gradients_running_example_check, _random_gradients_check(6),
                _random_gradients_check(14), gradients_keyword_arguments_check]),
        "zeros for a Variable the loss does not read": (1, [gradients_unreached_check]),
        "the classifier's gradients": (1, [gradients_classifier_check])},
    "sgd_update": {
        "each Variable moved by -lr times its gradient, run after run": (
            1, [sgd_one_step_check, sgd_several_runs_check, sgd_training_check]),
        "only the listed Variables change": (1, [sgd_only_listed_check]),
        "new arrays: the ones read before are left as they were": (1, [sgd_not_in_place_check]),
        "the update is marked stateful": (1, [sgd_stateful_check])},
}
