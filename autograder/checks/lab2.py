"""Hidden checks of lab 2 (computation graphs: wiring nodes, adjoints by hand, topological order,
evaluation, quiz).

Graphs are drawn at grading time from the seed as a plain program (names, primitives, operand
names, constants: :mod:`autograder.checks.programs`), and each half of a check builds its own
:class:`mini.graph.Node` objects from it, so the student's code can never change the graph the
expected answer is computed on.  Expected values come from mini's reference
(``mini.graph.toposort``, ``mini.graph.evaluate``, ``mini.backward_pass``), never from numbers
written here.

A topological order is not unique, so a toposort check does not compare orders: the call side
turns the student's order into a per-node report ("once, after all of its parents", "missing",
"before its parent v07", ...) and the expected side writes the same report for mini's order.
Checks of ``evaluate`` give it a correct ``toposort``, so that a wrong toposort does not cost the
points of evaluate too.  The call side (which runs in the grading worker) uses only the small
stand-ins below, not ``mini.graph``'s functions, which the runner may switch off while lab 2 is graded.
"""
import collections
import contextlib
import signal
import threading

import numpy as np

import mini
from mini import graph as _graph
from autograder.checks import Case
from autograder.checks.programs import ancestors, random_program, run_steps

# Switched off in the grading worker while lab 2 is graded (autograder.guard): the lab asks for the
# order, the evaluation and the running example's adjoints, so mini's sort, evaluation and reverse
# pass are not available to the submission.  The references below run only on the expected side,
# in the grader's process (or, in a student's own run, after the checks have called their code),
# where nothing is switched off.
REFERENCE = ("mini.toposort", "mini.evaluate", "mini.backward_pass", "mini.grad",
             "mini.value_and_grad", "mini.make_vjp", "mini.jacobian")

_reference_toposort = _graph.toposort
_reference_evaluate = _graph.evaluate
_reference_reachable = _graph.reachable
_reference_backward_pass = mini.backward_pass

TIME_LIMIT_S = 10
OK = "once, after all of its parents"
RAISED_AS_ASKED = "raised CycleError naming a node on the cycle"

# ---------------------------------------------------------------------------------------------
# Random graphs (programs of autograder.checks.programs) and their Nodes
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


def build(program, values=True):
    """{name: Node} for a program; inputs carry their value when ``values`` is true."""
    inputs, steps = program
    nodes = run_steps(steps, {name: _graph.Node(np.array(value) if values else None, name=name)
                              for name, value in inputs}, _operation_node)
    for name, _, _, _, _ in steps:
        nodes[name].name = name
    return nodes


def _operation_node(primitive_name, args, kwargs):
    """A Node as the lab builds them: None in ``args`` where a parent's value goes."""
    argnums = [i for i, arg in enumerate(args) if isinstance(arg, _graph.Node)]
    return _graph.Node(None, getattr(mini, primitive_name),
                       tuple(None if i in argnums else arg for i, arg in enumerate(args)),
                       dict(kwargs), parents=[args[i] for i in argnums], parent_argnums=argnums)


def _end(program):
    return program[1][-1][0]


# ---------------------------------------------------------------------------------------------
# Reports: what an order or a raised error says, in words
# ---------------------------------------------------------------------------------------------

def order_report(order, nodes, end_name):
    """Per reachable node: appears once, after all of its parents?  Plus what else the order holds.

    ``order`` is a list of Nodes (toposort) or of names (the quiz); ``nodes`` is {name: Node}.
    """
    if not isinstance(order, (list, tuple)):
        raise TypeError(f"expected a list, got {type(order).__name__} {order!r:.80}")
    name_of = {id(node): name for name, node in nodes.items()}
    listed = []
    for item in order:
        if isinstance(item, str) and item in nodes:
            listed.append(item)
        elif id(item) in name_of:
            listed.append(name_of[id(item)])
        else:
            listed.append(None)
    wanted = _graph.reachable(nodes[end_name])
    first, counts = {}, collections.Counter(listed)
    for position, name in enumerate(listed):
        first.setdefault(name, position)
    report = {}
    for node in wanted:
        name = name_of[id(node)]
        count = counts[name]
        late = [name_of[id(p)] for p in node.parents if first.get(name_of[id(p)], -1) > first.get(name, -1)]
        if count == 0:
            report[f"node {name}"] = "missing"
        elif count > 1:
            report[f"node {name}"] = f"listed {count} times"
        elif late:
            report[f"node {name}"] = f"before its parent {late[0]}"
        else:
            report[f"node {name}"] = OK
    wanted_names = {name_of[id(node)] for node in wanted}
    extra = [name for name in listed if name is not None and name not in wanted_names]
    strangers = sum(name is None for name in listed)
    report["other items"] = ", ".join(
        ([f"{', '.join(extra)} (not needed by the end node)"] if extra else [])
        + ([f"{strangers} item(s) that are not nodes of this graph"] if strangers else [])) or "none"
    return report


def cycle_report(toposort, end, on_cycle):
    """What ``toposort(end)`` did on a graph with a cycle, in words."""
    try:
        with _time_limit(TIME_LIMIT_S, "toposort on a graph with a cycle"):
            order = toposort(end)
    except Exception as error:  # the error is what is being checked
        message = str(error)
        if type(error).__name__ != "CycleError":
            return f"raised {type(error).__name__} (expected CycleError): {message[:300]}"
        if not any(name in message for name in on_cycle):
            return (f"raised CycleError, but its message names no node on the cycle "
                    f"({', '.join(sorted(on_cycle))}): {message[:300]!r}")
        return RAISED_AS_ASKED
    return f"returned {type(order).__name__} of {len(order) if hasattr(order, '__len__') else '?'} " \
           "items instead of raising CycleError"


@contextlib.contextmanager
def _time_limit(seconds, what):
    """Raise TimeoutError in the main thread after ``seconds`` (a loop that never ends, e.g. a sort
    that revisits nodes forever on a cycle).  Does nothing where a timer is already in use."""
    usable = (threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
              and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
              and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None))
    if not usable:
        yield
        return

    def stop(signum, frame):
        raise TimeoutError(f"{what} did not finish within {seconds} s: does the loop ever end? "
                           "(a node must be put in the queue only when all of its inputs are "
                           "processed, and only once)")
    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------------------------------
# Stand-ins for the call side: a correct toposort and evaluate in a few lines each
# ---------------------------------------------------------------------------------------------

def _standin_toposort(end):
    """Depth-first, iterative; a different method from mini's, the same kind of answer."""
    order, done, stack = [], set(), [(end, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        if expanded:
            done.add(id(node))
            order.append(node)
            continue
        stack.append((node, True))
        stack.extend((parent, False) for parent in reversed(node.parents))
    return order


def _standin_evaluate(end):
    for node in _standin_toposort(end):
        if node.fun is not None:
            args = list(node.args)
            for argnum, parent in zip(node.parent_argnums, node.parents):
                args[argnum] = parent.value
            node.value = node.fun(*args, **node.kwargs)
    return end.value


# ---------------------------------------------------------------------------------------------
# toposort
# ---------------------------------------------------------------------------------------------

def _toposort_case(program, what):
    end = _end(program)

    def call(student):
        nodes = build(program)
        with _time_limit(TIME_LIMIT_S, "toposort"):
            order = student.toposort(nodes[end])
        return order_report(order, nodes, end)

    def expected():
        nodes = build(program)
        return order_report(_reference_toposort(nodes[end]), nodes, end)
    return Case(what=what, call=call, expected=expected,
                hint="every node the end node depends on must appear exactly once, after all of its "
                     "parents (its inputs), and nothing else may appear; a node can list the same "
                     "parent twice (x * x), and a node read by several others is still listed once")


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


def check_toposort_long_chain(rng):
    length = int(rng.integers(3000, 5000))
    steps = [(f"v{i:05d}", "add", [f"v{i - 1:05d}"], {1: 1.0}, {}) for i in range(1, length)]
    return _toposort_case(([("v00000", np.asarray(1.0))], steps),
                          f"toposort(end) on a chain of {length} nodes (a recursive sort exceeds "
                          "Python's recursion limit here; the queue procedure is a loop)")


def check_toposort_cycle(rng):
    program = random_graph(rng, int(rng.integers(1, 3)), int(rng.integers(5, 20)), chain=True)
    names, end = [name for name, _, _, _, _ in program[1]], _end(program)
    # close a cycle: an early operation a now also reads a later one b that depends on it
    i = int(rng.integers(0, len(names) - 1))
    j = int(rng.integers(i + 1, len(names)))
    a, b = names[i], names[j]
    descendants_of_a = {n for n in names if a in ancestors(program, n)}
    on_cycle = sorted(descendants_of_a & ancestors(program, b))

    def cyclic():
        nodes = build(program, values=False)
        nodes[a].parents = nodes[a].parents + (nodes[b],)
        nodes[a].parent_argnums = nodes[a].parent_argnums + (len(nodes[a].args),)
        return nodes

    return Case(what=f"toposort(end) on a graph of {_size(program)} nodes in which "
                     f"{len(on_cycle)} nodes form a cycle",
                call=lambda student: cycle_report(student.toposort, cyclic()[end], on_cycle),
                expected=lambda: cycle_report(_reference_toposort, cyclic()[end], on_cycle),
                hint="when the queue runs dry before every node is processed, the rest are on a "
                     "cycle or depend on one: raise CycleError, and find a node ON the cycle by "
                     "walking from a left-over node to a left-over parent until a node repeats")


# ---------------------------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------------------------

def _values(nodes, end):
    return {f"node {node.name}": node.value for node in _graph.reachable(nodes[end])}


def _evaluate_case(program, what, stale=False):
    end = _end(program)
    new_inputs = {name: np.asarray(value) * 0.5 + 0.25 for name, value in program[0]}

    def fresh():
        nodes = build(program)
        if stale:       # evaluate once with other inputs, so operation nodes hold old values
            _standin_evaluate(nodes[end])
            for name, value in new_inputs.items():
                nodes[name].value = value
        return nodes

    def call(student):
        nodes = fresh()
        with student.using(toposort=_standin_toposort):
            returned = student.evaluate(nodes[end])
        return {"returned value": returned, **_values(nodes, end)}

    def expected():
        nodes = build(program)
        if stale:
            for name, value in new_inputs.items():
                nodes[name].value = value
        returned = _reference_evaluate(nodes[end])
        return {"returned value": returned, **_values(nodes, end)}
    return Case(what=what, call=call, expected=expected, rtol=1e-9, atol=1e-12,
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


# ---------------------------------------------------------------------------------------------
# The running example, f = x1 + exp(w1 x1 + w2 x2) with the parameters as nodes (L05 slides 13-19)
# ---------------------------------------------------------------------------------------------

EXAMPLE_INPUTS = ("x1", "x2", "w1", "w2")
RUNNING_EXAMPLE = [  # name, primitive, args with None where a parent goes, parents
    ("x3", "multiply", (None, None), ("w1", "x1")),
    ("x4", "multiply", (None, None), ("w2", "x2")),
    ("x5", "add", (None, None), ("x3", "x4")),
    ("x6", "exp", (None,), ("x5",)),
    ("x7", "add", (None, None), ("x1", "x6")),
]
EXAMPLE_KEYS = EXAMPLE_INPUTS + tuple(name for name, *_ in RUNNING_EXAMPLE)


def running_example(*values):
    """{key: Node} of the running example at ``values`` = (x1, x2, w1, w2)."""
    nodes = {key: _graph.Node(value, name=key) for key, value in zip(EXAMPLE_INPUTS, values)}
    for name, fun, args, parents in RUNNING_EXAMPLE:
        nodes[name] = _graph.Node(None, getattr(mini, fun), args, parents=[nodes[p] for p in parents],
                                  parent_argnums=[i for i, a in enumerate(args) if a is None],
                                  name=name)
    return nodes


def _primitive_name(fun):
    if fun is None:
        return "none (an input node)"
    name = getattr(fun, "__name__", type(fun).__name__)
    if getattr(mini, name, None) is fun:
        return f"mini.{name}"
    return f"{name!r}, which is not one of mini's primitives"


def describe_example(nodes, evaluate):
    if not isinstance(nodes, dict):
        raise TypeError(f"build_running_example should return a dict {{'x1': Node, ..., "
                        f"'x7': Node}}, got {type(nodes).__name__}")
    missing = [key for key in EXAMPLE_KEYS if not isinstance(nodes.get(key), _graph.Node)]
    if missing:
        raise TypeError(f"build_running_example's dict has no Node for {', '.join(missing)} "
                        f"(its keys: {sorted(map(str, nodes))})")
    evaluate(nodes["x7"])
    names = {id(node): key for key, node in nodes.items()}
    described = {}
    for key in EXAMPLE_KEYS:
        node = nodes[key]
        described[key] = {
            "name": str(node.name),
            "fun": _primitive_name(node.fun),
            "reads": ", ".join(sorted(names.get(id(p), f"a node outside the dict ({p.name})")
                                      for p in node.parents)) or "nothing",
            "value": node.value,
        }
    return described


def _example_point(rng):
    """(x1, x2, w1, w2) with w1 x1 + w2 x2 small enough for exp to stay moderate."""
    return (float(rng.uniform(-2, 3)), float(rng.uniform(-1, 1)), float(rng.uniform(-1.5, 1.5)),
            float(rng.uniform(-2, 2)))


def _listed(point):
    return ", ".join(f"{value:.3g}" for value in point)


def _running_example_case(point):
    return Case(what=f"build_running_example({_listed(point)}), then evaluated (by a correct "
                     "evaluate)",
                call=lambda student: describe_example(student.build_running_example(*point),
                                                      _standin_evaluate),
                expected=lambda: describe_example(running_example(*point), _reference_evaluate),
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

    def call(student):
        nodes = running_example(*point)
        _standin_evaluate(nodes["x7"])
        return student.running_example_adjoints(nodes)

    def expected():
        nodes = running_example(*point)
        _reference_evaluate(nodes["x7"])
        adjoints = _reference_backward_pass(1.0, nodes["x7"])
        return {key: adjoints[node] for key, node in nodes.items()}
    return Case(what=f"running_example_adjoints on the running example evaluated at x1, x2, w1, "
                     f"w2 = {_listed(point)}, compared with mini.backward_pass",
                call=call, expected=expected, rtol=1e-9, atol=1e-12,
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


def quiz_graph():
    nodes = {name: _graph.Node(value, name=name) for name, value in QUIZ_INPUTS.items()}
    for name, fun, parents in QUIZ_OPERATIONS:
        nodes[name] = _graph.Node(None, getattr(mini, fun), (None,) * len(parents),
                                  parents=[nodes[p] for p in parents],
                                  parent_argnums=range(len(parents)), name=name)
    return nodes


QUIZ_END = QUIZ_OPERATIONS[-1][0]


def check_quiz_graph(rng):
    def expected():
        nodes = quiz_graph()
        reachable = _reference_reachable(nodes[QUIZ_END])
        order = [node.name for node in _reference_toposort(nodes[QUIZ_END])]
        return {"quiz_nodes": len(reachable),
                "quiz_edges": sum(len(node.parents) for node in reachable),
                "quiz_order": order_report(order, nodes, QUIZ_END)}

    def call(student):
        return {"quiz_nodes": student.quiz_nodes, "quiz_edges": student.quiz_edges,
                "quiz_order": order_report(student.quiz_order, quiz_graph(), QUIZ_END)}
    return Case(what="the quiz answers quiz_nodes, quiz_edges and quiz_order", call=call,
                expected=expected,
                hint="count every box of the drawing (inputs too) and every arrow; the order is a "
                     "list of node names in which each node comes after the nodes it reads")


def check_quiz_values(rng):
    def expected():
        nodes = quiz_graph()
        _reference_evaluate(nodes[QUIZ_END])
        grads = _reference_backward_pass(1.0, nodes[QUIZ_END])
        return {"quiz_value_e": nodes["e"].value, "quiz_grad_a": grads[nodes["a"]]}

    return Case(what="the quiz answers quiz_value_e and quiz_grad_a",
                call=lambda student: {"quiz_value_e": student.quiz_value_e,
                                      "quiz_grad_a": student.quiz_grad_a},
                expected=expected, rtol=1e-9, atol=1e-12,
                hint="evaluate the nodes in order for e; for df/da, a reaches f along two paths "
                     "(through c and through d): multiply the local derivatives along each path "
                     "and ADD the two paths")


CHECKS = {
    "build_running_example": [check_running_example, check_running_example_again],
    "running_example_adjoints": [check_running_example_adjoints],
    "toposort": [check_toposort_random_dag, check_toposort_one_path, check_toposort_long_chain,
                 check_toposort_cycle],
    "evaluate": [check_evaluate_random_dag, check_evaluate_recomputes],
    "quiz_graph": [check_quiz_graph],
    "quiz_values": [check_quiz_values],
}
