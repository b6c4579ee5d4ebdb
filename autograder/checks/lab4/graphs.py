"""Lab 4's graphs on the grader's side: drawing them, describing them for the student half,
building again what the student half describes, and running graphs with mini's Session.

Everything here is a function of its arguments and builds in a Graph of its own, without
``Graph.as_default`` or ``device(...)`` (they swap the process's default graph and device, and the
pytest path grades submissions in threads): inputs are made by
:func:`autograder.probes.lab4_graphs.input_node`, operations by calling mini's primitives on nodes
(an operation joins its parents' graph).  Nothing here ever runs an Operation with a device, so no
backend is swapped either.
"""
import collections
import re

import numpy as np

import mini
from autograder.checks.programs import random_program as drawn_program
from autograder.checks.programs import run_steps
from autograder.probes.lab4_graphs import build, describe_nodes, input_node
from mini import framework as fw

# ---------------------------------------------------------------------------------------------
# Graphs to describe
# ---------------------------------------------------------------------------------------------


def inputs(graph, **specs):
    """``{name: node}`` of ``graph`` from ``name=(kind, value)``: a Placeholder's value is its
    shape, or ``(shape, dtype)``."""
    nodes = {}
    for name, (kind, value) in specs.items():
        if kind == "Placeholder" and isinstance(value, tuple) and len(value) == 2 \
                and isinstance(value[1], str):
            nodes[name] = input_node(graph, kind, name, value[0], value[1])
        else:
            nodes[name] = input_node(graph, kind, name, value)
    return nodes


def description_of(ends, named=None):
    """``(entries, positions)``: the nodes ``ends`` depend on, in mini's prune order, described
    for the student half; ``named`` (``{name: node}``) are given those names first, and
    ``positions`` says where each of them is."""
    for name, node in (named or {}).items():
        node.name = name
    nodes = fw.prune(list(ends))
    at = {id(node): i for i, node in enumerate(nodes)}
    return describe_nodes(nodes), {name: at[id(node)] for name, node in (named or {}).items()}


def copy_of(entries, extra=None):
    """``(graph, nodes)``: the described graph built again, for the grader alone."""
    graph = fw.Graph()
    return graph, build(entries, graph=graph, extra=extra)


def without_devices(entries):
    """The description with every Operation's device taken off (the grader runs a graph on the
    backend in use; which backend computes what is read from the student half's record)."""
    return [entry[:-1] + [None] if entry[0] == "Operation" else entry for entry in entries]


def run(graph, fetches, feed=None):
    """mini's Session on ``fetches`` of ``graph``."""
    return fw.Session(graph).run(fetches, feed or {})


def homed(stand_ins, graph):
    """``stand_ins`` and every node they depend on made nodes of ``graph``: mini's
    fold_constants builds its Constants in the default graph it sets, which another thread may
    have set to another graph in the meantime."""
    for node in fw.prune(stand_ins):
        node.graph = graph
    return stand_ins


# ---------------------------------------------------------------------------------------------
# What the student half describes, built again
# ---------------------------------------------------------------------------------------------

def built_back(entries, known, graph, extra=None):
    """The nodes of a description the student half sent (in any order, ``["original", i]`` for
    ``known[i]``), built with mini in ``graph``, in the description's order.  A description
    that is not one (a node reading itself, a primitive that is not mini's) raises ValueError."""
    if not isinstance(entries, list) or len(entries) > 20_000:
        raise ValueError("the description of a graph should be a list of nodes")
    order = _topological(entries)
    new_position = {old: new for new, old in enumerate(order)}
    ordered = [_renumbered(entries[old], new_position) for old in order]
    nodes = build(ordered, known, graph, extra)
    return [nodes[new_position[old]] for old in range(len(entries))]


def _parent_positions(entry, count):
    if not (isinstance(entry, list) and entry and entry[0] == "Operation" and len(entry) == 8):
        return []
    parents = entry[4]
    if not isinstance(parents, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and 0 <= p < count for p in parents):
        raise ValueError(f"operation {str(entry[1])[:40]!r} reads nodes that are not described")
    return parents


def _topological(entries):
    """The positions of ``entries`` in an order where each comes after the ones it reads."""
    parents = [_parent_positions(entry, len(entries)) for entry in entries]
    waiting = [len(p) for p in parents]
    readers = [[] for _ in entries]
    for position, read in enumerate(parents):
        for parent in read:
            readers[parent].append(position)
    ready = collections.deque(i for i, count in enumerate(waiting) if count == 0)
    order = []
    while ready:
        position = ready.popleft()
        order.append(position)
        for reader in readers[position]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                ready.append(reader)
    if len(order) < len(entries):
        raise ValueError("the nodes described read each other in a cycle")
    return order


def _renumbered(entry, new_position):
    if isinstance(entry, list) and entry and entry[0] == "Operation" and len(entry) == 8:
        return entry[:4] + [[new_position[p] for p in entry[4]]] + entry[5:]
    return entry


def student_graph(entries, observed, extra=None):
    """``(graph, nodes of the description the student half sent, what each returned item is)``,
    on a copy of the graph ``entries`` describes: a returned item is a node, or the string the
    student half wrote for something that is not one."""
    graph, known = copy_of(entries, extra)
    nodes = built_back(observed["graph"], known, graph, extra)
    returned = [nodes[item] if isinstance(item, int) and not isinstance(item, bool) else str(item)
                for item in observed["returned"]]
    return graph, known, returned


def values_or_problem(graph, fetched, feed, what):
    """mini's Session on ``fetched`` (nodes; a string among them is reported as it is), or a
    sentence saying that running it raised."""
    strings = [item for item in fetched if isinstance(item, str)]
    if strings:
        return f"{what}: {strings[0]}"
    try:
        with np.errstate(all="ignore"):     # an inf is reported as a value, not as a warning
            return run(graph, list(fetched), feed)
    except Exception as error:           # the student's graph does not compute
        return f"running {what} raised {type(error).__name__}: {str(error)[:300]}"


# ---------------------------------------------------------------------------------------------
# Orders
# ---------------------------------------------------------------------------------------------

OK = "once, after all of its inputs"


def order_report(listed, parents, fetches, names):
    """Per node the fetches need: listed once, after all of its inputs?  Plus what else the
    order holds.  ``listed`` holds positions (None: not a node of the graph), ``parents`` the
    positions each node reads."""
    if not isinstance(listed, list):
        raise TypeError("the order should be a list of positions")
    needed, first = ancestors(parents, fetches), {}
    counts = collections.Counter(listed)
    for at, position in enumerate(listed):
        first.setdefault(position, at)
    report = {}
    for position in sorted(needed):
        late = [p for p in parents[position] if first.get(p, -1) > first.get(position, -1)]
        name = f"node {names[position]}"
        report[name] = ("missing" if not counts[position] else
                        f"listed {counts[position]} times" if counts[position] > 1 else
                        f"before its input {names[late[0]]}" if late else OK)
    extra = sorted({names[p] for p in listed if p is not None and p in names and p not in needed})
    strangers = sum(p not in names for p in listed)
    report["other items"] = ", ".join(
        ([f"{', '.join(extra)} (no fetch needs them)"] if extra else [])
        + ([f"{strangers} item(s) that are not nodes of this graph"] if strangers else [])
    ) or "none"
    return report


def ancestors(parents, ends):
    """The positions ``ends`` depend on, themselves included."""
    seen, stack = set(ends), list(ends)
    while stack:
        for parent in parents[stack.pop()]:
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen


def parents_of(entries):
    """``[[positions each node reads]]`` of a description the grader made."""
    return [entry[4] if entry[0] == "Operation" else [] for entry in entries]


def names_of(entries):
    return {i: str(entry[1]) for i, entry in enumerate(entries)}


def prune_order(parents, fetches):
    """mini's prune of a structure (who reads whom, by position), as positions."""
    if not isinstance(parents, list) or len(parents) > 20_000 or not isinstance(fetches, list):
        raise ValueError("prune's question should be two lists")
    nodes = [mini.Node(name=str(i)) for i in range(len(parents))]
    for node, read in zip(nodes, parents):
        node.parents = tuple(nodes[p] for p in read)
    at = {id(node): i for i, node in enumerate(nodes)}
    return [at[id(node)] for node in fw.prune([nodes[i] for i in fetches])]


def asked_prune(known):
    """prune's stand-in for a check: mini's prune of a graph the student half describes,
    answered only for a graph made of that check's (``known``, a :class:`CaseGraph`)."""
    def prune(entries, fetches):
        known.holds(entries)
        return prune_order(parents_of(entries), fetches)
    return prune


def asked_fold(known):
    """fold_constants' stand-in for a check: mini's fold_constants on the graph the student half
    described (made of that check's, ``known``), sent back as ``(description of the new nodes,
    position of each stand-in)``, the nodes it was sent standing for themselves
    (``["original", i]``).  The Constants it makes become the check's too."""
    def fold_constants(entries, fetches):
        known.holds(entries)
        graph = fw.Graph()
        nodes = built_back(entries, (), graph)
        stand_ins = homed(fw.fold_constants([nodes[i] for i in fetches]), graph)
        order = fw.prune(stand_ins)
        at = {id(node): i for i, node in enumerate(order)}
        answer = describe_nodes(order, nodes)
        known.learn(answer)
        return answer, [at[id(node)] for node in stand_ins]
    return fold_constants


class CaseGraph:
    """The graph of one check, as the stand-ins it hands out may see it: its nodes, and copies of
    them a pass makes (an Operation rebuilt on other parents), and what a stand-in handed out
    for it (a folded Constant).  A graph that is not made of these is another check's, and the
    stand-ins do not answer for it."""

    def __init__(self, entries):
        self.leaves, self.operations = set(), set()
        self.learn(entries)

    def learn(self, entries):
        for entry in entries:
            if isinstance(entry, list) and entry and entry[0] == "Operation":
                self.operations.add(_operation_key(entry))
            elif isinstance(entry, list) and entry and entry[0] != "original":
                self.leaves.add(repr(entry))

    def holds(self, entries):
        """ValueError unless every described node is one of the check's, or a copy of one."""
        if not isinstance(entries, list) or not all(
                isinstance(entry, list) and entry and (
                    repr(entry) in self.leaves if entry[0] != "Operation"
                    else _operation_key(entry) in self.operations) for entry in entries):
            raise ValueError("this stand-in answers for the graph of its own check only")


def _operation_key(entry):
    """An Operation's own part: kind, name, primitive, numbers, argument positions, keyword
    arguments (not which nodes it reads: a pass's copy reads other ones, nor the count a graph
    adds to a name it holds already: a copy made in the same graph is ``v9_1`` beside ``v9``)."""
    kind, name, *rest = entry[:4]
    return repr([kind, re.sub(r"_\d+$", "", name) if isinstance(name, str) else name, *rest,
                 *entry[5:7]])


# ---------------------------------------------------------------------------------------------
# Random programs as framework graphs
# ---------------------------------------------------------------------------------------------

MOVES = {"unary": 2, "binary": 3, "square": 1, "constant": 2, "reduce": 1, "matmul": 1}
"""Broadcasting, fan-out, numbers written into operations (2.0 - v), keyword arguments
(sum(v, axis=0)) and products (with the Variable W among others)."""
KINDS = ["Placeholder", "Variable", "Constant"]


def random_program(rng, n_steps):
    """A random program over Placeholders, Variables and Constants, the first three inputs one of
    each and ``W`` a Variable.  Returns ``(program, kinds, fetch names)``: the fetches are the end,
    two steps before it and an input."""
    m, k = (int(d) for d in rng.integers(2, 5, size=2))
    shapes = [(m, k), (k,), (m, 1), ()]
    names = [f"in{i}" for i in range(int(rng.integers(3, 5)))]
    shaped = [(name, shapes[int(rng.integers(len(shapes)))] if i else (m, k))
              for i, name in enumerate(names)]
    program = drawn_program(rng, shaped + [("W", (k, k))], n_steps, MOVES)
    kinds = {name: KINDS[i] if i < 3 else str(rng.choice(KINDS)) for i, name in enumerate(names)}
    kinds["W"] = "Variable"
    steps = [name for name, _, _, _, _ in program[1]]
    middle = [steps[int(i)] for i in rng.choice(len(steps) - 1, size=2, replace=False)]
    return program, kinds, [steps[-1]] + middle + [str(rng.choice(list(kinds)))]


def random_constant_program(rng, n_steps):
    """A random program whose inputs are mostly Constants (some Placeholders and Variables), so
    that much of it folds.  Two fetches are sure to be there: ``tanh(W)``, ``W`` a Variable (an
    operation on a Variable must not fold), and ``exp(in0)``, ``in0`` a Constant (it must)."""
    (inputs_, steps), _, fetches = random_program(rng, n_steps)
    kinds = {name: str(rng.choice(["Constant", "Constant", "Placeholder", "Variable"]))
             for name, _ in inputs_}
    kinds.update(W="Variable", in0="Constant")
    sure = [(f"v{len(steps) + 1}", "tanh", ["W"], {}, {}),
            (f"v{len(steps) + 2}", "exp", ["in0"], {}, {})]
    return (inputs_, steps + sure), kinds, fetches[:2] + [step[0] for step in sure]


def program_nodes(program, kinds, graph, twice=False):
    """``{name: node}`` of ``program`` built in ``graph``, each input a node of its kind (a
    Placeholder has the shape of its value, to be fed); with ``twice``, the operations are
    built a second time on the same inputs, as ``<name>_again``: every one a repeat."""
    nodes = {name: input_node(graph, kinds[name], name,
                              np.shape(value) if kinds[name] == "Placeholder" else value)
             for name, value in program[0]}
    nodes = _named(run_steps(program[1], nodes))
    if twice:
        again = run_steps(program[1], {name: nodes[name] for name, _ in program[0]})
        nodes.update(_named({f"{step[0]}_again": again[step[0]] for step in program[1]}))
    return nodes


def _named(nodes):
    for name, node in nodes.items():
        node.name = name
    return nodes


def placeholder_values(program, kinds):
    """What a run feeds: ``{name: value}`` of the program's Placeholders."""
    return {name: value for name, value in program[0] if kinds[name] == "Placeholder"}
