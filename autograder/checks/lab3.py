"""Hidden checks of lab3_autodiff (the tracer, add_outgrads, the student's VJP table: unbroadcast,
elementwise, shape-moving and log_softmax VJPs; backward_pass, make_vjp, grad, numerical_grad and
forward mode): the grader half.

Programs are drawn from the seed as plain data; the student half (:mod:`autograder.probes.lab3`)
runs them with the student's functions and answers with numbers and node names.  Expected values
come from mini's reference (its tracer, VJP and JVP tables, ``backward_pass``, ``make_vjp``,
``grad``, ``jacobian``, ``make_jvp``, ``numerical_grad``) run here on the same programs; no
expected number is written here but what a contract itself fixes (zeros for a function that
ignores x; one trace).  A check of one fill-in hands the student's code stand-ins for
the fill-ins it builds on, so one mistake costs only its own points, and none of them computes an
answer where the student's code runs:

* the tracer: the probe describes the graph the student's Box recorded (node by node, in lab 2's
  topological order); here it is rebuilt with mini's Box and compared with mini's own trace,
  gradients included;
* the VJP table: each entry is called directly, on every broadcasting, axis and keepdims
  variant, with ``unbroadcast`` answered here;
* backward_pass: a graph pre-traced from the program in the student's process, its nodes' funs
  keys of a table whose VJPs apply each node's local Jacobians (data computed here, never a
  gradient the check compares); mini's toposort (lab 2 is revealed); add_outgrads adds shares
  here;
* make_vjp: a Box that only makes the start node, a fun that returns a graph pre-traced from data
  hanging off it, and a backward_pass answered here; grad and jacobian_reverse: a make_vjp whose
  value is data and whose vjp(g) is answered here;
* forward mode: the JVP table alone; Dual, jvp and jacobian_forward with JVPs answered here.

The probes count how often the functions they hand out run: make_vjp traces once however often
its vjp is called, and each Jacobian traces as often as its mode needs.
"""
import functools
import itertools
import re

import numpy as np

import mini
from mini.autodiff import Box
from mini.primitives import Primitive
from mini.table import sum_to_shape
from autograder.checks import Case
from autograder.checks.programs import listing, random_program
from autograder.probes.lab3 import MISSING, node_key, program_function, recorded, written
from autograder.probes.programs import arguments, run_steps


def _shape(rng, ndims=(0, 1, 2), low=1, high=5):
    ndim = int(rng.choice(ndims))
    return tuple(int(n) for n in rng.integers(low, high, size=ndim))


def _dims(rng, count, low=2, high=5):
    return (int(d) for d in rng.integers(low, high, size=count))


def _runs(count):
    return "once" if count == 1 else f"{count} times"


def _ran(result):
    """What a probe reported, its count of fun's runs in words."""
    result = dict(result)
    runs = result.pop("runs of fun")
    return {**result, "fun ran": _runs(runs)}


def _arguments(args):
    """A call's arguments in words: an array by its shape, an index as Python writes it
    (``np.s_[:, 1]``, ``np.s_[[0, 2, 0, 0]]``: a repeated entry shows), anything else by repr."""
    return ", ".join(map(_argument, args))


def _argument(arg):
    parts = arg if isinstance(arg, tuple) else (arg,)
    if isinstance(arg, np.ndarray) and (arg.dtype.kind not in "iu" or arg.size > 10):
        return f"an array of shape {arg.shape}"
    if any(isinstance(part, (slice, np.ndarray)) for part in parts):
        return "np.s_[" + ", ".join(map(_index_part, parts)) + "]"
    return repr(arg)


def _index_part(part):
    if isinstance(part, slice):
        text = f"{'' if part.start is None else part.start}:{'' if part.stop is None else part.stop}"
        return text if part.step is None else f"{text}:{part.step}"
    if isinstance(part, np.ndarray):
        return str(part.tolist())
    return repr(part)


def _describe(g):
    return f"{g:.4g}" if np.ndim(g) == 0 else f"an array of shape {np.shape(g)}"


# ---------------------------------------------------------------------------------------------
# The tracer: the student's Box records the graph mini's records
# ---------------------------------------------------------------------------------------------

TRACER_HINT = ("Box.apply(prim, args, kwargs) must return a new Box whose value is "
               "prim.fun(*plain values, **kwargs), with fun = prim (the primitive, not prim.fun), "
               "args = the plain values of all arguments, kwargs, and, for every argument that "
               "is a Box, that Box in parents and its position in parent_argnums, in argument "
               "order. A reflected operator (__rmul__, __rsub__, ...) gets the left operand as "
               "`other`: call the primitive as (other, self).")


def described(observed, names, labels):
    """What the tracer checks compare of a recorded graph (:func:`recorded`): its nodes, with
    arguments that are not numbers as their repr, each named by its position and ``labels``' name
    for it (the primitive mini's trace has there); and the gradients of the inputs ``names`` that
    mini's backward_pass finds on the graph rebuilt with mini's Box."""
    return {"graph": {f"node {i} ({labels[i] if i < len(labels) else 'one node more'})":
                      {**row, "args": {f"argument {k}": _comparable(arg)
                                       for k, arg in enumerate(row["args"])},
                       "kwargs": _comparable(row["kwargs"])}
                      for i, row in enumerate(observed["nodes"])},
            "gradients of the inputs": _input_gradients(observed, names)}


def _comparable(value):
    """Numbers as they are, words (what the probe says of a value that is not plain) too, any
    other value (an index, a shape, keyword arguments) as its repr."""
    if isinstance(value, (int, float, np.ndarray, str)) and not isinstance(value, bool):
        return value
    return repr(sorted(value.items())) if isinstance(value, dict) else repr(value)


def _input_gradients(observed, names):
    """``{input name: gradient}`` of the end node (the last one), found by mini's backward_pass
    on the described graph rebuilt with mini's Box; a sentence where it cannot be rebuilt."""
    try:
        boxes = []
        for row in observed["nodes"]:
            if row["primitive"] == "input":
                boxes.append(Box(row["value"]))
                continue
            fun = getattr(mini, str(row["primitive"]), None)
            if not isinstance(fun, Primitive):
                raise TypeError(f"{row['primitive']} is not one of mini's primitives")
            boxes.append(Box(row["value"], fun, tuple(row["args"]), dict(row["kwargs"]),
                             [boxes[i] for i in row["parents"]], row["parent_argnums"]))
        grads = mini.backward_pass(np.ones(np.shape(boxes[-1].value)), boxes[-1])
        return {name: "not in the graph" if i is None else
                grads.get(boxes[i], np.zeros(np.shape(boxes[i].value)))
                for name, i in zip(names, observed["inputs"])}
    except Exception as error:          # the recorded graph does not compute
        return f"cannot be computed on this graph ({type(error).__name__}: {str(error)[:200]})"


def _tracer_case(what, inputs, steps):
    """Case: ``steps`` (operators and primitives) run on boxed ``inputs`` by the student's Box
    and by mini's; the graphs, and the gradients of the inputs, must agree."""
    names = [name for name, _ in inputs]

    @functools.cache
    def minis():
        boxes = {name: Box(value, name=name) for name, value in inputs}
        end = run_steps(steps, boxes, written)[steps[-1][0]]
        return recorded(end, [boxes[name] for name in names])

    def as_compared(observed):
        return described(observed, names, [row["primitive"] for row in minis()["nodes"]])

    return Case(what=what, probe="traced_graph", inputs={"program": (inputs, steps)},
                interpret=as_compared, expected=lambda: as_compared(minis()), hint=TRACER_HINT)


def check_tracer_running_example(rng):
    x1, x2 = (float(v) for v in rng.uniform(-1.0, 1.0, size=2))
    steps = [("x3", "*", ["x1"], {0: 1.5}, {}), ("x4", "*", ["x2"], {0: 2.0}, {}),
             ("x5", "+", ["x3", "x4"], {}, {}), ("x6", "exp", ["x5"], {}, {}),
             ("x7", "+", ["x1", "x6"], {}, {})]
    return _tracer_case(f"your Box tracing f = x1 + exp(1.5 * x1 + 2.0 * x2) at x1 = {x1:.4g}, "
                        f"x2 = {x2:.4g}", [("x1", x1), ("x2", x2)], steps)


def check_tracer_operators(rng):
    m, n, k = _dims(rng, 3)
    W = rng.standard_normal((n, k))
    steps = [("a", "*", ["x", "y"], {}, {}), ("t1", "*", ["a"], {0: 2.0}, {}),
             ("b", "-", ["t1", "y"], {}, {}), ("t2", "/", ["b"], {1: 3.0}, {}),
             ("c", "-", ["t2"], {0: 1.0}, {}), ("t3", "@", ["c"], {1: W}, {}),
             ("t4", "neg", ["t3"], {}, {}), ("e", "+", ["t4", "s"], {}, {}),
             ("t5", "*", ["e", "e"], {}, {}), ("t6", "+", ["t5"], {1: 1.0}, {}),
             ("f", "/", ["t6"], {0: 2.0}, {}), ("end", "sum", ["f"], {}, {"axis": 1})]
    return _tracer_case(
        f"your Box tracing a = x * y; b = 2.0 * a - y; c = 1.0 - b / 3.0; e = -(c @ W) + s; "
        f"f = 2.0 / (e * e + 1.0); sum(f, axis=1), with x of shape {(m, n)}, y of shape ({n},), "
        f"s a number and W a plain array of shape {(n, k)}",
        [("x", rng.standard_normal((m, n))), ("y", rng.standard_normal(n)),
         ("s", float(rng.standard_normal()))], steps)


def check_tracer_reflected(rng):
    m, n, p = _dims(rng, 3)
    V, c = rng.standard_normal((p, m)), rng.standard_normal(n)
    steps = [("a", "@", ["x"], {0: V}, {}), ("a1", "[]", ["a"], {1: 1}, {}),
             ("t", "tanh", ["a1"], {}, {}), ("b", "-", ["t", "z"], {}, {}),
             ("x0", "[]", ["x"], {1: (slice(None), 0)}, {}), ("u", "exp", ["x0"], {}, {}),
             ("w", "@", ["u"], {1: np.ones((m, n))}, {}), ("q", "+", ["w"], {0: 2.0}, {}),
             ("d", "/", ["q"], {0: c}, {}), ("bd", "*", ["b", "d"], {}, {}),
             ("z5", "-", ["z"], {1: 0.5}, {}), ("zb", "*", ["z5", "b"], {}, {}),
             ("r", "+", ["bd", "zb"], {}, {}),
             ("end", "sum", ["r"], {}, {"axis": 0, "keepdims": True})]
    return _tracer_case(
        f"your Box tracing a = V @ x; b = tanh(a[1]) - z; d = c / (2.0 + exp(x[:, 0]) @ ones); "
        f"sum(b * d + (z - 0.5) * b, axis=0, keepdims=True), with x of shape {(m, n)}, z of shape "
        f"({n},), V and c plain arrays of shapes {(p, m)} and ({n},)",
        [("x", rng.standard_normal((m, n))), ("z", rng.standard_normal(n))], steps)


# ---------------------------------------------------------------------------------------------
# add_outgrads
# ---------------------------------------------------------------------------------------------

def _add_outgrads_case(what, prev_g, g, hint, report_inputs=False):
    def expected():
        total = mini.add_outgrads(prev_g, g)
        if not report_inputs:
            return total
        return {"add_outgrads(prev_g, g)": total, "prev_g after the call": prev_g,
                "g after the call": g}

    return Case(what=what, probe="add_outgrads_total",
                inputs={"prev_g": prev_g, "g": g, "report_inputs": report_inputs},
                expected=expected, hint=hint)


def check_add_outgrads_first(rng):
    g = rng.standard_normal(_shape(rng))
    return _add_outgrads_case(f"add_outgrads(None, g) with g of shape {g.shape} (the first "
                              "contribution a node receives)", None, g,
                              "prev_g is None when nothing has arrived yet: the total is then g "
                              "itself.")


def check_add_outgrads_sum(rng):
    shape = _shape(rng)
    return _add_outgrads_case(f"add_outgrads(prev_g, g) with prev_g and g of shape {shape}",
                              rng.standard_normal(shape), rng.standard_normal(shape),
                              "a node with several outgoing edges gets the sum of their "
                              "contributions (L05 slide 20): return prev_g + g.")


def check_add_outgrads_inputs_unchanged(rng):
    shape = _shape(rng, ndims=(1, 2))
    return _add_outgrads_case(
        f"add_outgrads(prev_g, g) with arrays of shape {shape}, and its inputs afterwards",
        rng.standard_normal(shape), rng.standard_normal(shape),
        "add_outgrads must not change its inputs: a VJP may hand the very same array to two "
        "parents (the VJP of add returns g for both), so `prev_g += g` would change another "
        "node's gradient too. Return a new array, prev_g + g.", report_inputs=True)


# ---------------------------------------------------------------------------------------------
# unbroadcast, against mini's sum_to_shape, on every way a shape can be broadcast
# ---------------------------------------------------------------------------------------------

UNBROADCAST_HINT = ("numpy aligns shapes at the right: sum g over the leading axes `shape` does "
                    "not have, then, keeping the axis, over each axis where `shape` has length 1 "
                    "and g does not. The result must have exactly `shape`.")


def check_unbroadcast(rng):
    m, n, k = _dims(rng, 3)
    targets = [(m, 1), (n,), (), (1, n), (m, n), (1, 1), (1,)]
    shapes = [(shape, (m, n)) for shape in targets] + [((n,), (k, m, n)), ((m, 1), (k, m, n)),
                                                       ((1, m, 1), (k, m, n)), ((), (k,))]
    calls = [(f"unbroadcast(g of shape {g_shape}, {shape})", rng.standard_normal(g_shape), shape)
             for shape, g_shape in shapes]
    return Case(what=f"unbroadcast on {len(calls)} shapes, m, n, k = {m}, {n}, {k}",
                probe="unbroadcast_results", inputs={"calls": calls},
                interpret=lambda results: dict(zip((call for call, _, _ in calls), results)),
                expected=lambda: {call: sum_to_shape(g, shape) for call, g, shape in calls},
                hint=UNBROADCAST_HINT)


# ---------------------------------------------------------------------------------------------
# The student's VJP table, against mini's, one primitive and argument at a time
# ---------------------------------------------------------------------------------------------

def _unbroadcast_answered(calls):
    """The grader's unbroadcast for a VJP check: mini's sum_to_shape, for a g shaped like an
    output of the check's calls and the shape of one of their arguments, the only questions a
    VJP of this check asks (a question of another check's is not answered here)."""
    pairs = {(np.shape(ans), np.shape(arg)) for _, args, _, ans, _ in calls for arg in args
             if isinstance(arg, (np.ndarray, float))}

    def unbroadcast(g, shape):
        g, shape = np.asarray(g), tuple(int(n) for n in shape)
        if (g.shape, shape) not in pairs:
            raise ValueError(f"unbroadcast(g, shape) was given g of shape {g.shape} and shape "
                             f"{shape}: g must be shaped like the primitive's output, and shape "
                             "be the shape of the argument whose gradient it becomes")
        return sum_to_shape(g, shape)
    return unbroadcast


def _table_case(rng, primitive, argnum, variants, hint):
    """Case: the student's ``vjps[primitive][argnum]`` on every ``(args, kwargs)`` of
    ``variants``, against mini's VJP (for ``"broadcast_to"``, the notebook's own primitive:
    mini's way of undoing broadcasting).  One entry per variant, named by the call, so that the
    first wrong variant is the one reported."""
    label = primitive if primitive == "broadcast_to" else f"mini.{primitive}"
    forward = np.broadcast_to if primitive == "broadcast_to" else getattr(mini, primitive).fun
    calls = []
    for args, kwargs in variants:
        ans = forward(*args, **kwargs)
        g = rng.standard_normal(np.shape(ans))
        keywords = "".join(f", {key}={value!r}" for key, value in kwargs.items())
        calls.append((f"vjps[{label}][{argnum}](g, ans, {_arguments(args)}{keywords}) with g of "
                      f"shape {g.shape}", args, kwargs, ans, g))

    def expected():
        if primitive == "broadcast_to":
            return {call: sum_to_shape(g, np.shape(args[0])) for call, args, _, _, g in calls}
        vjp = mini.vjp_of(getattr(mini, primitive), argnum)
        return {call: vjp(g, ans, *args, **kwargs) for call, args, kwargs, ans, g in calls}

    return Case(what=f"your VJP vjps[{label}][{argnum}] on {len(calls)} argument shapes",
                probe="vjp_results",
                inputs={"primitive": primitive, "argnum": argnum, "calls": calls},
                interpret=lambda results: dict(zip((call[0] for call in calls), results)),
                expected=expected, stand_ins={"unbroadcast": _unbroadcast_answered(calls)},
                hint=hint)


def _broadcast_shapes(m, n):
    """Every way two arguments can broadcast against each other, in both orders."""
    pairs = [((m, 1), (n,)), ((m, n), (n,)), ((m, n), ()), ((1, n), (m, 1)), ((m, n), (m, n))]
    return pairs + [pair[::-1] for pair in pairs[:-1]]


BINARY_HINT = ("each argument's VJP is g times the partial derivative of the output with respect "
               "to that argument, entry by entry, and then undone to the argument's shape with "
               "unbroadcast: the forward pass broadcast it up to g's shape.")


def _binary_check(primitive, argnum):
    def check(rng):
        m, n = _dims(rng, 2)
        variants = []
        for x_shape, y_shape in _broadcast_shapes(m, n):
            x = rng.standard_normal(x_shape)
            y = rng.uniform(0.5, 2.0, size=y_shape) * rng.choice([-1.0, 1.0], size=y_shape)
            variants.append(((x, y), {}))
        return _table_case(rng, primitive, argnum, variants, BINARY_HINT)
    check.__name__ = f"check_{primitive}_{argnum}_vjp"
    return check


UNARY_HINT = ("an elementwise function has a diagonal Jacobian: multiply g entry by entry by the "
              "derivative at x; where the derivative is a function of the output, use ans.")


def _unary_check(primitive, positive=False):
    def check(rng):
        variants = []
        for shape in [(), (int(rng.integers(2, 5)),), tuple(_dims(rng, 2))]:
            x = rng.uniform(0.2, 3.0, size=shape) if positive else 1.5 * rng.standard_normal(shape)
            variants.append(((x,), {}))
        return _table_case(rng, primitive, 0, variants, UNARY_HINT)
    check.__name__ = f"check_{primitive}_vjp"
    return check


ELEMENTWISE_CHECKS = ([_binary_check(primitive, argnum)
                       for primitive in ("add", "subtract", "multiply", "divide")
                       for argnum in (0, 1)]
                      + [_unary_check("negative"), _unary_check("exp"),
                         _unary_check("log", positive=True), _unary_check("tanh")])


def _x2(rng):
    return rng.standard_normal(tuple(_dims(rng, 2)))


def _x3(rng):
    return rng.standard_normal(tuple(_dims(rng, 3)))


def check_transpose_vjp(rng):
    x2, x3 = _x2(rng), _x3(rng)
    variants = [((x2,), {}), ((x3,), {}), ((x2,), {"axes": (1, 0)}), ((x2,), {"axes": (-1, 0)})]
    variants += [((x3,), {"axes": axes}) for axes in
                 [(1, 0, 2), (2, 0, 1), (1, 2, 0), (-1, 0, 1), (0, -1, -2), (-2, -3, -1)]]
    return _table_case(rng, "transpose", 0, variants,
                       "the gradient must undo the permutation: g's axis i is x's axis axes[i]. "
                       "Turn negative axes into positions first (axis % x.ndim), and with "
                       "axes=None the permutation reversed every axis.")


def check_reshape_vjp(rng):
    x3 = _x3(rng)
    a, b, c = x3.shape
    variants = [((x3, shape), {})
                for shape in [(a * b, c), (a, b * c), (-1,), (c, -1), (1, a, b, c)]]
    return _table_case(rng, "reshape", 0, variants,
                       "reshape keeps the entries in order: the gradient is g in x's shape.")


def check_broadcast_to_vjp(rng):
    m, n, k = _dims(rng, 3)
    variants = [((rng.standard_normal(shape), target), {})
                for shape, target in [((m, 1), (m, n)), ((n,), (m, n)), ((), (m, n)),
                                      ((1, n), (k, m, n)), ((m, 1), (k, m, n)), ((n,), (n,))]]
    return _table_case(rng, "broadcast_to", 0, variants,
                       "broadcast_to copies entries as broadcasting does: undo it with "
                       "unbroadcast to x's shape.")


REDUCE_HINT = ("every entry of x that went into an output entry gets that entry's g (over the "
               "number of entries averaged, for mean). With keepdims=False the reduced axes are "
               "missing from g: put them back (np.expand_dims, which takes a tuple too) before "
               "spreading g to x's shape, or numpy lines g up with the wrong axes.")


def _reduce_check(primitive):
    def check(rng):
        x2, x3 = _x2(rng), _x3(rng)
        variants = [((x2,), {}), ((x3,), {}), ((x3,), {"keepdims": True})]
        variants += [((x3,), {"axis": axis, "keepdims": keepdims})
                     for axis in (0, 1, 2, -1, -2, (0, 2), (-1, 0)) for keepdims in (False, True)]
        variants += [((x2,), {"axis": axis}) for axis in (0, -1)]
        return _table_case(rng, primitive, 0, variants, REDUCE_HINT)
    check.__name__ = f"check_{primitive}_vjp"
    return check


MATMUL_HINT = ("for C = A @ B with A of shape (m, k), B of shape (k, n) and g of shape (m, n): "
               "each gradient has its argument's shape, and only one product of g with the other "
               "factor (transposed) has it (L05 slide 23, y = W x gives x_bar = W^T y_bar). With "
               "square matrices a missing transpose shows only in the numbers.")


def _matmul_check(argnum):
    def check(rng):
        m, k, n = (int(d) for d in rng.permutation([1, 2, 3, 4, 5])[:3])
        s = int(rng.integers(2, 5))
        variants = [((rng.standard_normal((m, k)), rng.standard_normal((k, n))), {}),
                    ((rng.standard_normal((s, s)), rng.standard_normal((s, s))), {})]
        return _table_case(rng, "matmul", argnum, variants, MATMUL_HINT)
    check.__name__ = f"check_matmul_{argnum}_vjp"
    return check


def check_getitem_vjp(rng):
    x2, x1 = _x2(rng), rng.standard_normal(5)
    variants = [((x2, 0), {}), ((x2, (slice(None), 1)), {}), ((x1, slice(1, None)), {}),
                ((x1, np.array([0, 2, 0, 0])), {}), ((x2, (np.array([1, 0, 1]), slice(None))), {})]
    return _table_case(rng, "getitem", 0, variants,
                       "x[index] picks entries; the gradient is zeros shaped like x with g sent "
                       "back to the picked places, ADDED where an index picks an entry more than "
                       "once (np.add.at; x_bar[index] += g keeps only one of the repeats).")


SHAPE_CHECKS = [check_transpose_vjp, check_reshape_vjp, check_broadcast_to_vjp,
                _reduce_check("sum"), _reduce_check("mean"), _matmul_check(0), _matmul_check(1),
                check_getitem_vjp]


def check_log_softmax_vjp(rng):
    variants = [((rng.standard_normal(shape),), {"axis": axis})
                for shape, axis in [((5,), -1), ((3, 4), -1), ((3, 4), 1), ((3, 4), 0),
                                    ((2, 3, 4), 1), ((2, 3, 4), -3)]]
    variants.append(((rng.standard_normal((3, 4)),), {}))
    return _table_case(rng, "log_softmax", 0, variants,
                       "each output entry of a slice depends on every entry of that slice; J^T g "
                       "needs the softmax (exp(ans)) and the sum of g along axis, kept as an axis "
                       "of length 1 so that it broadcasts along the right axis.")


# ---------------------------------------------------------------------------------------------
# backward_pass on graphs pre-traced from programs, their VJPs the nodes' local Jacobians
# ---------------------------------------------------------------------------------------------

BACKWARD_HINT = ("visit the nodes in the reverse of toposort(end_node)'s order, so that a node's "
                 "total is complete before it is used (a KeyError for a node means it was "
                 "reached before its readers sent their shares); start the dict with "
                 "{end_node: g}; send each parent its share from vjps[node.fun][argnum], called "
                 "with (g, node.value, *node.args, **node.kwargs), and add shares up with "
                 "add_outgrads.")


def _traced(program):
    """``(end node, {name: node})`` of ``program`` traced with mini's Box, each node named."""
    inputs, steps = program
    nodes = run_steps(steps, {name: Box(value, name=name) for name, value in inputs})
    for name, _, _, _, _ in steps:
        nodes[name].name = name
    return nodes[steps[-1][0]], nodes


def local_jacobians(nodes):
    """``{node: [J, ...]}`` for every operation of a program traced with mini's Box (``nodes``,
    :func:`_traced`'s), one ``J`` per parent, in the order of its parents: the matrix of the
    node's partial derivatives by that argument, (output size) x (argument size), as nested
    lists; row i is mini's VJP of the one-hot g of output entry i."""
    jacobians = {}
    for name, node in nodes.items():
        if node.fun is None:
            continue
        ans, args = node.vjp_operands()
        jacobians[name] = []
        for argnum in node.parent_argnums:
            vjp, rows = mini.vjp_of(node.fun, argnum), []
            for i in range(np.size(ans)):
                e_i = np.zeros(np.size(ans))
                e_i[i] = 1.0
                rows.append(np.ravel(vjp(e_i.reshape(np.shape(ans)), ans, *args, **node.kwargs)))
            jacobians[name].append(np.array(rows, dtype=np.float64).reshape(
                np.size(ans), np.size(args[argnum])).tolist())
    return jacobians


def _backward_case(rng, program, what, only=None, hint=BACKWARD_HINT, shown=""):
    """Case: the student's backward_pass on the pre-traced ``program`` against mini's on the
    program traced with mini's Box, node by node, listed in reverse topological order, so that
    the first difference reported is the first place where the backward sweep went wrong (or
    only the nodes named in ``only``); ``shown`` is added to the description."""
    end, nodes = _traced(program)
    shape = np.shape(end.value)
    g = float(rng.standard_normal()) if shape == () else rng.standard_normal(shape)
    grads = mini.backward_pass(g, end)
    keep = [nodes[name] for name in only] if only else reversed(mini.toposort(end))
    expected = {node_key(node): grads.get(node, MISSING) for node in keep}
    return Case(what=what + f", g = {_describe(g)}" + shown, probe="backward_pass_gradients",
                inputs={"program": program, "jacobians": local_jacobians(nodes), "g": g,
                        "only": only},
                expected=lambda: expected,
                stand_ins={"add_outgrads": _add_outgrads_answered(nodes, grads)}, hint=hint)


def _add_outgrads_answered(nodes, grads):
    """add_outgrads' stand-in for a backward_pass check: ``prev_g + share``, answered only for
    the shares a correct reverse pass of this case's program (``nodes``, their ``grads``) sends
    to a node (one of them, and the sum of some others of the same node), so for no other
    check's arrays."""
    shares = {}
    for node in nodes.values():
        if node.fun is not None:
            ans, args = node.vjp_operands()
            for argnum, parent in zip(node.parent_argnums, node.parents):
                shares.setdefault(id(parent), []).append(np.asarray(
                    mini.vjp_of(node.fun, argnum)(grads[node], ans, *args, **node.kwargs)))

    def add_outgrads(prev_g, g):
        for parts in shares.values():
            for j, part in enumerate(parts):
                others = parts[:j] + parts[j + 1:]
                if _same_arguments([g], [part]) and any(
                        _same_arguments([prev_g], [sum(chosen)])
                        for n in range(1, len(others) + 1)
                        for chosen in itertools.combinations(others, n)):
                    return mini.add_outgrads(prev_g, g)
        raise ValueError("add_outgrads was asked to add arrays that a correct reverse pass of this "
                         "graph does not send to one node: is a node's total used before all "
                         "of its readers sent their shares?")
    return add_outgrads


def check_running_example(rng):
    x1, x2 = (float(v) for v in rng.uniform(-1.0, 1.0, size=2))
    program = ([("x1", x1), ("x2", x2)],
               [("x3", "multiply", ["x1"], {0: 1.5}, {}), ("x4", "multiply", ["x2"], {0: 2.0}, {}),
                ("x5", "add", ["x3", "x4"], {}, {}), ("x6", "exp", ["x5"], {}, {}),
                ("x7", "add", ["x1", "x6"], {}, {})])
    return _backward_case(rng, program, f"backward_pass(g, x7) on the running example f = x1 + "
                                        f"exp(1.5 x1 + 2.0 x2) at x1 = {x1:.4g}, x2 = {x2:.4g}")


MOVES = {"unary": 1, "binary": 2, "matmul": 1, "reduce": 1, "log1p_square": 1, "transpose": 1}
"""Elementwise functions, broadcasting, products, sums with an axis and keepdims, a node read twice
(in log(a * a + 1), with a number in the add), transposes."""


def _random_program(rng, n_steps):
    """A random program over X of shape (m, n) and two to four of W (n, k), b (n,), c (m, 1) and
    a number s; every value it does not read is joined into the end, so every node has a
    gradient to check."""
    m, n, k = _dims(rng, 3)
    others = [("W", (n, k)), ("b", (n,)), ("c", (m, 1)), ("s", ())]
    chosen = sorted(rng.choice(len(others), size=int(rng.integers(2, 5)), replace=False))
    return random_program(rng, [("X", (m, n))] + [others[i] for i in chosen], n_steps, MOVES,
                          join_unread=True)


def _random_program_check(n_steps):
    def check(rng):
        program = _random_program(rng, n_steps)
        end_name = program[1][-1][0]
        return _backward_case(rng, program, f"backward_pass(g, {end_name}) on the random program "
                                            "below, traced with mini's primitives",
                              shown=f"; the program:{listing(program)}\n")
    check.__name__ = f"check_random_program_{n_steps}"
    return check


def check_layer(rng):
    """A layer with broadcasting (+ b), a node read twice (H * H) and sums over axis 1, whose VJPs
    need the node's kwargs."""
    m, n, k = (int(d) for d in rng.permutation([2, 3, 4, 5])[:3])
    program = ([("X", rng.standard_normal((m, n))), ("W", rng.standard_normal((n, k))),
                ("b", rng.standard_normal(k))],
               [("Z", "matmul", ["X", "W"], {}, {}), ("A", "add", ["Z", "b"], {}, {}),
                ("H", "tanh", ["A"], {}, {}), ("S", "multiply", ["H", "H"], {}, {}),
                ("r", "sum", ["S"], {}, {"axis": 1}), ("q", "sum", ["X"], {}, {"axis": 1}),
                ("end", "add", ["r", "q"], {}, {})])
    return _backward_case(rng, program, f"backward_pass(g, end) for end = sum(H * H, axis=1) + "
                                        f"sum(X, axis=1) with H = tanh(X @ W + b), X of shape "
                                        f"{(m, n)}, W of shape {(n, k)}, b of shape ({k},)",
                          hint="the sums over axis 1 need their axis in the VJP: call each VJP "
                               "with **node.kwargs. " + BACKWARD_HINT)


def check_ladder(rng):
    """x and w feed every rung: v <- tanh(v) + w * v, so each v has two outgoing edges and w ten."""
    n, rungs = int(rng.integers(2, 5)), 10
    steps, v = [], "x"
    for i in range(1, rungs + 1):
        steps += [(f"t{i}", "tanh", [v], {}, {}), (f"p{i}", "multiply", ["w", v], {}, {}),
                  (f"v{i}", "add", [f"t{i}", f"p{i}"], {}, {})]
        v = f"v{i}"
    program = ([("x", rng.standard_normal(n)), ("w", rng.uniform(-0.8, 0.8, size=n))], steps)
    return _backward_case(rng, program, f"backward_pass(g, v{rungs}) on a ladder of {rungs} "
                                        "rungs, v_i = tanh(v_(i-1)) + w * v_(i-1) with v_0 = x "
                                        f"(each v feeds two nodes, w feeds {rungs}), x and w of "
                                        f"shape ({n},)")


def check_long_chain(rng):
    steps, v = [], "x"
    for i in range(1, 1501):
        c, d = float(np.exp(0.02 * rng.standard_normal())), float(rng.standard_normal())
        steps += [(f"m{i}", "multiply", [v], {1: c}, {}), (f"v{i}", "add", [f"m{i}"], {1: d}, {})]
        v = f"v{i}"
    program = ([("x", float(rng.standard_normal()))], steps)
    return _backward_case(rng, program, "backward_pass(g, v1500) on a chain of 3001 nodes, "
                                        "v_i = c_i * v_(i-1) + d_i with v_0 = x",
                          only=["x", "v750"], hint="a walk that calls itself once per node stops "
                          "at Python's recursion limit (about 1000 calls deep): loop over "
                          "the reversed topological order instead. " + BACKWARD_HINT)


# ---------------------------------------------------------------------------------------------
# make_vjp (a Box that only starts the graph, fun's graph pre-traced, backward_pass answered
# here) and grad (make_vjp's vjp answered here)
# ---------------------------------------------------------------------------------------------

def _gradients_of(steps, x):
    """The grader's backward_pass for make_vjp's checks: ``{node name: gradient}`` of ``steps``'
    graph traced at x, for the g it is given (shaped like the output)."""
    def gradients(g):
        end, nodes = _traced(([("x", x)], steps))
        if np.shape(g) != np.shape(end.value):
            raise ValueError(f"backward_pass was given g of shape {np.shape(g)}, but the end node "
                             f"has shape {np.shape(end.value)}: pass on the g vjp was given")
        grads = mini.backward_pass(g, end)
        return {name: grads.get(node, np.zeros(np.shape(node.value)))
                for name, node in nodes.items()}
    return gradients


def _vjp_of(steps, x):
    """The grader's vjp(g) of ``steps``' function at x (mini's make_vjp), for grad's and
    jacobian_reverse's stand-in make_vjp."""
    vjp, value = mini.make_vjp(program_function(steps), x)

    def answered(g):
        if np.shape(g) != np.shape(value):
            raise ValueError(f"vjp(g) was given g of shape {np.shape(g)}, but fun's output has "
                             f"shape {np.shape(value)}: g is shaped like the OUTPUT (a number "
                             "for a scalar function), not like x")
        return vjp(g)
    return answered


MAKE_VJP_HINT = ("trace fun ONCE, on a Box holding x; what fun returns is the end node of the "
                 "graph. Return its plain .value, and a vjp(g) that runs backward_pass(g, end) on "
                 "that one graph and picks out the start box's gradient (L05 slide 28).")


def _make_vjp_case(what, steps, x, gs, hint=MAKE_VJP_HINT):
    def expected():
        vjp, value = mini.make_vjp(program_function(steps), x)
        return {"value": value, **{f"vjp(g{i})": vjp(g) for i, g in enumerate(gs, start=1)},
                "fun ran": "once"}

    return Case(what=what, probe="make_vjp_results",
                inputs={"steps": steps, "x": x, "gs": gs, "constant": None},
                interpret=_ran, expected=expected,
                stand_ins={"backward_pass": _gradients_of(steps, x)}, hint=hint)


def _running_example_steps(x2):
    return [("x3", "multiply", ["x"], {0: 1.5}, {}), ("x5", "add", ["x3"], {1: 2.0 * x2}, {}),
            ("x6", "exp", ["x5"], {}, {}), ("x7", "add", ["x", "x6"], {}, {})]


def check_make_vjp_running_example(rng):
    x1, x2 = (float(v) for v in rng.uniform(-1.0, 1.0, size=2))
    g = float(rng.standard_normal())
    return _make_vjp_case(
        f"make_vjp(f, x1) for f(x1) = x1 + exp(1.5 x1 + 2.0 x2) at x1 = {x1:.4g} (x2 = {x2:.4g}), "
        f"then vjp(g1) with g1 = {g:.4g}", _running_example_steps(x2), x1, [g])


def check_make_vjp_matrix(rng):
    m, n, k = _dims(rng, 3)
    W, c = rng.standard_normal((n, k)), rng.standard_normal(k)
    X = rng.standard_normal((m, n))
    steps = [("Z", "matmul", ["x"], {1: W}, {}), ("H", "tanh", ["Z"], {}, {}),
             ("P", "multiply", ["H"], {1: c}, {}),
             ("S", "sum", ["x"], {}, {"axis": 1, "keepdims": True}),
             ("f", "add", ["P", "S"], {}, {})]
    return _make_vjp_case(
        f"make_vjp(f, X) for f(X) = tanh(X @ W) * c + sum(X, axis=1, keepdims=True) with X of "
        f"shape {X.shape}, W of shape {W.shape}, c of shape {c.shape}; then vjp(g1), vjp(g2) and "
        f"vjp(g3), different g of shape {(m, k)} on the same trace", steps, X,
        [rng.standard_normal((m, k)) for _ in range(3)],
        MAKE_VJP_HINT + " vjp must use the g it is given and may be called many times, without "
                        "running fun again.")


def check_make_vjp_constant(rng):
    x = rng.standard_normal(_shape(rng, ndims=(1, 2)))
    constant = rng.standard_normal(3)
    return Case(what=f"make_vjp(f, x) for a function that ignores x (it returns a constant array), "
                     f"x of shape {x.shape}; then vjp(g1)",
                probe="make_vjp_results",
                inputs={"steps": [], "x": x, "gs": [rng.standard_normal(3)], "constant": constant},
                interpret=_ran,
                expected=lambda: {"value": constant, "vjp(g1)": np.zeros(x.shape),
                                  "fun ran": "once"},
                hint="when fun's output does not depend on x, no graph leads back to x: fun "
                     "returns a plain array, not a Box. Return that array as the value, and let "
                     "vjp(g) return zeros shaped like x (np.zeros_like(x)).")


GRAD_HINT = ("grad(fun) returns a function of x: trace fun at x with make_vjp(fun, x) and call "
             "the vjp with the output's own gradient, 1.0 (x_bar_7 = 1 on L05 slide 19).")


def _grad_case(what, steps, x):
    fun = program_function(steps)
    return Case(what=what, probe="grad_result",
                inputs={"steps": steps, "x": x, "value": fun(x)},
                expected=lambda: mini.grad(fun)(x), stand_ins={"vjp": _vjp_of(steps, x)},
                hint=GRAD_HINT)


def check_grad_running_example(rng):
    x1, x2 = (float(v) for v in rng.uniform(-1.0, 1.0, size=2))
    return _grad_case(f"grad(f)(x1) for f(x1) = x1 + exp(1.5 x1 + 2.0 x2) at x1 = {x1:.4g} "
                      f"(x2 = {x2:.4g})", _running_example_steps(x2), x1)


def check_grad_vector(rng):
    m, n = _dims(rng, 2, high=6)
    A, b, c = rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal(m)
    steps = [("u", "matmul", ["x"], {0: A}, {}), ("z", "add", ["u"], {1: b}, {}),
             ("h", "tanh", ["z"], {}, {}), ("p", "multiply", ["h"], {1: c}, {}),
             ("f", "sum", ["p"], {}, {})]
    return _grad_case(f"grad(f)(x) for f(x) = sum(tanh(A @ x + b) * c) with x of shape ({n},), "
                      f"A of shape {A.shape}", steps, rng.standard_normal(n))


def check_grad_network(rng):
    batch, d, h = _dims(rng, 3, high=6)
    X, w2, y = rng.standard_normal((batch, d)), rng.standard_normal(h), rng.standard_normal(batch)
    steps = [("Z", "matmul", ["x"], {0: X}, {}), ("H", "tanh", ["Z"], {}, {}),
             ("p", "matmul", ["H"], {1: w2}, {}), ("e", "subtract", ["p"], {1: y}, {}),
             ("s", "multiply", ["e", "e"], {}, {}), ("loss", "mean", ["s"], {}, {})]
    return _grad_case(f"grad(loss)(W1) for loss(W1) = mean((tanh(X @ W1) @ w2 - y) ** 2) with X of "
                      f"shape {X.shape}, W1 of shape {(d, h)}", steps,
                      0.5 * rng.standard_normal((d, h)))


# ---------------------------------------------------------------------------------------------
# numerical_grad, against mini.grad (analytic) and mini.numerical_grad (the formula itself)
# ---------------------------------------------------------------------------------------------

NUMERICAL_HINT = ("for each entry i: shift a float64 copy of x by +h and by -h in entry i only, "
                  "and set gradient[i] = (f(x + h e_i) - f(x - h e_i)) / (2h) (L05 slide 30). The "
                  "result has x's shape.")


def _numerical_case(what, steps, x, expected, hint=NUMERICAL_HINT, h=None, report_x=False):
    def expected_value():
        gradient = expected()
        return {"gradient": gradient, "x after the call": x} if report_x else gradient

    return Case(what=what, probe="numerical_gradient",
                inputs={"steps": steps, "x": x, "h": h, "report_x": report_x},
                expected=expected_value, rtol=1e-5, atol=1e-6, hint=hint)


def _analytic(steps, x):
    return lambda: mini.grad(program_function(steps))(np.asarray(x, dtype=np.float64))


def check_numerical_vector(rng):
    m, n = _dims(rng, 2, high=6)
    A, b, c, d = (rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal(m),
                  rng.uniform(0.5, 2.0, size=n))
    steps = [("u", "matmul", ["x"], {0: A}, {}), ("z", "add", ["u"], {1: b}, {}),
             ("t", "tanh", ["z"], {}, {}), ("ct", "multiply", ["t"], {0: c}, {}),
             ("s1", "sum", ["ct"], {}, {}), ("xx", "multiply", ["x", "x"], {}, {}),
             ("dxx", "multiply", ["xx"], {0: 0.5 * d}, {}), ("s2", "sum", ["dxx"], {}, {}),
             ("f", "add", ["s1", "s2"], {}, {})]
    x = rng.standard_normal(n)
    return _numerical_case(f"numerical_grad(f, x) for f(x) = sum(c * tanh(A @ x + b)) + "
                           f"0.5 sum(d * x * x), x of shape {x.shape}, against the analytic "
                           "gradient", steps, x, _analytic(steps, x))


def check_numerical_matrix(rng):
    shape = _shape(rng, ndims=(2,), low=2)
    C, D = rng.standard_normal(shape), rng.standard_normal(shape)
    steps = [("xx", "multiply", ["x", "x"], {}, {}), ("p", "add", ["xx"], {0: 1.0}, {}),
             ("l", "log", ["p"], {}, {}), ("lc", "multiply", ["l"], {1: C}, {}),
             ("s1", "sum", ["lc"], {}, {}), ("x3", "multiply", ["x"], {0: 0.3}, {}),
             ("e", "exp", ["x3"], {}, {}), ("ed", "multiply", ["e"], {1: D}, {}),
             ("s2", "sum", ["ed"], {}, {}), ("f", "add", ["s1", "s2"], {}, {})]
    X = rng.standard_normal(shape)
    return _numerical_case(f"numerical_grad(f, X) for f(X) = sum(log(1 + X^2) * C) + "
                           f"sum(exp(0.3 X) * D), X of shape {shape}, and X after the call",
                           steps, X, _analytic(steps, X), report_x=True,
                           hint=NUMERICAL_HINT + " Work on a copy: x must be unchanged afterwards "
                           "(np.asarray returns x itself when it is already float64; "
                           "np.array(x, dtype=np.float64) copies).")


def check_numerical_scalar(rng):
    a, b = float(rng.uniform(-1, 1)), float(rng.uniform(-1, 1))
    steps = [("ax", "multiply", ["x"], {0: a}, {}), ("e", "exp", ["ax"], {}, {}),
             ("t", "tanh", ["x"], {}, {}), ("et", "multiply", ["e", "t"], {}, {}),
             ("xx", "multiply", ["x", "x"], {}, {}), ("bxx", "multiply", ["xx"], {0: b}, {}),
             ("f", "add", ["et", "bxx"], {}, {})]
    x = float(rng.uniform(-2, 2))
    return _numerical_case(f"numerical_grad(f, x) for f(x) = exp({a:.3g} x) tanh(x) + {b:.3g} x^2 "
                           f"at the Python float x = {x:.4g}", steps, x, _analytic(steps, x),
                           hint=NUMERICAL_HINT + " A Python float is an array of shape (): "
                           "np.array(x, dtype=np.float64) and np.ndindex(()) handle it.")


def check_numerical_float32(rng):
    n = int(rng.integers(2, 6))
    A, b = rng.standard_normal((n, n)), rng.standard_normal(n)
    steps = [("u", "matmul", ["x"], {0: A}, {}), ("z", "add", ["u"], {1: b}, {}),
             ("t", "tanh", ["z"], {}, {}), ("f", "sum", ["t"], {}, {})]
    x32 = rng.standard_normal(n).astype(np.float32)
    return _numerical_case(f"numerical_grad(f, x) for f(x) = sum(tanh(A @ x + b)) with x a float32 "
                           f"array of shape ({n},)", steps, x32, _analytic(steps, x32),
                           hint="compute in float64 whatever dtype x has (L05 slide 30): in "
                           "float32, x + 1e-6 is x rounded to about 7 digits, so the difference "
                           "quotient is mostly rounding error. Start from "
                           "np.array(x, dtype=np.float64).")


def _cubic(rng, n):
    """Steps of f(x) = sum(x ** 3) + (a . x) ** 3: its central differences are exact up to the
    h^2 terms, and through a . x every entry's depends on all the others."""
    a = rng.uniform(0.5, 1.5, size=n) * rng.choice([-1.0, 1.0], size=n)
    steps = [("xx", "multiply", ["x", "x"], {}, {}), ("x3", "multiply", ["xx", "x"], {}, {}),
             ("s", "sum", ["x3"], {}, {}), ("ax", "matmul", ["x"], {0: a}, {}),
             ("ax2", "multiply", ["ax", "ax"], {}, {}), ("ax3", "multiply", ["ax2", "ax"], {}, {}),
             ("f", "add", ["s", "ax3"], {}, {})]
    return steps


def check_numerical_step(rng):
    x = rng.uniform(-2, 2, size=int(rng.integers(2, 6)))
    h = float(rng.choice([0.5, 0.25, 0.1]))
    steps = _cubic(rng, x.size)
    return _numerical_case(f"numerical_grad(f, x, h={h}) for f(x) = sum(x ** 3) + (a . x) ** 3, x "
                           f"of shape {x.shape}: with this large h the central difference is "
                           "far from the derivative, and exactly what it must be",
                           steps, x, lambda: mini.numerical_grad(program_function(steps), x, h=h),
                           h=h, hint="use the h you are given, and the CENTRAL difference "
                                     "(f(x + h e_i) - f(x - h e_i)) / (2h): the one-sided "
                                     "(f(x + h e_i) - f(x)) / h differs from it by about h f''/2.")


def check_numerical_puts_entries_back(rng):
    x = rng.uniform(-2, 2, size=int(rng.integers(3, 7)))
    h = float(rng.choice([0.5, 0.25]))
    steps = _cubic(rng, x.size)
    return _numerical_case(f"numerical_grad(f, x, h={h}) for f(x) = sum(x ** 3) + (a . x) ** 3, x "
                           f"of shape {x.shape}, and x after the call: every entry of f's "
                           "gradient depends on all of x, so each difference must be taken with "
                           "the other entries as they were", steps, x,
                           lambda: mini.numerical_grad(program_function(steps), x, h=h), h=h,
                           report_x=True,
                           hint="after the two shifted evaluations of entry i, put x[i] back "
                                "before you shift the next entry; and shift a copy, so that the "
                                "caller's x is unchanged.")


# ---------------------------------------------------------------------------------------------
# Forward mode: the JVP table against mini's; jvp against make_jvp, the Jacobians against
# mini's jacobian, with JVPs (and for jacobian_reverse a make_vjp) answered here
# ---------------------------------------------------------------------------------------------

JVP_TABLE_HINT = ("jvps[prim][argnum](t, ans, *args, **kwargs) is J t for that argument alone: the "
                  "output's change when the argument moves along t. An elementwise function's J "
                  "is diagonal (the derivative its VJP multiplies g by, here times t); for a "
                  "function linear in the argument, J t is the function applied to t. It may be "
                  "shaped like the output or broadcast to it.")


def _jvp_table_case(rng, primitive, argnums, variants):
    prim = getattr(mini, primitive)
    calls = []
    for args, kwargs in variants:
        ans = prim.fun(*args, **kwargs)
        for argnum in argnums:
            t = rng.standard_normal(np.shape(args[argnum]))
            keywords = "".join(f", {key}={value!r}" for key, value in kwargs.items())
            calls.append((f"jvps[mini.{primitive}][{argnum}](t, ans, {_arguments(args)}"
                          f"{keywords}) with t of shape {t.shape}", argnum, args, kwargs, ans, t))

    def interpret(results):
        """Each tangent as the output's: a share shaped like the argument broadcasts."""
        return {call: _as_output(result, np.shape(ans))
                for (call, _, _, _, ans, _), result in zip(calls, results)}

    def expected():
        return {call: np.broadcast_to(mini.jvp_of(prim, argnum)(t, ans, *args, **kwargs),
                                      np.shape(ans))
                for call, argnum, args, kwargs, ans, t in calls}

    return Case(what=f"your JVPs jvps[mini.{primitive}][{', '.join(map(str, argnums))}] on "
                     f"{len(variants)} argument shapes",
                probe="jvp_entries", inputs={"primitive": primitive, "calls": calls},
                interpret=interpret, expected=expected, hint=JVP_TABLE_HINT)


def _as_output(result, shape):
    """``result`` broadcast to the output's ``shape``, where it is numbers that broadcast."""
    numbers = isinstance(result, (int, float, np.ndarray)) and not isinstance(result, bool)
    try:
        if numbers and np.broadcast_shapes(np.shape(result), shape) == shape:
            return np.broadcast_to(result, shape)
    except ValueError:
        pass
    return result


def _jvp_table_check(primitive, argnums, draw):
    def check(rng):
        return _jvp_table_case(rng, primitive, argnums, draw(rng))
    check.__name__ = f"check_{primitive}_jvps"
    return check


def _pairs(rng):
    m, n = _dims(rng, 2)
    return [((rng.standard_normal(x_shape),
              rng.uniform(0.5, 2.0, size=y_shape) * rng.choice([-1.0, 1.0], size=y_shape)), {})
            for x_shape, y_shape in [((m, n), (m, n)), ((m, 1), (n,)), ((n,), ())]]


def _singles(rng):
    return [((1.5 * rng.standard_normal(shape),), {}) for shape in [(), tuple(_dims(rng, 2))]]


def _products(rng):
    m, k, n = _dims(rng, 3)
    return [((rng.standard_normal((m, k)), rng.standard_normal((k, n))), {}),
            ((rng.standard_normal((m, k)), rng.standard_normal(k)), {})]


def _sums(rng):
    x = _x3(rng)
    return [((x,), {}), ((x,), {"axis": 1}), ((x,), {"axis": -1, "keepdims": True}),
            ((x,), {"axis": (0, 2)})]


def _picks(rng):
    x = _x2(rng)
    return [((x, 0), {}), ((x, (slice(None), 1)), {}), ((x[0], np.array([0, 1, 0])), {})]


JVP_TABLE_CHECKS = ([_jvp_table_check(primitive, (0, 1), _pairs)
                     for primitive in ("add", "subtract", "multiply", "divide")]
                    + [_jvp_table_check(primitive, (0,), _singles) for primitive in ("exp", "tanh")]
                    + [_jvp_table_check("matmul", (0, 1), _products),
                       _jvp_table_check("sum", (0,), _sums),
                       _jvp_table_check("getitem", (0,), _picks)])


def _jvp_answered(steps, x):
    """The grader's JVPs for a forward-mode check: mini's, for the steps of the check's function
    at their arguments when it runs at x, the only questions a Dual of this check asks (with any
    tangent).  Asked at other arguments it refuses: mini's JVP of an elementwise primitive is the
    formula of its VJP, an answer of another fill-in."""
    values = run_steps(steps, {"x": x})
    asked = [(primitive_name, arguments(operands, constants, values))
             for _, primitive_name, operands, constants, _ in steps]

    def jvp(name, argnum, t, ans, args, kwargs):
        if not any(name == step and _same_arguments(args, known) for step, known in asked):
            raise ValueError(f"the JVP of {name} was asked for at arguments at which this check's "
                             "function does not call it: pass the plain values of the Dual's "
                             "arguments")
        return mini.jvp_of(getattr(mini, name), int(argnum))(t, ans, *args, **kwargs)
    return jvp


def _same_arguments(given, known):
    """Whether ``given`` are the arguments ``known`` (numbers within rounding, anything else by
    its repr)."""
    def same(a, b):
        if isinstance(b, (int, float, np.ndarray)) and not isinstance(b, bool):
            a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
            return a.shape == b.shape and bool(np.all(
                (a == b) | (np.abs(a - b) <= 1e-12 + 1e-9 * np.abs(b))))
        return repr(a) == repr(b)
    try:
        return len(given) == len(known) and all(map(same, given, known))
    except (TypeError, ValueError):
        return False


JVP_HINT = ("Dual.apply computes prim.fun on the plain values, and the output's tangent: for "
            "each argument that is a Dual, jvps[prim][argnum](its tangent, ans, *plain values, "
            "**kwargs), all added up (into an array shaped like the output); constants contribute "
            "nothing. jvp(fun, x, v) runs fun once on Dual(x, v) and returns the plain value and "
            "tangent (zeros shaped like the value when fun returns a plain value).")


def _jvp_case(what, steps, x, v, constant=None):
    def expected():
        if constant is not None:
            return {"value": constant, "tangent": np.zeros(np.shape(constant))}
        value, tangent = mini.make_jvp(program_function(steps), x)(v)
        return {"value": value, "tangent": tangent}

    return Case(what=what, probe="jvp_result",
                inputs={"steps": steps, "x": x, "v": v, "constant": constant},
                expected=expected, stand_ins={"jvp": _jvp_answered(steps, x)}, hint=JVP_HINT)


def check_jvp_layer(rng):
    m, n = _dims(rng, 2, high=6)
    A, b, C = rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal((m, n))
    steps = [("u", "matmul", ["x"], {0: A}, {}), ("z", "add", ["u"], {1: b}, {}),
             ("t", "tanh", ["z"], {}, {}), ("t2", "multiply", ["t"], {1: 2.0}, {}),
             ("w", "matmul", ["x"], {0: C}, {}), ("w3", "divide", ["w"], {1: 3.0}, {}),
             ("f", "subtract", ["t2", "w3"], {}, {})]
    return _jvp_case(f"jvp(f, x, v) for f(x) = tanh(A @ x + b) * 2.0 - (C @ x) / 3.0 with x and v "
                     f"of shape ({n},), A and C of shape {(m, n)}", steps,
                     rng.standard_normal(n), rng.standard_normal(n))


def check_jvp_fan_out(rng):
    n = int(rng.integers(2, 6))
    w = rng.uniform(0.5, 1.5, size=n)
    steps = [("xw", "multiply", ["x"], {1: w}, {}), ("e", "exp", ["xw"], {}, {}),
             ("ex", "multiply", ["e", "x"], {}, {}), ("s", "sum", ["ex"], {}, {}),
             ("xx", "multiply", ["x", "x"], {}, {}), ("q", "add", ["xx"], {0: 1.0}, {}),
             ("f", "divide", ["s", "q"], {}, {})]
    return _jvp_case(f"jvp(f, x, v) for f(x) = sum(exp(x * w) * x) / (1.0 + x * x) with x and v "
                     f"of shape ({n},) (x is read four times)", steps,
                     rng.standard_normal(n), rng.standard_normal(n))


def check_jvp_constant(rng):
    n = int(rng.integers(2, 6))
    return _jvp_case(f"jvp(f, x, v) for a function that ignores x (it returns a constant array of "
                     f"shape (3,)), x of shape ({n},)", [], rng.standard_normal(n),
                     rng.standard_normal(n), constant=rng.standard_normal(3))


def _wide(rng):
    n = int(rng.integers(5, 9))
    w = rng.standard_normal(n)
    return (f"the wide f(x) = sum(tanh(x * w)), x of shape ({n},), one output",
            [("xw", "multiply", ["x"], {1: w}, {}), ("t", "tanh", ["xw"], {}, {}),
             ("f", "sum", ["t"], {}, {})], rng.standard_normal(n))


def _tall(rng):
    m = int(rng.integers(5, 9))
    c = rng.standard_normal(m)
    return (f"the tall f(x) = tanh(x * c) * x, x of shape (1,), c of shape ({m},)",
            [("xc", "multiply", ["x"], {1: c}, {}), ("t", "tanh", ["xc"], {}, {}),
             ("f", "multiply", ["t", "x"], {}, {})], rng.standard_normal(1))


def _square(rng):
    n = int(rng.integers(2, 5))
    A = rng.standard_normal((n + 1, n))
    return (f"f(x) = exp(A @ x / 2.0) - x[0], A of shape {A.shape}, x of shape ({n},)",
            [("u", "matmul", ["x"], {0: A}, {}), ("h", "divide", ["u"], {1: 2.0}, {}),
             ("e", "exp", ["h"], {}, {}), ("x0", "getitem", ["x"], {1: 0}, {}),
             ("f", "subtract", ["e", "x0"], {}, {})], rng.standard_normal(n))


def _jacobian_expected(steps, x, runs):
    def expected():
        J = mini.jacobian(program_function(steps))(x)
        return {"jacobian": np.reshape(J, (-1, np.size(x))), "fun ran": runs}
    return expected


def _jacobian_forward_check(example):
    def check(rng):
        what, steps, x = example(rng)
        return Case(what=f"jacobian_forward(f, x) for {what}", probe="jacobian_forward_result",
                    inputs={"steps": steps, "x": x}, interpret=_ran,
                    expected=_jacobian_expected(steps, x, _runs(np.size(x))),
                    stand_ins={"jvp": _jvp_answered(steps, x)},
                    hint="one jvp per input direction e_j (fun runs once for each of the n "
                         "entries of x, and no more), each tangent J e_j a COLUMN of the (m, n) "
                         "Jacobian")
    check.__name__ = f"check_jacobian_forward{example.__name__}"
    return check


def _jacobian_reverse_check(example):
    def check(rng):
        what, steps, x = example(rng)
        return Case(what=f"jacobian_reverse(f, x) for {what}", probe="jacobian_reverse_result",
                    inputs={"steps": steps, "x": x, "value": program_function(steps)(x)},
                    interpret=_ran, expected=_jacobian_expected(steps, x, "once"),
                    stand_ins={"vjp": _vjp_of(steps, x)},
                    hint="ONE trace with make_vjp (fun runs once, however many outputs), then one "
                         "vjp call per output direction e_i, each J^T e_i a ROW of the (m, n) "
                         "Jacobian")
    check.__name__ = f"check_jacobian_reverse{example.__name__}"
    return check


JACOBIAN_FORWARD_CHECKS = [_jacobian_forward_check(example) for example in (_wide, _tall, _square)]
JACOBIAN_REVERSE_CHECKS = [_jacobian_reverse_check(example) for example in (_wide, _tall, _square)]


def _each_vjp(checks):
    """One behaviour, worth one part, per primitive: the VJPs of all its arguments."""
    primitives = {}
    for check in checks:            # check_<primitive>_vjp or check_<primitive>_<argnum>_vjp
        primitive = re.fullmatch(r"check_(\w+?)(_[01])?_vjp", check.__name__).group(1)
        primitives.setdefault(f"the VJPs of mini.{primitive}", (1, []))[1].append(check)
    return primitives


CHECKS = {
    "tracer": {"the running example": (1, [check_tracer_running_example]),
               "every operator": (1, [check_tracer_operators]),
               "reflected operators (2.0 - x, 1.0 / x)": (1, [check_tracer_reflected])},
    "add_outgrads": {"the first contribution": (1, [check_add_outgrads_first]),
                     "adding a contribution": (1, [check_add_outgrads_sum]),
                     "its inputs left as they were": (2, [check_add_outgrads_inputs_unchanged])},
    "unbroadcast": {"every broadcast undone": (1, [check_unbroadcast])},
    "elementwise_vjps": _each_vjp(ELEMENTWISE_CHECKS),
    "shape_vjps": _each_vjp(SHAPE_CHECKS),
    "log_softmax_vjp": {"the VJP of mini.log_softmax": (1, [check_log_softmax_vjp])},
    "backward_pass": {
        "the running example": (1, [check_running_example]),
        "a layer, with broadcasting": (1, [check_layer]),
        "random programs": (2, [_random_program_check(6), _random_program_check(10),
                                _random_program_check(16)]),
        "fan-out: contributions of every reader add up": (1, [check_ladder]),
        "a chain too long for recursion": (1, [check_long_chain])},
    "make_vjp": {"a function of a number": (1, [check_make_vjp_running_example]),
                 "a function of a matrix, vjp called again": (2, [check_make_vjp_matrix]),
                 "a function that ignores its input": (1, [check_make_vjp_constant])},
    "grad": {"a function of a number": (1, [check_grad_running_example]),
             "functions of vectors and matrices": (1, [check_grad_vector, check_grad_network])},
    "numerical_grad": {
        "vectors, matrices and numbers": (4, [check_numerical_vector, check_numerical_matrix,
                                              check_numerical_scalar]),
        "float32 inputs": (1, [check_numerical_float32]),
        "the step h it is given": (1, [check_numerical_step]),
        "every entry put back after its differences": (2, [check_numerical_puts_entries_back])},
    "forward_mode": {
        "the JVPs of the primitives": (3, JVP_TABLE_CHECKS),
        "jvp of a program, fan-out included": (2, [check_jvp_layer, check_jvp_fan_out]),
        "jvp of a function that ignores its input": (1, [check_jvp_constant]),
        "jacobian_forward": (2, JACOBIAN_FORWARD_CHECKS),
        "jacobian_reverse": (2, JACOBIAN_REVERSE_CHECKS)},
}
