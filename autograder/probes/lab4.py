"""Student half of lab 4's checks: framework graphs built from plain descriptions, the student's
functions called on them, and the graphs they build described as plain data again.

A graph crosses between the halves as a *description*: a list of entries, one per node, each
node's parents given by their position in the list::

    ["Placeholder", name, shape, dtype]
    ["Variable", name, value]          ["Constant", name, value]
    ["Operation", name, primitive, args, parents, parent_argnums, kwargs, device]
    ["original", i]                    node i of the graph the grader sent (in what comes back)

``primitive`` is a primitive's name among mini's (``"tanh"``, ``"mini.nn:one_hot_like"``);
``args`` holds the numbers written into the operation and None where a parent goes.  The grader
draws a graph, describes it, and this half builds it (:func:`build`), calls the student's
function, and describes what that function built (:func:`describe`): the grader rebuilds that
with mini and runs it with mini's Session.  Nothing here runs a graph: the only values computed
here are what the student's own code computes (``session_run``, the classifier on arrays), the
student's update node fed gradient values the grader computed, and folded constants the grader
sent.  Orders a stand-in needs (``prune``) and the folding a stand-in does come from the grader
(:class:`autograder.probes.Grader`).
"""
import contextlib
import functools

import numpy as np

import mini
from autograder.probes import probe, to_plain
from mini import backend, linear, nn, primitives
from mini import framework as fw
from mini import graph as _graph

MODULES = {"mini": mini, "mini.primitives": primitives, "mini.linear": linear, "mini.nn": nn}
"""Where the primitives a description names live."""

NOT_MINIS = "not mini's: "


# ---------------------------------------------------------------------------------------------
# Descriptions: building one, describing a graph
# ---------------------------------------------------------------------------------------------

def primitive_name(fun):
    """``"tanh"`` for ``mini.tanh``, ``"mini.nn:one_hot_like"`` for a primitive of another module
    of mini, ``"not mini's: <name>"`` for any other function."""
    name = getattr(fun, "__name__", type(fun).__name__)
    for module_name, module in MODULES.items():
        if isinstance(name, str) and getattr(module, name, None) is fun:
            return name if module_name == "mini" else f"{module_name}:{name}"
    return f"{NOT_MINIS}{name}"


def primitive_named(name, extra=None):
    """The primitive a description names: one of ``extra`` (``{name: primitive}``), else mini's."""
    if extra and name in extra:
        return extra[name]
    module_name, _, attribute = str(name).rpartition(":")
    fun = getattr(MODULES.get(module_name or "mini"), attribute, None)
    if not isinstance(fun, primitives.Primitive):
        raise ValueError(f"{name!r} is not one of mini's primitives")
    return fun


def input_node(graph, kind, name, value=None, dtype="float64"):
    """A Placeholder (``value`` its shape), Variable or Constant of ``graph``, named ``name``.

    Built without ``Graph.as_default`` (which swaps the process's default graph): the node is
    made, then given its graph and name."""
    if kind == "Placeholder":
        node = fw.Placeholder(value, name, np.dtype(dtype))
    elif kind in ("Variable", "Constant"):
        node = getattr(fw, kind)(value, name)
    else:
        raise ValueError(f"no input of kind {kind!r}")
    node.graph, node.name, node.device = graph, name, None
    graph.size += 1
    return node


def build(entries, known=(), graph=None, extra=None):
    """The nodes a description lists, in its order (parents before the nodes that read them),
    in ``graph`` (a new one if None); ``["original", i]`` is ``known[i]``, and a primitive of
    ``extra`` may stand where a description names one that is not mini's."""
    graph = graph or fw.Graph()
    nodes = []
    for entry in entries:
        if not isinstance(entry, list) or not entry:
            raise ValueError(f"not an entry of a description: {str(entry)[:80]}")
        if entry[0] == "original":
            nodes.append(known[_position(entry[1], len(known))])
        elif entry[0] == "Operation":
            nodes.append(_operation(entry, nodes, graph, extra))
        else:
            nodes.append(input_node(graph, *_input_fields(entry)))
    return nodes


def _input_fields(entry):
    if entry[0] == "Placeholder" and len(entry) == 4:
        shape = None if entry[2] is None else tuple(entry[2])
        return entry[0], str(entry[1]), shape, entry[3]
    if entry[0] in ("Variable", "Constant") and len(entry) == 3:
        return entry[0], str(entry[1]), entry[2]
    raise ValueError(f"not an entry of a description: {str(entry)[:80]}")


def _operation(entry, nodes, graph, extra):
    if len(entry) != 8:
        raise ValueError(f"not an entry of a description: {str(entry)[:80]}")
    _, name, fun, args, parents, argnums, kwargs, device = entry
    args = list(args)
    if len(parents) != len(argnums) or not isinstance(kwargs, dict):
        raise ValueError(f"operation {name!r}: its parents and their positions do not match")
    parents = [nodes[_position(parent, len(nodes))] for parent in parents]
    for argnum, parent in zip(argnums, parents):
        args[_position(argnum, len(args))] = parent
    node = fw.Operation(None, primitive_named(fun, extra), tuple(args), dict(kwargs), parents,
                        tuple(argnums), name=str(name), graph=graph)
    node.name, node.device = str(name), device
    return node


def _position(index, length):
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < length:
        raise ValueError(f"{index!r} is not a position among the {length} nodes before it")
    return index


def describe(ends, known=()):
    """``(entries, nodes)``: every node ``ends`` depend on, described; a node of ``known`` as
    ``["original", its position there]``.  The order is the one ``mini.graph.reachable`` finds
    them in, not a topological one (the grader orders them)."""
    nodes = list({id(node): node for end in ends for node in _graph.reachable(end)}.values())
    return describe_nodes(nodes, known), nodes


def describe_nodes(nodes, known=()):
    """The entries of ``nodes``, whose parents are all among them, in the order given."""
    known_at = {id(node): i for i, node in enumerate(known)}
    position = {id(node): i for i, node in enumerate(nodes)}
    return [["original", known_at[id(node)]] if id(node) in known_at else _entry(node, position)
            for node in nodes]


def _entry(node, position):
    name = str(getattr(node, "name", None))
    if isinstance(node, fw.Placeholder):
        shape = None if node.shape is None else list(node.shape)
        return ["Placeholder", name, shape, node.dtype.name]
    if isinstance(node, (fw.Variable, fw.Constant)):
        kind = "Variable" if isinstance(node, fw.Variable) else "Constant"
        return [kind, name, _plain(node.value)]
    if not isinstance(node, fw.Tensor) or node.fun is None:
        return ["not a framework node", f"{name} ({type(node).__name__})"]
    argnums = [int(argnum) for argnum in node.parent_argnums]
    return ["Operation", name, primitive_name(node.fun),
            [None if i in argnums else _plain(arg) for i, arg in enumerate(node.args)],
            [position[id(parent)] for parent in node.parents], argnums,
            {str(key): _plain(value) for key, value in node.kwargs.items()},
            _plain(node.device)]


def _plain(value):
    """``value`` if it can cross as plain data, else a string saying what it was."""
    try:
        to_plain(value)
        return value
    except TypeError:
        return f"not plain data: {type(value).__name__} {value!r:.60}"


def listed(items, what):
    """``items`` as a list, or TypeError saying what ``what`` returned instead."""
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"{what} should return a list, got {type(items).__name__} {items!r:.80}")
    return list(items)


def _position_of(items, nodes):
    """Each item's position among ``nodes`` (by identity), or a string saying what it is."""
    at = {id(node): i for i, node in enumerate(nodes)}
    return [at[id(item)] if id(item) in at else f"not a node: {type(item).__name__} {item!r:.60}"
            for item in items]


def _outcome(items, known=()):
    """What a function that returns nodes built: the graph under them, and where each one is."""
    nodes = [item for item in items if isinstance(item, fw.Tensor)]
    entries, described = describe(nodes, known)
    return {"graph": entries, "returned": _position_of(items, described)}


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
    return {"runs": outcomes, "after": {i: _plain(nodes[i].value) for i in report},
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
        return _plain(np.array(returned))            # a copy: later runs may change the array
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
    return {**_outcome(returned, nodes), "forward graph left uncomputed": uncomputed}


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
        values = grader.stand_in("gradients", step, [_plain(node.value) for node in held])
        given = {id(nodes[i]): value for i, value in zip(grads, values)}
        arrays = [(node.value, node.value.copy()) for node in held]
        handed = [(value, np.copy(value)) for value in given.values()]
        update.forward(*_arguments(update, given))
        kept_old = all(np.array_equal(value, copy) for value, copy in arrays)
        after.append({"Variables": [_plain(np.array(node.value)) for node in held],
                      "old arrays kept": kept_old,
                      "gradient values kept": all(np.array_equal(value, copy)
                                                  for value, copy in handed)})
    return {"building changed no Variable": kept, "steps": after}


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
    outcome = _outcome([end], nodes)
    if arrays is not None:
        outcome["on arrays"] = _values(student.classifier_logits(arrays["params"], arrays["ids"],
                                                                 arrays["mask"]))
    return outcome


@probe
def classifier_loss_built(student, grader, graph, logits, labels):
    """The graph of the student's classifier_loss on the described Placeholders."""
    nodes = build(graph)
    return _outcome([student.classifier_loss(nodes[logits], nodes[labels])], nodes)


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
    outcome = _outcome(named, ())
    where = dict(zip(["ids", "mask", "labels", "logits", "loss", *params], outcome["returned"]))
    return {"graph": outcome["graph"], "where": where,
            "minimize": [[loss is built["loss"], rate] for loss, rate, _ in calls],
            "train_op is what minimize returned": bool(calls) and built["train_op"] is calls[-1][2],
            "initial_params left as they were": all(
                np.array_equal(initial[name], copies[name]) for name in initial),
            "each Variable holds its own copy": all(
                isinstance(node, fw.Variable) and not np.shares_memory(node.value, initial[name])
                for name, node in params.items() if name in initial)}


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
        counts = {str(key): _plain(value) for key, value in dict(counts).items()}
    return {**_outcome(listed(result, pass_name), nodes), "counts": counts,
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
    return {"returned": ({_plain(key): _plain(value) for key, value in counts.items()}
                         if isinstance(counts, dict) else _values(counts)),
            "devices": [_plain(node.device) for node in nodes],
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
