"""Student half of lab 2's checks: graphs built from plain programs, the student's functions
called on them, and what came back described by node names.

No probe here orders or evaluates a graph: an order a check needs as a stand-in (``evaluate``'s
toposort) comes in the task as a list of names, and the values of an evaluated graph
(``running_example_adjoints``'s input) come as numbers.  The grader reads the names back into
reports ("once, after all of its parents", "before its parent v07", ...).
"""
import contextlib
import signal
import threading

import numpy as np

import mini
from autograder.probes import probe
from autograder.probes.programs import run_steps

TIME_LIMIT_S = 10
MESSAGE_LENGTH = 2000
"""How much of a raised error's message a probe reports."""


def build(program, values=True, last_first=()):
    """{name: Node} for a program; inputs carry their value when ``values`` is true.  The nodes
    named in ``last_first`` list their parents last argument first (``parents`` and
    ``parent_argnums`` reversed together: the same operation on the same arguments)."""
    inputs, steps = program
    nodes = run_steps(steps, {name: mini.Node(np.array(value) if values else None, name=name)
                              for name, value in inputs}, _operation_node)
    for name, _, _, _, _ in steps:
        nodes[name].name = name
    for name in last_first:
        node = nodes[name]
        node.parents, node.parent_argnums = node.parents[::-1], node.parent_argnums[::-1]
    return nodes


def _operation_node(primitive_name, args, kwargs):
    """A Node as the lab builds them: None in ``args`` where a parent's value goes."""
    argnums = [i for i, arg in enumerate(args) if isinstance(arg, mini.Node)]
    return mini.Node(None, getattr(mini, primitive_name),
                     tuple(None if i in argnums else arg for i, arg in enumerate(args)),
                     dict(kwargs), parents=[args[i] for i in argnums], parent_argnums=argnums)


def names_of(items, nodes):
    """Each item's name among ``nodes`` ({name: Node}), by identity; None for anything else."""
    name_of = {id(node): name for name, node in nodes.items()}
    return [name_of.get(id(item)) if not isinstance(item, str) else None for item in items]


def _listed(order, what):
    if not isinstance(order, (list, tuple)):
        raise TypeError(f"{what} should return a list, got {type(order).__name__} {order!r:.80}")
    return order


@contextlib.contextmanager
def time_limit(seconds, what):
    """Raise TimeoutError in the main thread after ``seconds`` (a loop that never ends, e.g. a sort
    that revisits nodes forever on a cycle).  Does nothing where a timer is already in use (the
    pytest path's worker has its own for each check)."""
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


@probe
def toposort_order(student, grader, program, end):
    """The names, in the order the student's toposort listed them (None: not a node here)."""
    nodes = build(program)
    with time_limit(TIME_LIMIT_S, "toposort"):
        order = student.toposort(nodes[end])
    return names_of(_listed(order, "toposort"), nodes)


@probe
def toposort_on_cycle(student, grader, program, end, reader, read):
    """What the student's toposort did on the program's graph with ``reader`` made to read
    ``read`` too (a cycle): the error it raised, or what it returned."""
    nodes = build(program, values=False)
    node = nodes[reader]
    node.parents = node.parents + (nodes[read],)
    node.parent_argnums = node.parent_argnums + (len(node.args),)
    try:
        with time_limit(TIME_LIMIT_S, "toposort on a graph with a cycle"):
            order = student.toposort(nodes[end])
    except Exception as error:          # the error is what is being checked
        return {"raised": type(error).__name__, "message": str(error)[:MESSAGE_LENGTH]}
    return {"returned": type(order).__name__,
            "items": len(order) if hasattr(order, "__len__") else None}


@probe
def evaluate_values(student, grader, program, end, order, stale, last_first):
    """The student's evaluate on the program's graph (the nodes in ``last_first`` listing their
    parents last argument first), with a toposort that lists ``order`` (the names the grader
    sorted) for the end node; ``stale`` values put on operation nodes first.  Returns what
    evaluate returned and every listed node's value afterwards."""
    nodes = build(program, last_first=last_first)
    for name, value in stale.items():
        nodes[name].value = value

    def listed_order(end_node):
        if end_node is not nodes[end]:
            raise ValueError("this check's stand-in toposort lists the order of the end node "
                             "evaluate was called with, and of no other node")
        return [nodes[name] for name in order]

    with student.using(toposort=listed_order):
        returned = student.evaluate(nodes[end])
    return {"returned value": _number(returned),
            **{f"node {name}": _number(nodes[name].value) for name in order}}


def _number(value):
    return value if isinstance(value, (int, float, np.ndarray, np.generic)) else repr(value)[:80]


# ---------------------------------------------------------------------------------------------
# The running example and the quiz
# ---------------------------------------------------------------------------------------------

@probe
def running_example_built(student, grader, point, keys):
    """What the student's build_running_example(*point) made, node by node: its name, primitive,
    parents (by key), argument positions, constant arguments and value, for the grader to
    evaluate and compare."""
    nodes = student.build_running_example(*point)
    if not isinstance(nodes, dict):
        raise TypeError(f"build_running_example should return a dict {{'x1': Node, ..., "
                        f"'x7': Node}}, got {type(nodes).__name__}")
    missing = [key for key in keys if not isinstance(nodes.get(key), mini.Node)]
    if missing:
        raise TypeError(f"build_running_example's dict has no Node for {', '.join(missing)} "
                        f"(its keys: {sorted(map(str, nodes))})")
    key_of = {id(node): key for key, node in nodes.items()}
    return {key: {"name": str(node.name),
                  "fun": _primitive_name(node.fun),
                  "parents": [key_of.get(id(parent), f"a node outside the dict ({parent.name})")
                              for parent in node.parents],
                  "parent_argnums": [_constant(argnum) for argnum in node.parent_argnums],
                  "args": [_constant(arg) for arg in node.args],
                  "kwargs": {str(key): _constant(value) for key, value in node.kwargs.items()},
                  "value": _number(node.value) if node.value is not None else None}
            for key, node in ((key, nodes[key]) for key in keys)}


def _primitive_name(fun):
    """The name of mini's primitive ``fun``; any other function's name in quotes."""
    if fun is None:
        return None
    name = getattr(fun, "__name__", type(fun).__name__)
    return name if getattr(mini, name, None) is fun else repr(name)[:80]


def _constant(arg):
    if isinstance(arg, np.integer):
        return int(arg)
    return arg if arg is None or isinstance(arg, (int, float)) else repr(arg)[:80]


@probe
def running_example_adjoints(student, grader, structure, values):
    """The student's adjoints of the running example, built from ``structure`` (name, primitive,
    parents) with the values the grader evaluated it to."""
    nodes = {key: mini.Node(value, name=key) for key, value in values.items()
             if key not in {name for name, *_ in structure}}
    for name, fun, parents in structure:
        nodes[name] = mini.Node(values[name], getattr(mini, fun), (None,) * len(parents),
                                parents=[nodes[p] for p in parents],
                                parent_argnums=range(len(parents)), name=name)
    adjoints = student.running_example_adjoints(nodes)
    if not isinstance(adjoints, dict):
        return _number(adjoints)
    return {key if isinstance(key, str) else repr(key)[:80]: _number(value)
            for key, value in adjoints.items()}


@probe
def quiz_answers(student, grader, names):
    """The quiz's variables as the notebook defines them (a list's items that are not names, as
    their repr)."""
    answers = {}
    for name in names:
        value = getattr(student, name)
        if isinstance(value, (list, tuple)):
            value = [item if isinstance(item, str) else repr(item)[:80] for item in value]
        answers[name] = _number(value) if not isinstance(value, (list, str)) else value
    return answers
