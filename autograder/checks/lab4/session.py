"""Lab 4's checks of session_run: graphs drawn and built here, described to the student half,
run there by the student's session_run and here by mini's Session.

Besides the values (or the error) of each run, the student half reports how often each Operation
was computed (its primitive counts its calls) and which nodes were left holding a value: a run
computes what its fetches need, each node once, and keeps values in a dict of its own, never on
the nodes (the lab's docstring forbids it: a value left there is reused by the next run).  The
training run's update node is a stand-in whose steps the grader computes; the devices check
registers, in the student's process only, two backends that record what they compute.
"""
import re

import numpy as np

import mini
from autograder.checks import Case, focused
from autograder.checks.lab4.graphs import (copy_of, description_of, inputs, placeholder_values,
                                           program_nodes, random_program, run, without_devices)
from autograder.checks.programs import listing
from mini import framework as fw
from mini import primitives

ONCE = "each node the fetches need, once"
NONE_LEFT = "none"
SAME_BACKEND = "the one in use before the run"

SESSION_HINT = ("For each fetch, walk the nodes in the order toposort(fetch) gives and keep their "
                "values in a dict {node: value} that lives for one call (never on the nodes: "
                "node.value), computing each node once: a Placeholder's value comes from "
                "feed_dict, a Variable's or Constant's is node.value, and an Operation's is "
                "node.forward(*args), where args = list(node.args) with each parent's value put "
                "in at its position from node.parent_argnums (the other positions hold constants, "
                "like the 1.5 of 1.5 * x1), computed with the backend node.device in use when it "
                "is not None. Return one value for one node, a list for a list, a dict for a dict.")


def _run(label, fetches, feed=None, assign=None, error=None):
    """One call of session_run: ``fetches`` by position (one, a list or a dict), ``feed`` and
    ``assign`` ({position: value}, assigned to Variables before the call); ``error`` is
    ``(kind, name)`` when the call must raise ``kind`` naming ``name``."""
    return {"label": label, "fetches": fetches, "feed": feed or {}, "assign": assign or {},
            "error": error}


def _positions(fetches):
    if isinstance(fetches, dict):
        return list(fetches.values())
    return list(fetches) if isinstance(fetches, list) else [fetches]


def _session_case(what, entries, runs, hint=SESSION_HINT, report=(), devices=(), step=None):
    """Case: ``runs`` of the student's session_run on the described graph, against mini's Session
    on a copy of it.  ``report``: {label: position} of Variables to compare after the runs;
    ``step``: ``(learning rate, positions of the Variables)`` of an update stand-in;
    ``devices``: the backends recorded, each ``{device: {operation: calls}}`` expected."""
    names = [str(entry[1]) for entry in entries]
    operations = {i for i, entry in enumerate(entries) if entry[0] == "Operation"}
    needed = [_needed(entries, _positions(r["fetches"])) & operations for r in runs]

    def expected():
        extra, stepped = _update(step)
        graph, nodes = copy_of(without_devices(entries), extra)
        stepped += [nodes[i] for i in step[1]] if step else []
        report_ = {}
        for r in runs:
            for position, value in r["assign"].items():
                nodes[position].assign(value)
            fetched = _fetched(r["fetches"], nodes)
            feed = {nodes[i]: value for i, value in r["feed"].items()}
            if r["error"]:
                report_[r["label"]] = _raised(_attempt(lambda: run(graph, fetched, feed)),
                                              *r["error"])
            else:
                report_[r["label"]] = run(graph, fetched, feed)
                report_[f"{r['label']}: nodes computed"] = ONCE
        report_["values left on the nodes after the runs"] = NONE_LEFT
        report_.update({f"{label} after the runs": nodes[i].value for label, i in report})
        if devices:
            report_["backend calls, by device"] = devices
            report_["backend in use after the run"] = SAME_BACKEND
        return report_

    def interpret(observed):
        report_ = {}
        for r, outcome, need in zip(runs, observed["runs"], needed, strict=True):
            if r["error"]:
                report_[r["label"]] = _raised(outcome, *r["error"])
            elif "raised" in outcome:
                report_[r["label"]] = f"raised {outcome['raised']}: {outcome['message']}"
                report_[f"{r['label']}: nodes computed"] = ONCE
            else:
                report_[r["label"]] = outcome["returned"]
                report_[f"{r['label']}: nodes computed"] = _computed(outcome["computed"], need,
                                                                    names)
        left = sorted({str(name) for outcome in observed["runs"] for name in outcome["stored"]})
        report_[STORED] = (
            NONE_LEFT if not left else
            f"{', '.join(left[:3])}{' ...' if len(left) > 3 else ''} hold values (node.value)")
        report_.update({f"{label} after the runs": observed["after"][i] for label, i in report})
        if devices:
            report_["backend calls, by device"] = _by_device(observed["backend calls"])
            after, before = observed["backend after"], observed["backend before"]
            report_["backend in use after the run"] = (
                SAME_BACKEND if after == before else f"{after!r} (it was {before!r} before)")
        return report_

    task_runs = [{key: r[key] for key in ("fetches", "feed", "assign")} for r in runs]
    return Case(what=what, probe="session_runs",
                inputs={"graph": entries, "runs": task_runs, "report": [i for _, i in report],
                        "devices": list(devices), "update": step[1] if step else None},
                expected=expected, interpret=interpret,
                stand_ins={"gradient_step": _gradient_step(step)} if step else {},
                rtol=1e-9, atol=1e-12, hint=hint)


def _needed(entries, fetches):
    seen, stack = set(fetches), list(fetches)
    while stack:
        entry = entries[stack.pop()]
        for parent in entry[4] if entry[0] == "Operation" else ():
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen


def _fetched(fetches, nodes):
    if isinstance(fetches, dict):
        return {key: nodes[i] for key, i in fetches.items()}
    return [nodes[i] for i in fetches] if isinstance(fetches, list) else nodes[fetches]


def _computed(computed, needed, names):
    """What the student's run computed, in words: ONCE, or which nodes it computed more than
    once or without any fetch needing them."""
    if not isinstance(computed, dict) or not all(key in range(len(names)) for key in computed):
        raise ValueError("the counts of computations are not per node")
    twice = [f"{names[p]} {n} times" for p, n in sorted(computed.items()) if n > 1]
    unneeded = [names[p] for p in sorted(computed) if p not in needed]
    if twice:
        return f"computed {', '.join(twice[:3])}{' ...' if len(twice) > 3 else ''}"
    if unneeded:
        return f"computed {', '.join(unneeded[:3])}, which no fetch needs"
    return ONCE


def _attempt(action):
    """What ``action()`` did, as the student half reports a run."""
    try:
        action()
    except Exception as error:
        return {"raised": type(error).__name__, "message": str(error)[:300]}
    return {"returned": None}


def _raised(outcome, kind, name):
    """A run that must raise ``kind`` naming ``name``, in words."""
    if "raised" not in outcome:
        return "returned without raising"
    if outcome["raised"] != kind:
        return f"raised {outcome['raised']} (expected {kind}): {str(outcome['message'])[:200]}"
    if name not in re.findall(r"\w+", str(outcome["message"])):
        return f"raised {kind} without naming {name!r}: {str(outcome['message'])[:200]}"
    return f"raised {kind} naming {name!r}"


def _by_device(log):
    calls = {}
    for device, operation in log:
        calls.setdefault(str(device), {}).setdefault(str(operation), 0)
        calls[str(device)][str(operation)] += 1
    return calls


def _update(step):
    """``(extra primitives, Variables)`` for the grader's own copy of a graph with the update
    stand-in: its primitive takes one gradient step on the Variables, which are put in the list
    once the copy is built."""
    if step is None:
        return None, []
    learning_rate, variables = step[0], []

    def gradient_step(*grads):
        for variable, grad in zip(variables, grads):
            variable.assign(variable.value - learning_rate * grad)
    update = primitives.Primitive(gradient_step, name="GradientDescent")
    update.stateful = True
    return {"not mini's: GradientDescent": update}, variables


def _gradient_step(step):
    learning_rate, positions = step

    def answer(values, grads):
        if len(values) != len(positions) or len(grads) != len(positions):
            raise ValueError(f"the update steps {len(positions)} Variables")
        return [np.asarray(value, dtype=float) - learning_rate * np.asarray(grad, dtype=float)
                for value, grad in zip(values, grads)]
    return answer


# ---------------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------------

def session_running_example_check(rng):
    x1, x2 = (float(v) for v in rng.uniform(-1.0, 1.0, size=2))
    n = inputs(fw.Graph(), x1=("Placeholder", ()), x2=("Placeholder", ()))
    n["x3"], n["x4"] = 1.5 * n["x1"], 2.0 * n["x2"]
    n["x5"] = n["x3"] + n["x4"]
    n["x6"] = mini.exp(n["x5"])
    n["x7"] = n["x1"] + n["x6"]
    entries, at = description_of([n["x7"]], n)
    feed = {at["x1"]: x1, at["x2"]: x2}
    return _session_case(
        f"session_run on the running example x3 = 1.5 * x1, x4 = 2.0 * x2, x5 = x3 + x4, "
        f"x6 = exp(x5), x7 = x1 + x6 with Placeholders x1 = {x1:.4g}, x2 = {x2:.4g} fed",
        entries, [_run("session_run([x7, x5, x3], feed_dict)", [at["x7"], at["x5"], at["x3"]],
                       feed),
                  _run("session_run(x6, feed_dict)", at["x6"], feed)])


def session_linear_check(rng):
    size = int(rng.integers(2, 7))
    a0, b0 = (float(v) for v in rng.standard_normal(2))
    n = inputs(fw.Graph(), x=("Placeholder", (None,)), a=("Variable", a0), b=("Variable", b0))
    n["y"] = n["a"] * n["x"] + n["b"]
    entries, at = description_of([n["y"]], n)
    feed = {at["x"]: rng.standard_normal(size)}
    return _session_case(
        f"session_run on y = a * x + b (L05 slide 36) with Variables a = {a0:.3g}, b = {b0:.3g} "
        f"and x fed an array of shape ({size},): one fetched node, then a list [y, a, b]",
        entries, [_run("session_run(y, feed_dict)", at["y"], feed),
                  _run("session_run([y, a, b], feed_dict)", [at["y"], at["a"], at["b"]], feed)])


def _random_graph_check(n_steps):
    def check(rng):
        program, kinds, fetches = random_program(rng, n_steps)
        nodes = program_nodes(program, kinds, fw.Graph())
        entries, at = description_of(list(nodes.values()), nodes)
        feed = {at[name]: value for name, value in placeholder_values(program, kinds).items()}
        return _session_case(
            f"session_run([{', '.join(fetches)}], feed_dict) on the random graph below (the "
            f"Placeholders fed){listing(program, kinds)}\n", entries,
            [_run(f"session_run([{', '.join(fetches)}], feed_dict)",
                  [at[name] for name in fetches], feed)])
    check.__name__ = f"session_random_graph_{n_steps}_check"
    return check


def session_backward_graph_check(rng):
    m, d, h = (int(v) for v in rng.integers(2, 5, size=3))
    n = inputs(fw.Graph(), X=("Placeholder", (None, d)),
               W=("Variable", 0.7 * rng.standard_normal((d, h))),
               b=("Variable", rng.standard_normal(h)), c=("Constant", rng.standard_normal(h)))
    n["loss"] = mini.mean(mini.tanh(n["X"] @ n["W"] + n["b"]) * n["c"])
    n["grad_W"], n["grad_b"] = fw.gradients(n["loss"], [n["W"], n["b"]])
    entries, at = description_of([n["loss"], n["grad_W"], n["grad_b"]], n)
    return _session_case(
        f"session_run([loss, grad_W, grad_b], feed_dict) for loss = mean(tanh(X @ W + b) * c), "
        f"with X of shape ({m}, {d}) fed and grad_W, grad_b = gradients(loss, [W, b]): the "
        "backward graph is a graph like any other (L05 slide 26)", entries,
        [_run("session_run([loss, grad_W, grad_b], feed_dict)",
              [at["loss"], at["grad_W"], at["grad_b"]], {at["X"]: rng.standard_normal((m, d))})],
        hint="gradients() builds ordinary Operation nodes (multiply, sum_to_like, broadcast_like, "
             "...), some with keyword arguments in node.kwargs, which node.forward applies for "
             "you. " + SESSION_HINT)


def session_feeds_check(rng):
    size = int(rng.integers(2, 6))
    labels = f"labels_{int(rng.integers(100, 1000))}"
    n = inputs(fw.Graph(), x=("Placeholder", (None,)), **{labels: ("Placeholder", (None,))},
               w=("Variable", rng.standard_normal(size)))
    n["y"] = mini.tanh(n["w"] * n["x"])
    n["error"] = mini.sum((n["y"] - n[labels]) * (n["y"] - n[labels]))
    entries, at = description_of([n["error"]], n)
    x, t, y, error = at["x"], at[labels], at["y"], at["error"]
    x_a, x_b, t_b = (rng.standard_normal(size) for _ in range(3))
    missing = ("ValueError", labels)
    return _session_case(
        f"session_run on y = tanh(w * x), error = sum((y - t)^2) with Placeholders x and "
        f"'{labels}' (t) of shape ({size},): only what a fetch needs must be fed; a missing feed "
        "must raise a ValueError naming the Placeholder, also after an earlier run fed it; a "
        "Variable is read when the graph runs", entries,
        [_run("session_run(y, {x: ...}) (t not fed, y does not need it)", y, {x: x_a}),
         _run("session_run(error, {x: ...}) (t not fed, error needs it)", error, {x: x_a},
              error=missing),
         _run("session_run([y, error], {x: ..., t: ...})", [y, error], {x: x_b, t: t_b}),
         _run("session_run(error, {x: ...}) again, after a run that fed t", error, {x: x_b},
              error=missing),
         _run("session_run(y, {x: ...}) after w.assign(...)", y, {x: x_b},
              assign={at["w"]: rng.standard_normal(size)})],
        hint="compute only the nodes toposort(fetch) returns; for a Placeholder missing from "
             "feed_dict raise ValueError(f\"... '{node.name}' ...\"). Keep values in a dict that "
             "lives for one call: never store them on the nodes, or an old feed is reused. Read a "
             "Variable's node.value when the run reaches it.")


def session_once_check(rng):
    size = int(rng.integers(2, 6))
    n = inputs(fw.Graph(), x=("Variable", rng.standard_normal(size)))
    n["s"] = 2.0 * n["x"]
    n["a"], n["b"] = mini.tanh(n["s"]), n["s"] * n["s"]
    n["total"] = n["a"] + n["b"]
    n["unneeded"] = 3.0 * n["x"]
    entries, at = description_of([n["total"], n["unneeded"]], n)
    return _session_case(
        f"session_run([a, b, a + b]) where a = tanh(s), b = s * s share the node s = 2 * x (x a "
        f"Variable of shape ({size},)), and another node reading x, 3 * x, is not fetched",
        entries, [_run("session_run([a, b, a + b])", [at["a"], at["b"], at["total"]])],
        hint="every node is computed at most once per call, even when several fetches need it "
             "(an optimizer's update node computed twice would take two steps): skip nodes that "
             "already have a value in your dict. Nodes no fetch depends on are not computed.")


def session_drives_training_check(rng):
    size, steps = int(rng.integers(4, 9)), int(rng.integers(3, 6))
    lr = float(rng.choice([0.05, 0.1, 0.2]))
    n = inputs(fw.Graph(), x=("Placeholder", (None,)), t=("Placeholder", (None,)),
               a=("Variable", float(rng.standard_normal())),
               b=("Variable", float(rng.standard_normal())))
    residual = n["a"] * n["x"] + n["b"] - n["t"]
    n["loss"] = mini.mean(residual * residual)
    grads = fw.gradients(n["loss"], [n["a"], n["b"]])
    extra, _ = _update((lr, None))
    n["train_op"] = extra["not mini's: GradientDescent"](*grads)
    entries, at = description_of([n["loss"], n["train_op"]], n)
    runs = [_run(f"run {i + 1}: session_run([loss, train_op], feed_dict)",
                 [at["loss"], at["train_op"]],
                 {at["x"]: rng.standard_normal(size), at["t"]: rng.standard_normal(size)})
            for i in range(steps)]
    return _session_case(
        f"{steps} runs of session_run([loss, train_op], feed_dict) with loss = "
        f"mean((a x + b - t)^2), train_op the update of gradient descent with learning rate "
        f"{lr} (a stand-in for yours), x and t of shape ({size},) fed new values each run",
        entries, runs, report=[("a", at["a"]), ("b", at["b"])], step=(lr, [at["a"], at["b"]]),
        hint="the update node's forward assigns new values to a and b and returns None: store "
             "None as its value like any other. Read each Variable's node.value when a run "
             "reaches it, so the next run sees the updated parameters. " + SESSION_HINT)


def session_long_chain_check(rng):
    length = 1500
    cs, ds = np.exp(0.02 * rng.standard_normal(length)), rng.standard_normal(length)
    n = inputs(fw.Graph(), x=("Placeholder", ()))
    v = n["x"]
    for i in range(length):
        v = v * float(cs[i]) + float(ds[i])
        if i == length // 2:
            n["middle"] = v
    n["end"] = v
    entries, at = description_of([v], n)
    x0 = float(rng.standard_normal())
    return _session_case(
        f"session_run([v{length}, v{length // 2 + 1}], {{x: {x0:.3g}}}) on a chain of "
        f"{2 * length + 1} nodes, v_i = c_i * v_(i-1) + d_i with v_0 = x", entries,
        [_run(f"session_run([v{length}, v{length // 2 + 1}], feed_dict)",
              [at["end"], at["middle"]], {at["x"]: x0})],
        hint="a function that calls itself once per node stops at Python's recursion limit "
             "(about 1000 deep): loop over the list toposort(fetch) returns instead. "
             + SESSION_HINT)


def session_devices_check(rng):
    number = int(rng.integers(1000, 10000))
    first, second = f"device{number}a", f"device{number}b"
    m, k = (int(v) for v in rng.integers(2, 5, size=2))
    n = inputs(fw.Graph(), X=("Placeholder", (None, k)),
               W=("Variable", rng.standard_normal((k, k))))
    product = n["X"] @ n["W"]
    n["h"] = mini.tanh(product)
    product.device = n["h"].device = first
    n["loss"] = mini.sum(n["h"] * n["h"]) + mini.sum(mini.exp(-n["h"]))
    n["grad_W"], = fw.gradients(n["loss"], [n["W"]])
    multiplies = [node for node in fw.prune([n["loss"], n["grad_W"]])
                  if node.fun is not None and node.fun.__name__ == "multiply"]
    for node in multiplies:
        node.device = second
    entries, at = description_of([n["loss"], n["grad_W"]], n)
    calls = {first: {"matmul": 1, "tanh": 1}, second: {"multiply": len(multiplies)}}
    return _session_case(
        f"session_run([loss, grad_W]) where X @ W and tanh have device '{first}' and each of the "
        f"{len(multiplies)} multiply nodes device '{second}' (two backends that record what they "
        "compute); the other Operations have no device", entries,
        [_run("session_run([loss, grad_W], feed_dict)", [at["loss"], at["grad_W"]],
              {at["X"]: rng.standard_normal((m, k))})], devices=calls,
        hint="compute an Operation whose node.device is not None inside "
             "`with mini.use_backend(node.device):`, and one whose device is None with "
             "whatever backend is in use, leaving it in use afterwards. " + SESSION_HINT)


def session_dict_and_wrong_feed_check(rng):
    size = int(rng.integers(2, 6))
    key, weights = (f"{word}_{int(rng.integers(100, 1000))}" for word in ("loss", "weights"))
    n = inputs(fw.Graph(), x=("Placeholder", (None,)),
               **{weights: ("Variable", rng.standard_normal(size))})
    n["y"] = mini.tanh(n[weights] * n["x"])
    n["loss"] = mini.sum(n["y"] * n["y"])
    entries, at = description_of([n["loss"]], n)
    x0 = rng.standard_normal(size)
    return _session_case(
        f"session_run with a dict of fetches {{'{key}': loss, 'y': y}} for y = tanh(w * x), loss "
        f"= sum(y^2), then with a feed_dict that also feeds the Variable w (named '{weights}')",
        entries, [_run(f"session_run({{'{key}': loss, 'y': y}}, feed_dict)",
                       {key: at["loss"], "y": at["y"]}, {at["x"]: x0}),
                  _run("feeding the Variable w", at["loss"], {at["x"]: x0, at[weights]: x0},
                       error=("TypeError", weights))],
        hint="a dict of fetches gives a dict with the same keys; a key of feed_dict that is not a "
             "Placeholder raises TypeError naming that node (repr(node) names it). "
             + SESSION_HINT)


STORED = "values left on the nodes after the runs"
COMPUTED = ": nodes computed"


def _values(check):
    """What ``check``'s runs returned and left in the Variables, not how (which nodes were
    computed, what was stored on them): a behaviour of its own each."""
    return focused(check, lambda key: key != STORED and not key.endswith(COMPUTED),
                   f"{check.__name__}_values")


def _computed_once(check):
    return focused(check, lambda key: key.endswith(COMPUTED), f"{check.__name__}_computed")


def _nothing_stored(check):
    return focused(check, lambda key: key == STORED, f"{check.__name__}_stored")


CHECKS = {
    "the fetches' values": (5, [_values(check) for check in [
        session_running_example_check, session_linear_check, _random_graph_check(8),
        _random_graph_check(16), session_backward_graph_check]]),
    "feeds: what a fetch needs, and nothing that is not a Placeholder": (
        2, [_values(session_feeds_check), _values(session_dict_and_wrong_feed_check)]),
    "each node computed once, and only those the fetches need": (
        2, [_computed_once(session_once_check), _computed_once(_random_graph_check(16))]),
    "no value left on the nodes": (2, [_nothing_stored(_random_graph_check(8)),
                                       _nothing_stored(session_drives_training_check)]),
    "training: runs of train_op change the Variables": (
        2, [_values(session_drives_training_check)]),
    "a chain too long for recursion": (1, [_values(session_long_chain_check)]),
    "each node run by its device's backend": (1, [_values(session_devices_check)]),
}
