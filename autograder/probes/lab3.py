"""Student half of lab 3's checks: the student's tracer, VJPs, reverse pass, make_vjp, grad,
central differences and forward mode, run on what the tasks describe, answered as plain data.

Programs come as plain data (:mod:`autograder.probes.programs`); a function of one argument is a
list of steps over the input ``x`` (:func:`program_function`), and the tracer's programs use
Python's operators as well (:func:`written`), since the operators are what a Box must record.

No probe here differentiates.  Where a check of one fill-in needs another fill-in, the probe hands
the student's code a stand-in made of data from the task (a graph pre-traced from a program, whose
VJPs apply each node's local Jacobians; a function's value) or of calls the grader answers
(``grader.stand_in``): the gradients of a graph for one g, the VJP of a program for one g, the JVP
of one primitive, undoing broadcasting, adding up two shares.  The probes also count how often
the functions they hand out run: make_vjp and jacobian_reverse are asked to trace fun once,
jacobian_forward to run it once per input direction.
"""
import operator

import numpy as np

import mini
from autograder.probes import probe, to_plain
from autograder.probes.programs import arguments, call_mini, run_steps

MISSING = "no entry for this node in the dict your backward_pass returned"

OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
             "@": operator.matmul, "neg": operator.neg, "[]": operator.getitem}
"""Steps written as Python writes them: ``("b", "*", ["a"], {0: 2.0}, {})`` is ``2.0 * a``,
which calls ``a.__rmul__(2.0)``."""


def written(name, args, kwargs):
    """A step as the program's code writes it: an operator, or mini's primitive of that name."""
    return OPERATORS[name](*args) if name in OPERATORS else call_mini(name, args, kwargs)


def program_function(steps):
    """The function of ``x`` that ``steps`` compute (their last step is its value): on plain
    values it computes, on traced values it is recorded."""
    def fun(x):
        return run_steps(steps, {"x": x})[steps[-1][0]]
    return fun


def plain(value, what="the value"):
    """``value`` if it crosses as plain data, else a sentence saying what it is."""
    if isinstance(value, (mini.Node, mini.primitives.Traced)):
        return f"{what} is a traced value ({type(value).__name__}), not a plain number or array"
    try:
        to_plain(value)
    except TypeError:
        return f"{what} is {type(value).__name__} {value!r:.60}, not a number or an array"
    return value


def _same_value(a, b):
    try:
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    except Exception:           # something that is not an array at all
        return False


def _in_call(error, call, advice=""):
    """``error`` once more, its message saying in which call it arose (and what is expected)."""
    message = f"in {call}: {error}" + (f"; {advice}" if advice else "")
    try:
        return type(error)(message)
    except Exception:           # an error class that takes other arguments
        return RuntimeError(f"{type(error).__name__} {message}")


def _counted(fun, runs):
    def counted_fun(x):
        runs.append(x)
        return fun(x)
    return counted_fun


# ---------------------------------------------------------------------------------------------
# The tracer: what the student's Box records, as data
# ---------------------------------------------------------------------------------------------

@probe
def traced_graph(student, grader, program):
    """The graph the student's Box records when ``program`` runs on boxed inputs
    (:func:`recorded`)."""
    inputs, steps = program
    boxes = {name: student.Box(value, name=name) for name, value in inputs}
    end = run_steps(steps, boxes, written)[steps[-1][0]]
    if not isinstance(end, student.Box):
        raise TypeError(f"the program returned {type(end).__name__}, not a Box: an operation on a "
                        "Box must return a Box")
    return recorded(end, [boxes[name] for name, _ in inputs])


def recorded(end, inputs):
    """A traced graph as plain data: node by node in mini's topological order, its primitive, its
    parents (positions in that order), parent_argnums, value, args and kwargs; and where each of
    ``inputs`` is in that order."""
    order = mini.toposort(end)
    position = {id(node): i for i, node in enumerate(order)}
    return {"nodes": [{"primitive": _primitive_name(node.fun),
                       "parents": [position[id(parent)] for parent in node.parents],
                       "parent_argnums": plain(list(node.parent_argnums), "parent_argnums"),
                       "value": plain(node.value),
                       "args": [plain(arg, "this argument") for arg in node.args]
                       if node.fun is not None else [],
                       "kwargs": plain(node.kwargs, "kwargs")}
                      for node in order],
            "inputs": [position.get(id(box)) for box in inputs]}


def _primitive_name(fun):
    """"input", the name of one of mini's primitives, or what ``fun`` is instead."""
    if fun is None:
        return "input"
    name = getattr(fun, "__name__", type(fun).__name__)
    if getattr(mini, str(name), None) is fun:
        return name
    if isinstance(fun, mini.primitives.Primitive):
        return f"{name}, a primitive that is not mini's"
    return f"{name!r}, which is not a primitive (fun must be the primitive itself, not prim.fun)"


# ---------------------------------------------------------------------------------------------
# add_outgrads, unbroadcast and the VJP table: plain calls
# ---------------------------------------------------------------------------------------------

@probe
def add_outgrads_total(student, grader, prev_g, g, report_inputs):
    """``add_outgrads(prev_g, g)``, and with ``report_inputs`` its arguments afterwards."""
    total = plain(student.add_outgrads(prev_g, g), "the total")
    if not report_inputs:
        return total
    return {"add_outgrads(prev_g, g)": total, "prev_g after the call": prev_g,
            "g after the call": g}


@probe
def unbroadcast_results(student, grader, calls):
    """``unbroadcast(g, shape)`` for each ``(call, g, shape)``."""
    results = []
    for call, g, shape in calls:
        try:
            results.append(plain(student.unbroadcast(g, shape), "the result"))
        except Exception as error:
            raise _in_call(error, call) from None
    return results


@probe
def vjp_results(student, grader, primitive, argnum, calls):
    """The student's ``vjps[primitive][argnum](g, ans, *args, **kwargs)`` for each ``(call,
    args, kwargs, ans, g)``, with ``unbroadcast`` answered by the grader.  ``primitive`` names
    one of mini's, or ``"broadcast_to"``, the notebook's own."""
    prim = student.broadcast_to if primitive == "broadcast_to" else getattr(mini, primitive)
    label = primitive if primitive == "broadcast_to" else f"mini.{primitive}"
    if prim not in student.vjps or argnum not in student.vjps[prim]:
        raise KeyError(f"your table vjps has no entry vjps[{label}][{argnum}]: register the VJP "
                       f"of {label} for argument {argnum}")
    vjp = student.vjps[prim][argnum]

    def unbroadcast(g, shape):
        return grader.stand_in("unbroadcast", g, shape)

    results = []
    with student.using(unbroadcast=unbroadcast):
        for call, args, kwargs, ans, g in calls:
            try:
                results.append(plain(vjp(g, ans, *args, **kwargs), "the gradient"))
            except Exception as error:
                advice = (f"it should return the gradient of argument {argnum}, of shape "
                          f"{np.shape(args[argnum])}")
                raise _in_call(error, call, advice) from None
    return results


# ---------------------------------------------------------------------------------------------
# backward_pass: a graph pre-traced from a program, its VJPs its nodes' local Jacobians (data)
# ---------------------------------------------------------------------------------------------

class LocalJacobians:
    """A node's ``fun`` in backward_pass's checks: the primitive's name (for messages) and no
    computation; the stand-in table's VJPs of it multiply g by the node's local Jacobians."""

    def __init__(self, primitive_name, node_name):
        self.__name__, self.node_name = primitive_name, node_name

    def __repr__(self):
        return f"<{self.__name__} of node {self.node_name}>"


@probe
def backward_pass_gradients(student, grader, program, jacobians, g, only):
    """The student's backward_pass(g, end) on ``program``'s graph, pre-traced as lab 2's nodes
    (each node's args the plain values of its arguments), with mini's toposort, a table whose VJPs
    apply the nodes' local Jacobians (``jacobians``: ``{node: [J per parent]}``, ``J`` (output
    size) x (argument size)) and an add_outgrads whose sums the grader computes.  Returns every
    node's gradient (only those named in ``only``, if any), in reverse topological order."""
    nodes = pretraced(program, lambda name, primitive_name: LocalJacobians(primitive_name, name),
                      mini.Node)
    end = nodes[program[1][-1][0]]
    table = {node.fun: {argnum: _jacobian_vjp(node, argnum, jacobian)
                        for argnum, jacobian in zip(node.parent_argnums, jacobians[name])}
             for name, node in nodes.items() if node.fun is not None}

    def add_outgrads(prev_g, g):
        """The first share is the total so far; the grader adds any later one."""
        return g if prev_g is None else grader.stand_in("add_outgrads", prev_g, g)

    with student.using(toposort=mini.toposort, vjps=table, add_outgrads=add_outgrads):
        grads = student.backward_pass(g, end)
    if not isinstance(grads, dict):
        raise TypeError(f"backward_pass should return a dict {{node: gradient}}, got "
                        f"{type(grads).__name__}")
    keep = [nodes[name] for name in only] if only else reversed(mini.toposort(end))
    return {node_key(node): plain(grads.get(node, MISSING), "the gradient") for node in keep}


def node_key(node):
    return f"{node.name} ({node.fun.__name__ if node.fun else 'input'})"


def pretraced(program, fun_of, node_class, start=None):
    """``{name: node}`` of ``program`` run on plain values, each step a ``node_class`` holding its
    value, ``fun_of(name, primitive name)``, the plain values of all its arguments, its kwargs and
    its parents; ``start``, if given, is the node of the first input."""
    inputs, steps = program
    values = dict(inputs)
    nodes = {name: node_class(value, name=name) for name, value in inputs}
    if start is not None:
        nodes[inputs[0][0]] = start
    for name, primitive_name, operands, constants, kwargs in steps:
        args = arguments(operands, constants, values)
        values[name] = call_mini(primitive_name, args, kwargs)
        argnums = [i for i in range(len(args)) if i not in constants]
        nodes[name] = node_class(values[name], fun_of(name, primitive_name), tuple(args),
                                 dict(kwargs), parents=[nodes[operand] for operand in operands],
                                 parent_argnums=argnums, name=name)
    return nodes


def _jacobian_vjp(node, argnum, jacobian):
    """The VJP of ``node`` for argument ``argnum``: J^T g, shaped like the argument, where J is
    the node's local Jacobian; it refuses a call that is not the one backward_pass must make."""
    jacobian = np.asarray(jacobian, dtype=np.float64)

    def vjp(g, ans, *args, **kwargs):
        _called_as_recorded(node, g, ans, args, kwargs)
        return (jacobian.T @ np.ravel(g)).reshape(np.shape(node.args[argnum]))
    return vjp


def _called_as_recorded(node, g, ans, args, kwargs):
    where = f"the VJP of node {node.name} ({node.fun.__name__})"
    if np.size(g) != np.size(node.value):
        raise ValueError(f"{where} was given g of shape {np.shape(g)}, but the node's value has "
                         f"shape {np.shape(node.value)}: hand each VJP the node's own total")
    if not (ans is node.value or _same_value(ans, node.value)):
        raise ValueError(f"{where} was given another ans than the node's value: pass node.value")
    if len(args) != len(node.args) or not all(a is b or _same_value(a, b)
                                              for a, b in zip(args, node.args)):
        raise ValueError(f"{where} was given other args than the node's: pass *node.args, the "
                         "plain values of all the primitive's arguments")
    if kwargs != node.kwargs:
        raise TypeError(f"{where} was called with keyword arguments {kwargs} instead of the "
                        f"node's {node.kwargs}: call each VJP with **node.kwargs")


# ---------------------------------------------------------------------------------------------
# make_vjp: a Box that only makes the start node, a fun whose graph is pre-traced from data
# ---------------------------------------------------------------------------------------------

class StartNode(mini.Node, mini.primitives.Traced):
    """Stands in for the student's Box in make_vjp's checks: ``Box(x, ...)`` makes the start
    node, and nothing is recorded (fun returns a graph pre-traced from data).  A Node and a
    Traced value, as the student's Box is, so that make_vjp's isinstance tests see a Box."""


@probe
def make_vjp_results(student, grader, steps, x, gs, constant):
    """The student's make_vjp(fun, x), then vjp(g) for each g of ``gs``, with the stand-in Box
    above and a backward_pass the grader answers (the gradients of fun's graph for that g); fun
    returns ``steps``' graph pre-traced from x, hanging off the start node it is given (or the
    array ``constant``, ignoring x).  Also how often fun ran."""
    runs, graph = [], {}

    def fun(start):
        runs.append(start)
        if constant is not None:
            return constant
        if not isinstance(start, StartNode) or not _same_value(start.value, x):
            raise TypeError(f"fun should run on a Box holding x, fun(Box(x)); it got "
                            f"{type(start).__name__} {start!r:.60}")
        graph.clear()
        graph.update(pretraced(([("x", x)], steps), lambda _, name: getattr(mini, name),
                               StartNode, start))
        return graph[steps[-1][0]]

    def backward_pass(g, end_node):
        if not graph or end_node is not graph[steps[-1][0]]:
            raise ValueError("this check's stand-in backward_pass walks back the graph fun "
                             "returned, from the node fun returned, and no other")
        return {graph[name]: gradient
                for name, gradient in grader.stand_in("backward_pass", g).items()}

    with student.using(Box=StartNode, backward_pass=backward_pass):
        made = student.make_vjp(fun, x)
        if not isinstance(made, (tuple, list)) or len(made) != 2 or not callable(made[0]):
            raise TypeError("make_vjp should return a pair (vjp, value), the function first")
        vjp, value = made
        result = {"value": plain(value)}
        for number, g in enumerate(gs, start=1):
            result[f"vjp(g{number})"] = plain(vjp(g), f"vjp(g{number})")
    return {**result, "runs of fun": len(runs)}


# ---------------------------------------------------------------------------------------------
# grad and jacobian_reverse: a make_vjp whose value is data and whose vjp the grader answers
# ---------------------------------------------------------------------------------------------

def _make_vjp_answered(grader, fun, x, value, traces):
    def make_vjp(fun_given, x_given):
        if fun_given is not fun:
            raise ValueError("make_vjp should be given the function itself: make_vjp(fun, x)")
        if not _same_value(x_given, x):
            raise ValueError("make_vjp should be given the x the gradient is asked at")
        traces.append(x_given)
        return (lambda g: grader.stand_in("vjp", g)), value
    return make_vjp


@probe
def grad_result(student, grader, steps, x, value):
    """The student's grad(fun)(x), with a make_vjp whose vjp(g) the grader answers."""
    fun = program_function(steps)
    with student.using(make_vjp=_make_vjp_answered(grader, fun, x, value, [])):
        return plain(student.grad(fun)(x), "grad(fun)(x)")


@probe
def grad_results(student, grader, steps, xs, values):
    """The student's gradfun = grad(fun), called at each x of ``xs`` in turn, with a make_vjp
    that answers at each of them (its vjp(g) the grader's, ``"vjp at x<number>"``)."""
    fun = program_function(steps)

    def make_vjp(fun_given, x_given):
        if fun_given is not fun:
            raise ValueError("make_vjp should be given the function itself: make_vjp(fun, x)")
        for number, (x, value) in enumerate(zip(xs, values), start=1):
            if _same_value(x_given, x):
                return (lambda g: grader.stand_in(f"vjp at x{number}", g)), value
        raise ValueError("make_vjp should be given the x the gradient is asked at")

    with student.using(make_vjp=make_vjp):
        gradfun = student.grad(fun)
        return {f"gradfun(x{number})": plain(gradfun(x), f"gradfun(x{number})")
                for number, x in enumerate(xs, start=1)}


@probe
def jacobian_reverse_result(student, grader, steps, x, value):
    """The student's jacobian_reverse(fun, x), with a make_vjp whose vjp(g) the grader
    answers; how often fun ran counts each trace by make_vjp."""
    runs = []
    fun = _counted(program_function(steps), runs)
    with student.using(make_vjp=_make_vjp_answered(grader, fun, x, value, runs)):
        jacobian = student.jacobian_reverse(fun, x)
    return {"jacobian": plain(jacobian, "the Jacobian"), "runs of fun": len(runs)}


# ---------------------------------------------------------------------------------------------
# numerical_grad
# ---------------------------------------------------------------------------------------------

@probe
def numerical_gradient(student, grader, steps, x, h, report_x):
    """The student's numerical_grad(f, x[, h]), and with ``report_x`` x afterwards."""
    gradient = student.numerical_grad(program_function(steps), x, **({} if h is None else {"h": h}))
    if not report_x:
        return plain(gradient, "the gradient")
    return {"gradient": plain(gradient, "the gradient"), "x after the call": x}


# ---------------------------------------------------------------------------------------------
# Forward mode: the JVP table alone; Dual, jvp and jacobian_forward with JVPs the grader answers
# ---------------------------------------------------------------------------------------------

@probe
def jvp_entries(student, grader, primitive, calls):
    """The student's ``jvps[mini.<primitive>][argnum](t, ans, *args, **kwargs)`` for each
    ``(call, argnum, args, kwargs, ans, t)``."""
    prim = getattr(mini, primitive)
    results = []
    for call, argnum, args, kwargs, ans, t in calls:
        if prim not in student.jvps or argnum not in student.jvps[prim]:
            raise KeyError(f"your table jvps has no entry jvps[mini.{primitive}][{argnum}]: "
                           f"register the JVP of mini.{primitive} for argument {argnum}")
        try:
            results.append(plain(student.jvps[prim][argnum](t, ans, *args, **kwargs),
                                 "the tangent"))
        except Exception as error:
            raise _in_call(error, call, "it should return the output's tangent, shaped like "
                                        f"the output {np.shape(ans)}") from None
    return results


def _jvps_answered(grader, steps):
    """A JVP table for the primitives of ``steps``, every argument, each JVP computed by the
    grader."""
    def entry(name, argnum):
        def jvp(t, ans, *args, **kwargs):
            if any(isinstance(value, mini.primitives.Traced) for value in (t, ans, *args)):
                raise TypeError(f"the JVP of {name} (argument {argnum}) was called with a "
                                "traced value among t, ans and args: JVPs take plain values")
            return grader.stand_in("jvp", name, argnum, t, ans, list(args), kwargs)
        return jvp
    names = {primitive_name for _, primitive_name, *_ in steps}
    return {getattr(mini, name): {argnum: entry(name, argnum) for argnum in range(3)}
            for name in names}


def _function(steps, constant):
    return program_function(steps) if constant is None else (lambda x: constant)


@probe
def jvp_result(student, grader, steps, x, v, constant):
    """The student's jvp(fun, x, v) for ``steps``' function (or one returning ``constant``),
    with a JVP table the grader answers."""
    with student.using(jvps=_jvps_answered(grader, steps)):
        answer = student.jvp(_function(steps, constant), x, v)
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise TypeError(f"jvp should return a pair (value, tangent), got {type(answer).__name__}")
    return {"value": plain(answer[0], "the value"), "tangent": plain(answer[1], "the tangent")}


@probe
def jacobian_forward_result(student, grader, steps, x):
    """The student's jacobian_forward(fun, x), with a JVP table the grader answers; how often
    fun ran."""
    runs = []
    with student.using(jvps=_jvps_answered(grader, steps)):
        jacobian = student.jacobian_forward(_counted(program_function(steps), runs), x)
    return {"jacobian": plain(jacobian, "the Jacobian"), "runs of fun": len(runs)}
