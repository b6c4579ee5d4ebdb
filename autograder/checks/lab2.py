"""Hidden checks of lab 2 (computation graphs: wiring nodes, adjoints by hand, topological order,
evaluation, quiz): the grader half.

Graphs are drawn from the seed as plain programs (names, primitives, operand names, constants:
:mod:`autograder.checks.programs`); the student half (:mod:`autograder.probes.lab2`) builds its
own :class:`mini.graph.Node` objects from them, calls the student's function and answers with
node names and numbers.  Here the same program is built again and the expected result computed
with mini's reference (``mini.graph.toposort``, ``mini.graph.evaluate``,
``mini.backward_pass``), never from numbers written here.

A topological order is not unique, so a toposort check does not compare orders: the student's
order, as names, is turned here into a per-node report ("once, after all of its parents",
"missing", "before its parent v07", ...), and mini's order into the same report.  On a graph
with a cycle, any node on the cycle is a right answer: the names in the error's message are read
here as whole words, so the verdict does not depend on which one a sort happens to name.
``evaluate`` is checked with a stand-in toposort that lists an order computed here (data, in the
task), so that a wrong toposort does not cost the points of evaluate too; the adjoints are
checked on a graph whose values were computed here.
"""
import collections
import re

import numpy as np

import mini
from autograder.checks import Case
from autograder.checks.programs import ancestors, random_program
from autograder.probes.lab2 import build
from mini import graph as _graph

OK = "once, after all of its parents"
RAISED_AS_ASKED = "raised CycleError naming a node on the cycle"

# ---------------------------------------------------------------------------------------------
# Random graphs (programs of autograder.checks.programs)
# ---------------------------------------------------------------------------------------------

MOVES = {"unary": 5, "binary": 8, "square": 1, "constant": 4, "reduce": 2}
"""Elementwise functions, two parents, one parent twice (x * x), numbers and keyword arguments
(axis, keepdims) in operations: everything a Node holds."""


def random_graph(rng, n_inputs, n_operations, chain=False, vectors=False):
    """A random program over ``n_inputs`` inputs ``x1, x2, ...``, numbers or vectors of one
    length (``vectors=True``: all vectors of 2 to 4 numbers); ``chain=True`` makes each operation
    read the one before (one long path, hence one valid order) and one of them square it."""
    width = int(rng.integers(2 if vectors else 1, 5))
    shapes = [(f"x{i + 1}", (width,) if vectors or rng.random() < 0.7 else ())
              for i in range(n_inputs)]
    return random_program(rng, shapes, n_operations, MOVES, chain=chain)


def _end(program):
    return program[1][-1][0]


def _reference_order(program, end):
    """The names of mini's topological order of the program's graph."""
    nodes = build(program)
    name_of = {id(node): name for name, node in nodes.items()}
    return [name_of[id(node)] for node in _graph.toposort(nodes[end])]


# ---------------------------------------------------------------------------------------------
# Reports: what an order or a raised error says, in words
# ---------------------------------------------------------------------------------------------

def order_report(listed, parents, end):
    """Per node ``end`` depends on: listed once, after all of its parents?  Plus what else the
    order holds.  ``listed`` is a list of names (None for an item that is not a node of the
    graph), ``parents`` is ``{name: [parent names]}``."""
    if not isinstance(listed, list):
        raise TypeError("the order should be a list of nodes")
    wanted = _depends_on(parents, end)
    first, counts = {}, collections.Counter(listed)
    for position, name in enumerate(listed):
        first.setdefault(name, position)
    report = {}
    for name in wanted:
        late = [p for p in parents[name] if first.get(p, -1) > first.get(name, -1)]
        if counts[name] == 0:
            report[f"node {name}"] = "missing"
        elif counts[name] > 1:
            report[f"node {name}"] = f"listed {counts[name]} times"
        elif late:
            report[f"node {name}"] = f"before its parent {late[0]}"
        else:
            report[f"node {name}"] = OK
    extra = [name for name in listed if name is not None and name not in wanted]
    strangers = sum(name is None or name not in parents for name in listed)
    report["other items"] = ", ".join(
        ([f"{', '.join(extra)} (not needed by the end node)"] if extra else [])
        + ([f"{strangers} item(s) that are not nodes of this graph"] if strangers else [])) or "none"
    return report


def _depends_on(parents, end):
    seen, stack = {end}, [end]
    while stack:
        for parent in parents[stack.pop()]:
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return sorted(seen)


def _parents(program):
    inputs, steps = program
    return {**{name: [] for name, _ in inputs},
            **{name: list(operands) for name, _, operands, _, _ in steps}}


def cycle_report(observed, on_cycle, names, naming=True):
    """What ``toposort(end)`` did on a graph with a cycle, in words, from what the probe saw.

    ``on_cycle`` lists the names of the nodes on the cycle, ``names`` every node's name in the
    program's order.  A CycleError passes when its message names any node on the cycle, as a
    whole word ("v1" is not named by a message about "v12"); without ``naming``, whatever it
    names."""
    if "raised" in observed:
        kind, message = observed["raised"], observed["message"]
        if kind != "CycleError":
            return f"raised {kind} (expected CycleError): {message}"
        if not naming:
            return "raised CycleError"
        words = set(re.findall(r"\w+", message))
        named = [name for name in names if name in words]
        if not named:
            return f"raised CycleError naming no node of the graph: {message!r}"
        if not set(named) & set(on_cycle):
            return (f"raised CycleError naming {', '.join(named)}, not on the cycle "
                    f"({', '.join(on_cycle)})")
        return RAISED_AS_ASKED
    items = observed["items"]
    return (f"returned {observed['returned']} of {items if items is not None else '?'} items "
            "instead of raising CycleError")


# ---------------------------------------------------------------------------------------------
# toposort
# ---------------------------------------------------------------------------------------------

TOPOSORT_HINT = ("every node the end node depends on must appear exactly once, after all of its "
                 "parents (its inputs), and nothing else may appear; a node can list the same "
                 "parent twice (x * x), and a node read by several others is still listed once")


def _toposort_case(program, what):
    end, parents = _end(program), _parents(program)
    return Case(what=what, probe="toposort_order", inputs={"program": program, "end": end},
                interpret=lambda listed: order_report(listed, parents, end),
                expected=lambda: order_report(_reference_order(program, end), parents, end),
                hint=TOPOSORT_HINT)


def _size(program):
    return len(program[0]) + len(program[1])


def check_toposort_random_dag(rng):
    program = random_graph(rng, int(rng.integers(1, 4)), int(rng.integers(5, 30)))
    reachable = len(ancestors(program, _end(program)))
    return _toposort_case(program, f"toposort(end) on a random graph of {_size(program)} nodes, "
                                   f"{reachable} of which the end node depends on")


def check_toposort_one_path(rng):
    program = random_graph(rng, 1, int(rng.integers(5, 30)), chain=True)
    return _toposort_case(program, f"toposort(end) on a random graph of {_size(program)} nodes "
                                   "with only one valid order (each node reads the one before; "
                                   "one of them reads it twice, as x * x)")


def _long_chain():
    """A chain of 5,000 nodes, each adding 1 to the one before: deeper than Python's recursion
    limit, and as long as the lab's contract says a graph may be.  Always the same length, so
    that a recursion whose limit was raised part of the way fails on every seed, not on some."""
    length = 5000
    steps = [(f"v{i:05d}", "add", [f"v{i - 1:05d}"], {1: 1.0}, {}) for i in range(1, length)]
    return ([("v00000", np.asarray(1.0))], steps), length


def check_toposort_long_chain(rng):
    program, length = _long_chain()
    return _toposort_case(program,
                          f"toposort(end) on a chain of {length} nodes (a recursive sort exceeds "
                          "Python's recursion limit here; the queue procedure is a loop)")


def _cycle_case(program, reader, read, what, naming):
    """toposort on the program's graph with ``reader`` made to read ``read`` too, a node it
    depends on (or itself): the nodes on a path from ``reader`` to ``read`` form a cycle, and
    the nodes after ``read`` only depend on it.  With ``naming``, the CycleError's message must
    name a node on the cycle (:func:`cycle_report`)."""
    names, end = [name for name, _ in program[0]] + [step[0] for step in program[1]], _end(program)
    on_cycle = [name for name in names
                if reader in ancestors(program, name) and name in ancestors(program, read)]

    def reference():
        nodes = build(program, values=False)
        nodes[reader].parents = nodes[reader].parents + (nodes[read],)
        try:
            _graph.toposort(nodes[end])
        except _graph.CycleError as error:
            return {"raised": "CycleError", "message": str(error)}
        raise AssertionError("mini's toposort found no cycle")       # the check itself is wrong

    return Case(what=f"toposort(end) on a graph of {_size(program)} nodes in which {what}",
                probe="toposort_on_cycle",
                inputs={"program": program, "end": end, "reader": reader, "read": read},
                interpret=lambda observed: cycle_report(observed, on_cycle, names, naming),
                expected=lambda: cycle_report(reference(), on_cycle, names, naming),
                hint=CYCLE_NAMING_HINT if naming else CYCLE_HINT)


CYCLE_HINT = ("when the queue runs dry before every node is processed, the rest are on a cycle "
              "or depend on one")
CYCLE_NAMING_HINT = ("not every node left over is on the cycle: some only depend on it.  A "
                     "left-over node always has a left-over parent")


def _chain_with_a_tail(rng):
    """A chain of 10 to 19 operations and the place of a short cycle in its first third: the
    operations it closes (positions i < j, at most 3 apart) leave at least 4 after it, which
    only depend on the cycle (the end node among them)."""
    program = random_graph(rng, int(rng.integers(1, 3)), int(rng.integers(10, 20)), chain=True)
    i = int(rng.integers(0, len(program[1]) // 3))
    return program, i, i + int(rng.integers(1, 4))


def check_toposort_cycle(rng, naming=False):
    program, i, j = _chain_with_a_tail(rng)
    steps = program[1]
    # close a cycle: an early operation now also reads a later one that depends on it
    return _cycle_case(program, steps[i][0], steps[j][0],
                       f"{j - i + 1} nodes form a cycle and {len(steps) - 1 - j} nodes after it "
                       "only depend on it", naming)


def check_toposort_self_loop(rng, naming=False):
    program, i, _ = _chain_with_a_tail(rng)
    steps = program[1]
    return _cycle_case(program, steps[i][0], steps[i][0],
                       f"{steps[i][0]} reads itself (a cycle of one node) and "
                       f"{len(steps) - 1 - i} nodes after it only depend on it", naming)


def check_toposort_cycle_named(rng):
    return check_toposort_cycle(rng, naming=True)


def check_toposort_self_loop_named(rng):
    return check_toposort_self_loop(rng, naming=True)


# ---------------------------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------------------------

def _evaluate_case(program, what, stale=False, last_first=()):
    end = _end(program)
    order = _reference_order(program, end)
    new_inputs = {name: np.asarray(value) * 0.5 + 0.25 for name, value in program[0]}
    run = (program[0] if not stale else list(new_inputs.items()), program[1])

    def values_after_evaluate():
        nodes = build(run, last_first=last_first)
        returned = _graph.evaluate(nodes[end])
        return {"returned value": returned, **{f"node {name}": nodes[name].value for name in order}}

    def old_values():
        """Every operation node's value for the old inputs: what evaluate must recompute."""
        nodes = build(program)
        _graph.evaluate(nodes[end])
        return {name: nodes[name].value for name, _, _, _, _ in program[1]}

    return Case(what=what, probe="evaluate_values",
                inputs={"program": run, "end": end, "order": order,
                        "stale": old_values() if stale else {}, "last_first": list(last_first)},
                expected=values_after_evaluate, rtol=1e-9, atol=1e-12,
                hint="in toposort's order, compute each operation node as node.fun(*args, "
                     "**node.kwargs), where args is a copy of node.args with parents[k].value put "
                     "at position parent_argnums[k]; store it in node.value; leave inputs (fun is "
                     "None) as they are; return the end node's value")


def _evaluation_graph(rng):
    """A random graph of vectors whose end node surely uses keyword arguments and depends on an
    input: ..., s = last + x1, r = mean(s, axis=0, keepdims=True), end = r + x1."""
    inputs, steps = random_graph(rng, int(rng.integers(1, 4)), int(rng.integers(4, 25)),
                                 vectors=True)
    s, r, end = (f"v{len(steps) + k}" for k in (1, 2, 3))
    return inputs, steps + [(s, "add", [_end((inputs, steps)), "x1"], {}, {}),
                            (r, "mean", [s], {}, {"axis": 0, "keepdims": True}),
                            (end, "add", [r, "x1"], {}, {})]


def check_evaluate_random_dag(rng):
    program = _evaluation_graph(rng)
    return _evaluate_case(program, f"evaluate(end) on a random graph of {_size(program)} nodes "
                                   "(with numbers and keyword arguments inside some operations)")


def check_evaluate_recomputes(rng):
    program = _evaluation_graph(rng)
    return _evaluate_case(program, f"evaluate(end) on a random graph of {_size(program)} nodes "
                                   "whose inputs changed since the last evaluation (operation "
                                   "nodes still hold old values)", stale=True)


def check_evaluate_parents_out_of_argument_order(rng):
    inputs, steps = _evaluation_graph(rng)
    last, end = steps[-1][0], f"v{len(steps) + 1}"
    program = inputs, steps + [(end, "subtract", [last, "x1"], {}, {})]
    two_parents = [name for name, _, operands, _, _ in program[1] if len(set(operands)) == 2]
    return _evaluate_case(program, f"evaluate(end) on a random graph of {_size(program)} nodes "
                                   "in which every node with two parents lists them last argument "
                                   f"first (end = subtract({last}, x1) has parents [x1, {last}] "
                                   "and parent_argnums [1, 0])", last_first=two_parents)


def check_evaluate_long_chain(rng):
    program, length = _long_chain()
    return _evaluate_case(program, f"evaluate(end) on a chain of {length} nodes (an evaluate that "
                                   "recurses into the parents exceeds Python's recursion limit "
                                   "here: go through toposort's order in a loop)")


# ---------------------------------------------------------------------------------------------
# The running example, f = x1 + exp(w1 x1 + w2 x2) with the parameters as nodes (L05 slides 13-19)
# ---------------------------------------------------------------------------------------------

EXAMPLE_INPUTS = ("x1", "x2", "w1", "w2")
RUNNING_EXAMPLE = [  # name, primitive, parents
    ("x3", "multiply", ("w1", "x1")),
    ("x4", "multiply", ("w2", "x2")),
    ("x5", "add", ("x3", "x4")),
    ("x6", "exp", ("x5",)),
    ("x7", "add", ("x1", "x6")),
]
EXAMPLE_KEYS = EXAMPLE_INPUTS + tuple(name for name, *_ in RUNNING_EXAMPLE)


def running_example(*values):
    """{key: Node} of the running example at ``values`` = (x1, x2, w1, w2), not evaluated."""
    nodes = {key: _graph.Node(value, name=key) for key, value in zip(EXAMPLE_INPUTS, values)}
    for name, fun, parents in RUNNING_EXAMPLE:
        nodes[name] = _graph.Node(None, getattr(mini, fun), (None,) * len(parents),
                                  parents=[nodes[p] for p in parents],
                                  parent_argnums=range(len(parents)), name=name)
    return nodes


def described(nodes):
    """The nodes of a running example, computed by mini, in the words of the checks."""
    _compute(nodes)
    key_of = {id(node): key for key, node in nodes.items()}
    return {key: {"name": str(node.name),
                  "fun": _fun_text(node.fun.__name__ if node.fun else None),
                  "reads": ", ".join(sorted(key_of[id(p)] for p in node.parents)) or "nothing",
                  "value": node.value}
            for key, node in nodes.items()}


def _compute(nodes):
    """Each operation node of a running example computed by mini from its parents, in the
    table's order (an operation that raises holds its error, in words)."""
    for key in EXAMPLE_KEYS:
        node = nodes[key]
        if node.fun is not None:
            try:
                node.value = node.fun(*node.vjp_operands()[1], **node.kwargs)
            except Exception as error:      # the student's wiring does not compute
                node.value = f"computing it raised {type(error).__name__}: {error}"


def rebuilt_example(built):
    """The student's graph as the probe described it, rebuilt here with mini's Nodes and
    computed by mini.  A node reading one outside the dict reads an empty node instead; a fun
    that is not mini's primitive is not called (the node's description differs already)."""
    if not isinstance(built, dict) or set(built) != set(EXAMPLE_KEYS):
        raise ValueError("the description has other keys than the running example's")
    nodes = {key: _graph.Node(node["value"] if node["fun"] is None else None,
                              _primitive(node["fun"]), tuple(node["args"]), dict(node["kwargs"]),
                              (), node["parent_argnums"], name=node["name"])
             for key, node in built.items()}
    for key, node in nodes.items():
        node.parents = tuple(nodes[parent] if parent in nodes else _graph.Node(name=parent)
                             for parent in built[key]["parents"])
    _compute(nodes)
    return {key: {"name": node["name"], "fun": _fun_text(node["fun"]),
                  "reads": ", ".join(sorted(map(str, node["parents"]))) or "nothing",
                  "value": nodes[key].value} for key, node in built.items()}


def _primitive(name):
    """mini's primitive called ``name``, or None."""
    fun = getattr(mini, name, None) if isinstance(name, str) else None
    return fun if isinstance(fun, mini.primitives.Primitive) else None


def _fun_text(name):
    """A node's fun in the checks' words, from its name (as the probe gives it)."""
    if name is None:
        return "none (an input node)"
    if _primitive(name) is not None:
        return f"mini.{name}"
    return f"{name}, which is not one of mini's primitives"


def _example_point(rng):
    """(x1, x2, w1, w2) with w1 x1 + w2 x2 small enough for exp to stay moderate."""
    return (float(rng.uniform(-2, 3)), float(rng.uniform(-1, 1)), float(rng.uniform(-1.5, 1.5)),
            float(rng.uniform(-2, 2)))


def _listed(point):
    return ", ".join(f"{value:.3g}" for value in point)


def _running_example_case(point):
    return Case(what=f"build_running_example({_listed(point)}), then evaluated (by a correct "
                     "evaluate)",
                probe="running_example_built", inputs={"point": point, "keys": EXAMPLE_KEYS},
                interpret=rebuilt_example, expected=lambda: described(running_example(*point)),
                rtol=1e-9, atol=1e-12,
                hint="nine nodes: the inputs x1, x2, w1, w2 hold the given values (the weights "
                     "are nodes too, slide 17); x3 ... x7 are the operations of section 2's table, "
                     "each a Node named after its key whose fun is mini.multiply, mini.add or "
                     "mini.exp; put None in args where a parent's value goes and list those "
                     "positions in parent_argnums")


def check_running_example(rng):
    return _running_example_case(_example_point(rng))


def check_running_example_again(rng):
    return _running_example_case(_example_point(rng))


def check_running_example_adjoints(rng):
    point = _example_point(rng)
    nodes = running_example(*point)
    _graph.evaluate(nodes["x7"])

    def expected():
        adjoints = mini.backward_pass(1.0, nodes["x7"])
        return {key: adjoints[node] for key, node in nodes.items()}

    return Case(what=f"running_example_adjoints on the running example evaluated at x1, x2, w1, "
                     f"w2 = {_listed(point)}, compared with mini.backward_pass",
                probe="running_example_adjoints",
                inputs={"structure": RUNNING_EXAMPLE,
                        "values": {key: float(node.value) for key, node in nodes.items()}},
                expected=expected, rtol=1e-9, atol=1e-12,
                hint="start from x7's adjoint, 1, and go backward: a node's adjoint is the sum, "
                     "over the nodes that read it, of the reader's adjoint times the local "
                     "derivative, which uses the values in the nodes (for a product, the other "
                     "factor); x1 is read by x3 and by x7")


# ---------------------------------------------------------------------------------------------
# The quiz graph (the notebook builds the same graph in its quiz section)
# ---------------------------------------------------------------------------------------------

QUIZ_INPUTS = {"a": 2.0, "b": 3.0}
QUIZ_OPERATIONS = [  # name, primitive, parents
    ("c", "multiply", ("a", "b")),
    ("d", "add", ("a", "b")),
    ("e", "multiply", ("c", "d")),
    ("f", "add", ("e", "b")),
]
QUIZ_END = QUIZ_OPERATIONS[-1][0]
QUIZ_PARENTS = {**{name: [] for name in QUIZ_INPUTS},
                **{name: list(parents) for name, _, parents in QUIZ_OPERATIONS}}


def quiz_graph():
    nodes = {name: _graph.Node(value, name=name) for name, value in QUIZ_INPUTS.items()}
    for name, fun, parents in QUIZ_OPERATIONS:
        nodes[name] = _graph.Node(None, getattr(mini, fun), (None,) * len(parents),
                                  parents=[nodes[p] for p in parents],
                                  parent_argnums=range(len(parents)), name=name)
    return nodes


def _quiz_check(name, hint):
    """The check of one quiz answer, ``name``, against mini's evaluation of the quiz graph."""
    def check(rng):
        return Case(what=f"the quiz answer {name}", probe="quiz_answers", inputs={"names": [name]},
                    interpret=_quiz_interpret, expected=lambda: {name: _quiz_answers()[name]},
                    rtol=1e-9, atol=1e-12, hint=hint)
    check.__name__ = check.__qualname__ = f"check_{name}"
    return check


def _quiz_answers():
    nodes = quiz_graph()
    reachable = _graph.reachable(nodes[QUIZ_END])
    order = [node.name for node in _graph.toposort(nodes[QUIZ_END])]
    _graph.evaluate(nodes[QUIZ_END])
    grads = mini.backward_pass(1.0, nodes[QUIZ_END])
    return {"quiz_nodes": len(reachable), "quiz_edges": sum(len(node.parents) for node in reachable),
            "quiz_order": order_report(order, QUIZ_PARENTS, QUIZ_END),
            "quiz_value_e": nodes["e"].value, "quiz_grad_a": grads[nodes["a"]]}


def _quiz_interpret(answers):
    """An order answer read as a report of the order; the other answers as they are."""
    if "quiz_order" not in answers:
        return answers
    order = answers["quiz_order"]
    return {**answers, "quiz_order": order_report(
        [name if name in QUIZ_PARENTS else None for name in order]
        if isinstance(order, list) else order, QUIZ_PARENTS, QUIZ_END)}


check_quiz_nodes = _quiz_check("quiz_nodes", "count every box of the drawing, inputs too")
check_quiz_edges = _quiz_check("quiz_edges", "count every arrow of the drawing")
check_quiz_order = _quiz_check("quiz_order", "the order is a list of node names in which each "
                                             "node comes after the nodes it reads")
check_quiz_value_e = _quiz_check("quiz_value_e", "evaluate the nodes in order, inputs first")
check_quiz_grad_a = _quiz_check(
    "quiz_grad_a", "a reaches f along two paths (through c and through d): multiply the local "
                   "derivatives along each path and ADD the two paths")


CHECKS = {
    "build_running_example": {
        "the running example's nodes, values and edges": (1, [check_running_example,
                                                             check_running_example_again])},
    "running_example_adjoints": {
        "every adjoint of the running example": (1, [check_running_example_adjoints])},
    "toposort": {
        "sorts a graph: each node once, after its parents": (2, [check_toposort_random_dag,
                                                                  check_toposort_one_path]),
        "sorts a chain too long for recursion": (1, [check_toposort_long_chain]),
        "raises CycleError on a cycle": (1, [check_toposort_cycle, check_toposort_self_loop]),
        "names a node on the cycle": (1, [check_toposort_cycle_named,
                                          check_toposort_self_loop_named])},
    "evaluate": {
        "evaluates a graph in order": (2, [check_evaluate_random_dag]),
        "recomputes every operation when the inputs change": (1, [check_evaluate_recomputes]),
        "puts each parent's value where parent_argnums says": (
            1, [check_evaluate_parents_out_of_argument_order]),
        "evaluates a chain too long for recursion": (1, [check_evaluate_long_chain])},
    "quiz_graph": {"quiz_nodes": (3, [check_quiz_nodes]), "quiz_edges": (3, [check_quiz_edges]),
                   "quiz_order": (4, [check_quiz_order])},
    "quiz_values": {"quiz_value_e": (1, [check_quiz_value_e]),
                    "quiz_grad_a": (1, [check_quiz_grad_a])},
}
