"""Student half of lab 4's checks: the student's functions called on framework graphs built from
plain descriptions, and what they build described as plain data again
(:mod:`autograder.probes.lab4_graphs` says how a graph crosses between the halves).

Nothing here runs a graph: the only values computed here are what the student's own code computes
(``session_run``, the classifier on arrays), the student's update node fed gradient values the
grader computed, and folded constants the grader sent.  Orders a stand-in needs (``prune``) and the
folding a stand-in does come from the grader (:class:`autograder.probes.Grader`).
"""
import contextlib
import functools

import numpy as np

import mini
from autograder.probes import probe, to_plain
from mini import backend, primitives
from mini import framework as fw
from autograder.probes.lab4_graphs import (NOT_MINIS, build, describe, describe_nodes, input_node,
                                          listed, plain, position_of, what_was_built)


# ---------------------------------------------------------------------------------------------
# session_run
# ---------------------------------------------------------------------------------------------

class _Recording(backend.NumpyBackend):
    """numpy's operations, each call written down as ``[device, operation]`` in ``log``."""

    OPERATIONS = ("matmul", "add", "subtract", "multiply", "divide", "maximum", "exp", "log",
                  "tanh", "sum")

    def __init__(self, name, log):
        self.name = name
        for operation in self.OPERATIONS:
            setattr(self, operation, self._recorded(operation, log))

    def _recorded(self, operation, log):
        fun = getattr(backend.NumpyBackend, operation)

        def call(*args, **kwargs):
            log.append([self.name, operation])
            return fun(*args, **kwargs)
        return call


@contextlib.contextmanager
def recording_backends(names):
    """Backends called ``names``, registered with mini in this process (the student's) for the
    block, that write down what they compute in the list this yields; the backend in use
    before is in use again afterwards."""
    log, saved_ops = [], backend.ops
    for name in names:
        backend.register(name, functools.partial(_Recording, name, log))
    try:
        yield log
    finally:
        for name in names:
            backend.unregister(name)
        backend.ops = saved_ops


def _counted(fun, counts, position):
    """``fun`` as a primitive of the same name that counts its computations in ``counts``."""
    def computed(*args, **kwargs):
        counts[position] = counts.get(position, 0) + 1
        return fun.fun(*args, **kwargs)
    counting = primitives.Primitive(computed, name=fun.__name__)
    counting.stateful = getattr(fun, "stateful", False)
    return counting


def _update_asking(grader, variables):
    """The stand-in for the optimizer's update: each time it is computed it asks the grader for
    the Variables' next values from their values now and the gradient values it received."""
    def step(*grad_values):
        new = grader.stand_in("gradient_step", [variable.value for variable in variables],
                              list(grad_values))
        for variable, value in zip(variables, new):
            variable.assign(value)
    update = primitives.Primitive(step, name="GradientDescent")
    update.stateful = True
    return update


@probe
def session_runs(student, grader, graph, runs, report=(), devices=(), update=None):
    """The student's session_run on the described graph, run after run (``runs``: fetches by
    position, feeds, Variables assigned first); per run what it returned or raised, how often
    it computed each Operation and which nodes it left a value on.  ``update``, if given, is the
    Variables (positions) an Operation ``"not mini's: GradientDescent"`` steps; ``devices`` are
    backends registered to record what they compute; ``report`` the Variables whose values to
    report after the runs."""
    variables, counts = [], {}
    nodes = build(graph, extra={f"{NOT_MINIS}GradientDescent": _update_asking(grader, variables)})
    variables += [nodes[i] for i in (update or ())]
    for position, node in enumerate(nodes):
        if isinstance(node, fw.Operation):
            node.fun = _counted(node.fun, counts, position)
    before = backend.get_backend()
    with recording_backends(list(devices)) as log:
        outcomes = [_run(student, nodes, run, counts) for run in runs]
        after = backend.get_backend()
    return {"runs": outcomes, "after": {i: plain(nodes[i].value) for i in report},
            "backend before": before, "backend after": after, "backend calls": log}


def _run(student, nodes, run, counts):
    for position, value in run["assign"].items():
        nodes[position].assign(value)
    fetches = run["fetches"]
    fetches = ({key: nodes[i] for key, i in fetches.items()} if isinstance(fetches, dict) else
               [nodes[i] for i in fetches] if isinstance(fetches, list) else nodes[fetches])
    constants = {i: node.value for i, node in enumerate(nodes) if isinstance(node, fw.Constant)}
    counts.clear()
    try:
        outcome = {"returned": _values(student.session_run(
            fetches, {nodes[i]: value for i, value in run["feed"].items()}))}
    except Exception as error:          # what it raised is part of what is checked
        outcome = {"raised": type(error).__name__, "message": str(error)[:300]}
    outcome["computed"] = dict(counts)
    outcome["stored"] = [node.name for i, node in enumerate(nodes)
                         if (node.value is not constants[i] if i in constants
                             else not isinstance(node, fw.Variable) and node.value is not None)]
    return outcome


def _values(returned):
    """What session_run returned, as plain data: values in lists and dicts."""
    if isinstance(returned, dict):
        return {str(key): _values(value) for key, value in returned.items()}
    if isinstance(returned, (list, tuple)):
        return [_values(value) for value in returned]
    if isinstance(returned, (np.ndarray, np.generic)):
        return plain(np.array(returned))            # a copy: later runs may change the array
    if returned is None or isinstance(returned, (int, float)):
        return returned
    return f"not a value: {type(returned).__name__} {returned!r:.60}"


# ---------------------------------------------------------------------------------------------
# gradients and sgd_update
# ---------------------------------------------------------------------------------------------

@probe
def gradients_built(student, grader, graph, loss, wrt):
    """The backward graph the student's gradients builds on the described graph, and whether
    building it computed anything."""
    nodes = build(graph)
    returned = listed(student.gradients(nodes[loss], [nodes[i] for i in wrt]), "gradients")
    uncomputed = all(node.value is None for node in nodes
                     if not isinstance(node, (fw.Variable, fw.Constant)))
    return {**what_was_built(returned, nodes), "forward graph left uncomputed": uncomputed}


@probe
def sgd_steps(student, grader, graph, variables, grads, learning_rate, steps):
    """The student's update node on the described graph, its forward called once per step with
    the gradient values the grader computes for the Variables' values then (what a Session
    would hand it); the Variables after each step, and whether it left the arrays it read (the
    Variables' old ones, the gradient values) as they were."""
    nodes = build(graph)
    held = [node for node in nodes if isinstance(node, fw.Variable)]
    before = [(node.value, node.value.copy()) for node in held]
    update = student.sgd_update([nodes[i] for i in variables], [nodes[i] for i in grads],
                                learning_rate)
    kept = all(node.value is value and np.array_equal(value, copy)
               for node, (value, copy) in zip(held, before))
    if not isinstance(update, fw.Tensor) or update.fun is None:
        raise TypeError(f"sgd_update should return an Operation node (a primitive called on the "
                        f"gradient nodes), got {type(update).__name__} {update!r:.60}")
    after = []
    for step in range(steps):
        values = grader.stand_in("gradients", step, [plain(node.value) for node in held])
        given = {id(nodes[i]): value for i, value in zip(grads, values)}
        arrays = [(node.value, node.value.copy()) for node in held]
        handed = [(value, np.copy(value)) for value in given.values()]
        update.forward(*_arguments(update, given))
        kept_old = all(np.array_equal(value, copy) for value, copy in arrays)
        after.append({"Variables": [plain(np.array(node.value)) for node in held],
                      "old arrays kept": kept_old,
                      "gradient values kept": all(np.array_equal(value, copy)
                                                  for value, copy in handed)})
    return {"building changed no Variable": kept, "steps": after,
            "stateful": bool(getattr(update.fun, "stateful", False))}


def _arguments(node, given):
    """The arguments of ``node``'s forward: its numbers, and at each parent's position the value
    ``given`` for it ({id(node): value}) or a Variable's own value."""
    args = list(node.args)
    for argnum, parent in zip(node.parent_argnums, node.parents):
        if id(parent) in given:
            args[argnum] = given[id(parent)]
        elif isinstance(parent, fw.Variable):
            args[argnum] = parent.value
        else:
            raise ValueError(f"the update node reads {parent!r}, which is not one of the gradient "
                             "nodes sgd_update was given: call your primitive on the gradient "
                             "nodes themselves, so that a Session hands it their values")
    return args


# ---------------------------------------------------------------------------------------------
# The classifier
# ---------------------------------------------------------------------------------------------

@probe
def classifier_built(student, grader, graph, names, what, arrays=None):
    """The graph of the student's classifier_logits (``what`` "logits") or of classifier_loss on
    it ("model") on the described Variables and Placeholders; classifier_logits on the plain
    ``arrays`` too, if given."""
    nodes = build(graph)
    params = {name: nodes[i] for name, i in names["params"].items()}
    end = student.classifier_logits(params, nodes[names["ids"]], nodes[names["mask"]])
    if what == "model":
        end = student.classifier_loss(end, nodes[names["labels"]])
    outcome = what_was_built([end], nodes)
    if arrays is not None:
        outcome["on arrays"] = _values(student.classifier_logits(arrays["params"], arrays["ids"],
                                                                 arrays["mask"]))
    return outcome


@probe
def classifier_loss_built(student, grader, graph, logits, labels):
    """The graph of the student's classifier_loss on the described Placeholders."""
    nodes = build(graph)
    return what_was_built([student.classifier_loss(nodes[logits], nodes[labels])], nodes)


@probe
def training_step_built(student, grader, initial, learning_rate):
    """What the student's build_training_step builds, with ``minimize`` a stand-in that records
    how it is called and returns a node of its own."""
    calls, copies = [], {name: value.copy() for name, value in initial.items()}

    def minimize(loss, learning_rate):
        marker = primitives.Primitive(lambda *values: None, name="minimize_stand_in")
        marker.stateful = True
        calls.append((loss, learning_rate, marker(loss)))
        return calls[-1][2]

    with student.using(minimize=minimize):
        built = student.build_training_step(initial, learning_rate)
    keys = ["graph", "params", "ids", "mask", "labels", "logits", "loss", "train_op"]
    if not isinstance(built, dict) or not set(keys) <= set(built):
        raise TypeError(f"build_training_step should return a dict with the keys "
                        f"{', '.join(keys)}, got {built!r:.120}")
    params = built["params"]
    named = [built[key] for key in ("ids", "mask", "labels", "logits", "loss")]
    named += list(params.values())
    outcome = what_was_built(named, ())
    where = dict(zip(["ids", "mask", "labels", "logits", "loss", *params], outcome["returned"]))
    return {"graph": outcome["graph"], "where": where,
            "minimize": [[loss is built["loss"], rate] for loss, rate, _ in calls],
            "train_op is what minimize returned": bool(calls) and built["train_op"] is calls[-1][2],
            "initial_params left as they were": all(
                np.array_equal(initial[name], copies[name]) for name in initial),
            "each parameter is a Variable": all(
                isinstance(node, fw.Variable) for name, node in params.items() if name in initial)}


# ---------------------------------------------------------------------------------------------
# The passes: prune, fold_constants, eliminate_common_subexpressions, optimize, place
# ---------------------------------------------------------------------------------------------

def stateful_counter(calls):
    """A primitive with a side effect (it counts its calls in ``calls``), marked stateful like
    the optimizer's update."""
    def count(value):
        calls.append(1)
        return value
    counter = primitives.Primitive(count, name="stateful_counter")
    counter.stateful, counter.calls = True, calls
    return counter


def _asked_prune(grader):
    """prune's stand-in: the grader orders the nodes the fetches depend on (described) and this
    returns them in that order."""
    def prune(fetches):
        fetches = listed(fetches, "prune's argument")
        entries, nodes = describe(fetches)
        position = {id(node): i for i, node in enumerate(nodes)}
        order = grader.stand_in("prune", entries, [position[id(fetch)] for fetch in fetches])
        return [nodes[i] for i in order]
    return prune


def _asked_fold(grader):
    """fold_constants' stand-in: the grader folds the described graph and sends back what stands
    for each fetch, built here on the nodes it was given."""
    def fold_constants(fetches):
        fetches = listed(fetches, "fold_constants' argument")
        entries, nodes = describe(fetches)
        position = {id(node): i for i, node in enumerate(nodes)}
        folded, stand_ins = grader.stand_in("fold_constants", entries,
                                            [position[id(fetch)] for fetch in fetches])
        built = build(folded, nodes, fetches[0].graph)
        return [built[i] for i in stand_ins]
    return fold_constants


STAND_INS = {"prune": _asked_prune, "fold_constants": _asked_fold}


@probe
def pass_result(student, grader, graph, fetches, pass_name, stand_ins=()):
    """What the student's pass (``fold_constants``, ``eliminate_common_subexpressions``,
    ``optimize``) makes of the described graph's fetches, with the stand-ins named; whether it
    left the graph as it was; how often the stateful counter ran while it did."""
    calls = []
    nodes = build(graph, extra={f"{NOT_MINIS}stateful_counter": stateful_counter(calls)})
    before = to_plain(describe_nodes(nodes))
    with student.using(**{name: STAND_INS[name](grader) for name in stand_ins}):
        result = getattr(student, pass_name)([nodes[i] for i in fetches])
    counts = None
    if pass_name == "optimize":
        if not isinstance(result, tuple) or len(result) != 2:
            raise TypeError(f"optimize should return (stand-ins, counts), got {result!r:.80}")
        result, counts = result
        counts = {str(key): plain(value) for key, value in dict(counts).items()}
    return {**what_was_built(listed(result, pass_name), nodes), "counts": counts,
            "graph unchanged": to_plain(describe_nodes(nodes)) == before,
            "stateful calls": len(calls)}


@probe
def pruned(student, grader, graph, fetches):
    """The positions, in the order the student's prune listed them (None: not a node here)."""
    nodes = build(graph)
    order = listed(student.prune([nodes[i] for i in fetches]), "prune")
    at = {id(node): i for i, node in enumerate(nodes)}
    return [at.get(id(item)) for item in order]


@probe
def placed(student, grader, graph, fetches, devices, default):
    """The student's place on the described graph (prune asked of the grader): what it returned,
    every node's device afterwards, and whether it changed anything else."""
    nodes = build(graph)
    before = to_plain([entry[:-1] if entry[0] == "Operation" else entry
                       for entry in describe_nodes(nodes)])
    with student.using(prune=_asked_prune(grader)):
        counts = student.place([nodes[i] for i in fetches], devices, default)
    after = to_plain([entry[:-1] if entry[0] == "Operation" else entry
                      for entry in describe_nodes(nodes)])
    return {"returned": ({plain(key): plain(value) for key, value in counts.items()}
                         if isinstance(counts, dict) else _values(counts)),
            "devices": [plain(node.device) for node in nodes],
            "graph otherwise unchanged": after == before}


def signature_pairs(number, m):
    """``[(label, p, q)]``: pairs of Operations over Placeholders x, y of shape (m, m), t = tanh(x),
    ``number`` written into some; the last pair is tanh(x) twice, the second on device "numpy"."""
    graph = fw.Graph()
    x, y = (input_node(graph, "Placeholder", name, (m, m)) for name in ("x", "y"))
    t = mini.tanh(x)
    on_numpy = mini.tanh(x)
    on_numpy.device = "numpy"
    return [
        ("tanh(x), tanh(x)", mini.tanh(x), mini.tanh(x)),
        ("tanh(x), tanh(y)", mini.tanh(x), mini.tanh(y)),
        ("tanh(x), exp(x)", mini.tanh(x), mini.exp(x)),
        (f"{number} * t, {number} * t", number * t, number * t),
        (f"{number} * t, {number + 1} * t", number * t, (number + 1) * t),
        (f"t * {number}, {number} * t", t * number, number * t),
        ("sum(t, axis=0), sum(t, axis=1)", mini.sum(t, axis=0), mini.sum(t, axis=1)),
        ("sum(t, axis=0), sum(t, axis=0)", mini.sum(t, axis=0), mini.sum(t, axis=0)),
        ("t[:, None], t[:, None]", t[:, None], t[:, None]),
        ("t[0], t[1]", t[0], t[1]),
        ("t - x, x - t", t - x, x - t),
        ("t + x, x + t", t + x, x + t),
        (f"maximum(t, {number}), maximum({number}, t)", mini.maximum(t, number),
         mini.maximum(number, t)),
        ("tanh(x) on no device, tanh(x) on 'numpy'", mini.tanh(x), on_numpy),
    ]


@probe
def signatures(student, grader, number, m):
    """For each pair of :func:`signature_pairs`, whether the student's signatures are equal."""
    result = {}
    for label, p, q in signature_pairs(number, m):
        first, second = student.signature(p), student.signature(q)
        hash(first)
        result[label] = bool(first == second)
    return result


# ---------------------------------------------------------------------------------------------
# An Operation of one's own, minimize, and the central-difference check
# ---------------------------------------------------------------------------------------------

OPERATION = f"{NOT_MINIS}sigmoid_cross_entropy"
"""How a description names the student's Operation, whatever its function is called."""


def _student_operation(student):
    operation = student.sigmoid_cross_entropy
    if not isinstance(operation, primitives.Primitive):
        raise TypeError(f"sigmoid_cross_entropy should be a primitive of mini (made with "
                        f"mini.primitive), got {type(operation).__name__} {operation!r:.60}")
    return operation


def _shares(operation, g, ans, z, y):
    """What the two VJPs of ``operation`` return (or a string saying what went wrong)."""
    shares = []
    for argnum in (0, 1):
        try:
            shares.append(primitives.vjp_of(operation, argnum)(g, ans, z, y))
        except Exception as error:         # a missing or failing VJP is what is reported
            shares.append(f"raised {type(error).__name__}: {str(error)[:200]}")
    return shares


@probe
def operation_on_arrays(student, grader, z, y, g):
    """The student's Operation on arrays: its forward, and its VJPs for the upstream gradient
    ``g`` (the backward, as a backward pass calls it)."""
    operation = _student_operation(student)
    with np.errstate(all="ignore"):
        ans = operation(z, y)
        shares = _shares(operation, g, ans, z, y)
    return {"forward": _values(ans), "vjp z": _values(shares[0]), "vjp y": _values(shares[1])}


@probe
def operation_on_nodes(student, grader, graph, z, y, g):
    """The graph the student's Operation and its VJPs build on the described Placeholders
    (what gradients() makes of it), with the Operation named :data:`OPERATION`."""
    operation = _student_operation(student)
    nodes = build(graph)
    ans = operation(nodes[z], nodes[y])
    items = [ans, *_shares(operation, nodes[g], ans, nodes[z], nodes[y])]
    built = [item for item in items if isinstance(item, fw.Tensor)]
    entries, described = describe(built, nodes)
    for entry, node in zip(entries, described):
        if entry[0] == "Operation" and node.fun is operation:
            entry[2] = OPERATION
    return {"graph": entries, "returned": position_of(items, described)}


@probe
def minimize_calls(student, grader, graph, loss, learning_rate):
    """The student's minimize on the described graph, with gradients and sgd_update stand-ins
    that record what they are handed: gradients returns one node per variable, sgd_update a
    marker of its own."""
    nodes = build(graph)
    asked, handed, marker = [], [], object()

    def gradients(of, variables):
        variables = list(variables)
        grads = [primitives.Primitive(lambda value: value, name="gradient_stand_in")(variable)
                 for variable in variables]
        asked.append((of, variables, grads))
        return grads

    def sgd_update(variables, grads, learning_rate):
        handed.append((list(variables), list(grads), learning_rate))
        return marker

    try:
        with student.using(gradients=gradients, sgd_update=sgd_update):
            returned = student.minimize(nodes[loss], learning_rate)
    except Exception as error:          # what it raised is part of what is checked
        return {"raised": type(error).__name__, "message": str(error)[:300]}
    return {"gradients": [[of is nodes[loss], position_of(variables, nodes)]
                          for of, variables, _ in asked],
            "sgd_update": [[position_of(variables, nodes),
                            bool(asked) and len(grads) == len(asked[-1][2])
                            and all(a is b for a, b in zip(grads, asked[-1][2])), plain(rate)]
                           for variables, grads, rate in handed],
            "returned sgd_update's node": returned is marker}


@probe
def numerical_estimates(student, grader, graph, loss, variables, feed, h):
    """The student's numerical_gradients on the described graph, with a session_run stand-in
    that the grader answers (it runs the graph with the Variables' values of that moment); the
    estimates, and whether every Variable holds what it held before, in an unchanged array."""
    nodes = build(graph)
    at = {id(node): i for i, node in enumerate(nodes)}
    held = [i for i, node in enumerate(nodes) if isinstance(node, fw.Variable)]
    before = {i: (nodes[i].value, nodes[i].value.copy()) for i in held}

    def session_run(fetches, feed_dict=None):
        one = not isinstance(fetches, (list, tuple))
        fetched = [fetches] if one else list(fetches)
        values = grader.stand_in("run", [at.get(id(node)) for node in fetched],
                                 {i: nodes[i].value for i in held},
                                 {at.get(id(node)): value
                                  for node, value in (feed_dict or {}).items()})
        return values[0] if one else values

    with student.using(session_run=session_run):
        estimates = listed(student.numerical_gradients(
            nodes[loss], [nodes[i] for i in variables],
            {nodes[i]: value for i, value in feed.items()}, h), "numerical_gradients")
    return {"estimates": [_values(estimate) for estimate in estimates],
            "Variables as they were": all(
                np.array_equal(nodes[i].value, copy) and np.array_equal(value, copy)
                for i, (value, copy) in before.items())}
