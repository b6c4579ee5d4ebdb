"""Lab 4's framework graphs as plain data, for the student half of its checks: a graph built
from a description, and a graph described.

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
with mini and runs it with mini's Session.
"""
import numpy as np

import mini
from autograder.probes import to_plain
from mini import framework as fw
from mini import linear, nn, primitives
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
        return [kind, name, plain(node.value)]
    if not isinstance(node, fw.Tensor) or node.fun is None:
        return ["not a framework node", f"{name} ({type(node).__name__})"]
    argnums = [int(argnum) for argnum in node.parent_argnums]
    return ["Operation", name, primitive_name(node.fun),
            [None if i in argnums else plain(arg) for i, arg in enumerate(node.args)],
            [position[id(parent)] for parent in node.parents], argnums,
            {str(key): plain(value) for key, value in node.kwargs.items()},
            plain(node.device)]


def plain(value):
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


def position_of(items, nodes):
    """Each item's position among ``nodes`` (by identity), or a string saying what it is."""
    at = {id(node): i for i, node in enumerate(nodes)}
    return [at[id(item)] if id(item) in at else f"not a node: {type(item).__name__} {item!r:.60}"
            for item in items]


def what_was_built(items, known=()):
    """What a function that returns nodes built: the graph under them, and where each one is."""
    nodes = [item for item in items if isinstance(item, fw.Tensor)]
    entries, described = describe(nodes, known)
    return {"graph": entries, "returned": position_of(items, described)}
