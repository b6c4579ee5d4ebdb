"""Hidden checks of lab3_autodiff: the tracer, add_outgrads, the student's VJP table (unbroadcast,
elementwise, shape-moving and log_softmax VJPs), backward_pass, make_vjp, grad, numerical_grad and
forward mode.

Expected values come from mini's reference (its VJP and JVP tables, ``backward_pass``,
``make_vjp``, ``grad``, ``jacobian``, ``make_jvp``) or from the central-difference formula itself;
no expected number is written here.  A check of one fill-in runs with mini's versions of the
fill-ins it builds on standing in for the student's (``student.using``), so one early mistake costs
only its own points:

* the tracer checks run the same programs on the student's ``Box`` and on mini's, and compare the
  recorded graphs node by node and the gradients mini's reverse pass finds on them;
* the table checks call the student's ``vjps[primitive][argnum]`` directly, on every broadcasting,
  axis and keepdims variant in every run, with mini's way of undoing broadcasting standing in for
  the student's ``unbroadcast``, and compare with mini's table (an entry that is mini's own gets
  nothing, and mini's table is emptied while the student's entry runs);
* the backward_pass checks trace random programs with mini's ``Box``, and give the student's
  backward_pass mini's ``toposort``, VJP table and ``add_outgrads``;
* make_vjp runs with mini's ``Box`` and backward_pass, grad with those and mini's make_vjp,
  ``jacobian_reverse`` with them too.

While lab 3 is graded mini's versions of what the lab asks for are switched off (REFERENCE, see
autograder.guard).  The stand-ins above are detached copies made when this module is imported
(``guard.detached``), so they keep working.  mini's ``Box`` is not switched off (its stand-in is
the class itself): instead the tracer checks refuse a ``Box`` whose ``apply`` or operators are
mini's, inherited from mini's ``Box`` or from the classes it is built on.
"""
import warnings

import numpy as np

import mini
import mini.autodiff
import mini.forward
from autograder import guard
from autograder.checks import Case
from autograder.checks.programs import listing, random_program, run_steps
from mini.autodiff import Box
from mini.primitives import Primitive
from mini.table import sum_to_shape

REFERENCE = ("mini.backward_pass", "mini.add_outgrads", "mini.make_vjp", "mini.grad",
             "mini.value_and_grad", "mini.numerical_grad", "mini.vjp_of", "mini.jacobian",
             "mini.make_jvp", "mini.jvp")


# ref.backward_pass, ref.add_outgrads, ref.make_vjp, ref.grad, ref.toposort, ...
ref, ref_forward, ref_table = guard.detached("mini.autodiff", "mini.forward", "mini.table")


def ref_unbroadcast(g, shape):
    """mini's way of undoing broadcasting, standing in for the student's ``unbroadcast``."""
    return sum_to_shape(g, tuple(shape))


def _copy(value):
    """A fresh copy: a function that writes into its inputs cannot change the expected side."""
    return value.copy() if isinstance(value, np.ndarray) else value


def _shape(rng, ndims=(0, 1, 2), low=1, high=5):
    ndim = int(rng.choice(ndims))
    return tuple(int(n) for n in rng.integers(low, high, size=ndim))


# ---------------------------------------------------------------------------------------------
# The tracer: the student's Box records the same graph as mini's
# ---------------------------------------------------------------------------------------------

TRACER_HINT = ("Box.apply(prim, args, kwargs) must return a new Box whose value is "
               "prim.fun(*plain values, **kwargs), with fun = prim (the primitive, not prim.fun), "
               "args = the plain values of all arguments, kwargs, and, for every argument that "
               "is a Box, that Box in parents and its position in parent_argnums, in argument "
               "order. A reflected operator (__rmul__, __rsub__, ...) gets the left operand as "
               "`other`: call the primitive as (other, self).")


def _graph(end):
    """The graph recorded behind ``end``, node by node in mini's topological order, as plain data."""
    order = ref.toposort(end)
    index = {id(node): i for i, node in enumerate(order)}
    rows = []
    for node in order:
        _, args = node.vjp_operands()
        rows.append({
            "primitive": getattr(node.fun, "__name__", repr(node.fun)) if node.fun else "input",
            "fun is the mini primitive": node.fun is None or isinstance(node.fun, Primitive),
            "parents (positions in the order)": [index[id(parent)] for parent in node.parents],
            "parent_argnums": [int(argnum) for argnum in node.parent_argnums],
            "value": node.value,
            "constant arguments": [_constant(arg) for argnum, arg in enumerate(args)
                                   if argnum not in node.parent_argnums],
            "kwargs": repr(sorted(node.kwargs.items()))})
    return rows


def _constant(arg):
    return arg if isinstance(arg, (int, float, np.ndarray)) else repr(arg)


TRACER_METHODS = ("apply", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
                  "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__",
                  "__getitem__")


def _refuse_minis_operators(box_class):
    """A TypeError if ``box_class`` gets ``apply`` or an operator from a class of mini's (its own
    ``Box``, or the traced values it is built on): those are what the tracer fill-in writes."""
    if not isinstance(box_class, type):
        raise TypeError(f"Box should be a class, got {type(box_class).__name__}")
    for method in TRACER_METHODS:
        owner = next((cls for cls in box_class.__mro__ if method in vars(cls)), None)
        if owner is not None and owner.__module__.split(".")[0] == "mini":
            raise TypeError(f"Box.{method} is {owner.__module__}.{owner.__qualname__}.{method}, "
                            "mini's own: write apply and the operators in your Box (it derives "
                            "from mini.Node and Traced only)")


def _tracer_case(what, inputs, program):
    """Case: ``program(*boxes)`` traced by the student's Box and by mini's; the graphs and the
    gradients of the inputs (mini's backward_pass on each graph) must agree."""
    def outcome(box_class):
        boxes = [box_class(_copy(value), name=name) for name, value in inputs]
        end = program(*boxes)
        if not isinstance(end, box_class):
            raise TypeError(f"the program returned {type(end).__name__}, not a Box: an operation "
                            "on a Box must return a Box")
        g = np.ones(np.shape(end.value))
        grads = ref.backward_pass(g, end)
        return {"graph": _graph(end),
                "gradients of the inputs": {name: grads.get(box, 0.0 * box.value)
                                            for (name, _), box in zip(inputs, boxes)}}

    def call(student):
        _refuse_minis_operators(student.Box)
        return outcome(student.Box)

    return Case(what=what, call=call, expected=lambda: outcome(Box), hint=TRACER_HINT)


def tracer_running_example_check(rng):
    x1, x2 = (float(v) for v in rng.uniform(-1.0, 1.0, size=2))
    return _tracer_case(f"your Box tracing f = x1 + exp(1.5 * x1 + 2.0 * x2) at x1 = {x1:.4g}, "
                        f"x2 = {x2:.4g}", [("x1", x1), ("x2", x2)],
                        lambda x1, x2: x1 + mini.exp(1.5 * x1 + 2.0 * x2))


def tracer_operators_check(rng):
    m, n, k = (int(d) for d in rng.integers(2, 5, size=3))
    W = rng.standard_normal((n, k))

    def program(x, y, s):
        a = x * y
        b = 2.0 * a - y
        c = 1.0 - b / 3.0
        e = -(c @ W) + s
        f = 2.0 / (e * e + 1.0)
        return mini.sum(f, axis=1)

    return _tracer_case(
        f"your Box tracing a = x * y; b = 2.0 * a - y; c = 1.0 - b / 3.0; e = -(c @ W) + s; "
        f"f = 2.0 / (e * e + 1.0); sum(f, axis=1), with x of shape {(m, n)}, y of shape ({n},), "
        f"s a number and W a plain array of shape {(n, k)}",
        [("x", rng.standard_normal((m, n))), ("y", rng.standard_normal(n)),
         ("s", float(rng.standard_normal()))], program)


def tracer_reflected_check(rng):
    m, n, p = (int(d) for d in rng.integers(2, 5, size=3))
    V, c = rng.standard_normal((p, m)), rng.standard_normal(n)

    def program(x, z):
        a = V @ x
        b = mini.tanh(a[1]) - z
        d = c / (mini.exp(x[:, 0]) @ np.ones((m, n)) + 2.0)
        return mini.sum(b * d + (z - 0.5) * b, axis=0, keepdims=True)

    return _tracer_case(
        f"your Box tracing a = V @ x; b = tanh(a[1]) - z; d = c / (exp(x[:, 0]) @ ones + 2.0); "
        f"sum(b * d + (z - 0.5) * b, axis=0, keepdims=True), with x of shape {(m, n)}, z of shape "
        f"({n},), V and c plain arrays of shapes {(p, m)} and ({n},)",
        [("x", rng.standard_normal((m, n))), ("z", rng.standard_normal(n))], program)


# ---------------------------------------------------------------------------------------------
# unbroadcast, against mini's sum_to_shape, on every way a shape can be broadcast
# ---------------------------------------------------------------------------------------------

UNBROADCAST_HINT = ("numpy aligns shapes at the right: sum g over the leading axes `shape` does "
                    "not have, then, keeping the axis, over each axis where `shape` has length 1 "
                    "and g does not. The result must have exactly `shape`.")


def _broadcast_shapes(m, n):
    """Every way two arguments can broadcast against each other, in both orders."""
    pairs = [((m, 1), (n,)), ((m, n), (n,)), ((m, n), ()), ((1, n), (m, 1)), ((m, n), (m, n))]
    return pairs + [pair[::-1] for pair in pairs[:-1]]


def unbroadcast_check(rng):
    m, n, k = (int(d) for d in rng.integers(2, 5, size=3))
    targets = [(m, 1), (n,), (), (1, n), (m, n), (1, 1), (1,)]
    cases = [(shape, (m, n)) for shape in targets] + [((n,), (k, m, n)), ((m, 1), (k, m, n)),
                                                      ((1, m, 1), (k, m, n)), ((), (k,))]
    gs = [rng.standard_normal(g_shape) for _, g_shape in cases]

    def outcome(unbroadcast):
        return {f"unbroadcast(g of shape {g.shape}, {shape})": unbroadcast(_copy(g), shape)
                for (shape, _), g in zip(cases, gs)}

    return Case(what=f"unbroadcast on {len(cases)} shapes, m, n, k = {m}, {n}, {k}",
                call=lambda student: outcome(student.unbroadcast),
                expected=lambda: outcome(ref_unbroadcast), hint=UNBROADCAST_HINT)


# ---------------------------------------------------------------------------------------------
# The student's VJP table, against mini's, one primitive and argument at a time
# ---------------------------------------------------------------------------------------------

def _arguments(args):
    return ", ".join(f"an array of shape {arg.shape}" if isinstance(arg, np.ndarray)
                     else repr(arg) for arg in args)


def _mini_vjps_switched_off():
    """Every VJP of mini's table raising for the duration, however the notebook reaches it (the
    table, ``mini.vjp_of``, a copy kept in a list): the student's table entry runs alone."""
    messages = {}
    for prim, entries in mini.vjp_table.items():
        name = getattr(prim, "__name__", repr(prim))
        rules = entries.items() if isinstance(entries, dict) else [("every argument", entries.rule)]
        for argnum, vjp in rules:
            messages[vjp] = (f"mini's VJP of {name} ({argnum}), from mini.vjp_table, is mini's "
                             "reference for what lab3_autodiff asks you to write, so it is "
                             "switched off while your table is graded: use your own")
    return guard.switched_off(messages)


def _is_mini_entry(vjp, prim, argnum):
    entries = mini.vjp_table.get(prim)
    return isinstance(entries, dict) and entries.get(argnum) is vjp


def _table_case(rng, label, prim_of, argnum, variants, expected_vjp, hint):
    """Case: the student's ``vjps[prim][argnum]`` on every ``(args, kwargs)`` of ``variants``.

    ``prim_of(student)`` is the primitive (the notebook's own for ``broadcast_to``);
    ``expected_vjp(g, ans, *args, **kwargs)`` is mini's.  The result is one entry per variant,
    named by the call, so the first wrong variant is the one reported.
    """
    drawn = []
    for args, kwargs in variants:
        ans = prim_of(None).fun(*args, **kwargs)
        drawn.append((args, kwargs, ans, rng.standard_normal(np.shape(ans))))

    def name(args, kwargs, g):
        keywords = "".join(f", {key}={value!r}" for key, value in kwargs.items())
        return (f"vjps[{label}][{argnum}](g, ans, {_arguments(args)}{keywords}) with g of shape "
                f"{g.shape}")

    def call(student):
        prim = prim_of(student)
        if prim not in student.vjps or argnum not in student.vjps[prim]:
            raise KeyError(f"your table vjps has no entry vjps[{label}][{argnum}]: register the "
                           f"VJP of {label} for argument {argnum}")
        vjp = student.vjps[prim][argnum]
        if _is_mini_entry(vjp, prim, argnum):
            raise LookupError(f"vjps[{label}][{argnum}] is mini's own VJP, taken from "
                              "mini.vjp_table: write your own")
        results = {}
        with student.using(unbroadcast=ref_unbroadcast), _mini_vjps_switched_off():
            for args, kwargs, ans, g in drawn:
                try:
                    results[name(args, kwargs, g)] = vjp(_copy(g), _copy(ans), *map(_copy, args),
                                                         **kwargs)
                except Exception as error:
                    raise type(error)(f"in {name(args, kwargs, g)}: {error}; it should return "
                                      f"the gradient of argument {argnum}, of shape "
                                      f"{np.shape(args[argnum])}") from None
        return results

    def expected():
        return {name(args, kwargs, g): expected_vjp(g, ans, *args, **kwargs)
                for args, kwargs, ans, g in drawn}

    return Case(what=f"your VJP vjps[{label}][{argnum}] on {len(drawn)} argument shapes",
                call=call, expected=expected, hint=hint)


def _mini_vjp(prim, argnum):
    return lambda g, ans, *args, **kwargs: ref_table.vjp_of(prim, argnum)(g, ans, *args, **kwargs)


BINARY_HINT = ("each argument's VJP is g times the partial derivative of the output with respect "
               "to that argument, entry by entry, and then undone to the argument's shape with "
               "unbroadcast: the forward pass broadcast it up to g's shape.")


def _binary_check(prim, argnum):
    def check(rng):
        m, n = (int(d) for d in rng.integers(2, 5, size=2))
        variants = []
        for x_shape, y_shape in _broadcast_shapes(m, n):
            x = rng.standard_normal(x_shape)
            y = rng.uniform(0.5, 2.0, size=y_shape) * rng.choice([-1.0, 1.0], size=y_shape)
            variants.append(((x, y), {}))
        return _table_case(rng, f"mini.{prim.__name__}", lambda student: prim, argnum, variants,
                           _mini_vjp(prim, argnum), BINARY_HINT)
    check.__name__ = f"{prim.__name__}_{argnum}_vjp_check"
    return check


UNARY_HINT = ("an elementwise function has a diagonal Jacobian: multiply g entry by entry by the "
              "derivative at x; where the derivative is a function of the output, use ans.")


def _unary_check(prim, positive=False):
    def check(rng):
        variants = []
        for shape in [(), (int(rng.integers(2, 5)),), tuple(int(d) for d in rng.integers(2, 5, 2))]:
            x = rng.uniform(0.2, 3.0, size=shape) if positive else 1.5 * rng.standard_normal(shape)
            variants.append(((x,), {}))
        return _table_case(rng, f"mini.{prim.__name__}", lambda student: prim, 0, variants,
                           _mini_vjp(prim, 0), UNARY_HINT)
    check.__name__ = f"{prim.__name__}_vjp_check"
    return check


ELEMENTWISE_CHECKS = ([_binary_check(prim, argnum)
                       for prim in (mini.add, mini.subtract, mini.multiply, mini.divide)
                       for argnum in (0, 1)]
                      + [_unary_check(mini.negative), _unary_check(mini.exp),
                         _unary_check(mini.log, positive=True), _unary_check(mini.tanh)])


def _x3(rng):
    return rng.standard_normal(tuple(int(d) for d in rng.integers(2, 5, size=3)))


def transpose_vjp_check(rng):
    x2, x3 = rng.standard_normal(tuple(int(d) for d in rng.integers(2, 5, size=2))), _x3(rng)
    variants = [((x2,), {}), ((x3,), {}), ((x2,), {"axes": (1, 0)}), ((x2,), {"axes": (-1, 0)})]
    variants += [((x3,), {"axes": axes})
                 for axes in [(1, 0, 2), (2, 0, 1), (1, 2, 0), (-1, 0, 1), (0, -1, -2), (-2, -3, -1)]]
    return _table_case(rng, "mini.transpose", lambda student: mini.transpose, 0, variants,
                       _mini_vjp(mini.transpose, 0),
                       "the gradient must undo the permutation: g's axis i is x's axis axes[i]. "
                       "Turn negative axes into positions first (axis % x.ndim), and with axes=None "
                       "the permutation reversed every axis.")


def reshape_vjp_check(rng):
    x3 = _x3(rng)
    a, b, c = x3.shape
    variants = [((x3, shape), {}) for shape in [(a * b, c), (a, b * c), (-1,), (c, -1), (1, a, b, c)]]
    return _table_case(rng, "mini.reshape", lambda student: mini.reshape, 0, variants,
                       _mini_vjp(mini.reshape, 0),
                       "reshape keeps the entries in order: the gradient is g in x's shape.")


def broadcast_to_vjp_check(rng):
    m, n, k = (int(d) for d in rng.integers(2, 5, size=3))
    variants = [((rng.standard_normal(shape), target), {})
                for shape, target in [((m, 1), (m, n)), ((n,), (m, n)), ((), (m, n)),
                                      ((1, n), (k, m, n)), ((m, 1), (k, m, n)), ((n,), (n,))]]
    return _table_case(rng, "broadcast_to", lambda student: student.broadcast_to if student
                       else _BROADCAST_TO, 0, variants,
                       lambda g, ans, x, shape: sum_to_shape(g, np.shape(x)),
                       "broadcast_to copies entries as broadcasting does: undo it with "
                       "unbroadcast to x's shape.")


_BROADCAST_TO = mini.primitive(np.broadcast_to)   # computes the forward values of the variants

REDUCE_HINT = ("every entry of x that went into an output entry gets that entry's g (over the "
               "number of entries averaged, for mean). With keepdims=False the reduced axes are "
               "missing from g: put them back (np.expand_dims, which takes a tuple too) before "
               "spreading g to x's shape, or numpy lines g up with the wrong axes.")


def _reduce_check(prim):
    def check(rng):
        x2, x3 = rng.standard_normal(tuple(int(d) for d in rng.integers(2, 5, size=2))), _x3(rng)
        variants = [((x2,), {}), ((x3,), {}), ((x3,), {"keepdims": True})]
        variants += [((x3,), {"axis": axis, "keepdims": keepdims})
                     for axis in (0, 1, 2, -1, -2, (0, 2), (-1, 0)) for keepdims in (False, True)]
        variants += [((x2,), {"axis": axis}) for axis in (0, -1)]
        return _table_case(rng, f"mini.{prim.__name__}", lambda student: prim, 0, variants,
                           _mini_vjp(prim, 0), REDUCE_HINT)
    check.__name__ = f"{prim.__name__}_vjp_check"
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
        return _table_case(rng, "mini.matmul", lambda student: mini.matmul, argnum, variants,
                           _mini_vjp(mini.matmul, argnum), MATMUL_HINT)
    check.__name__ = f"matmul_{argnum}_vjp_check"
    return check


def getitem_vjp_check(rng):
    x2, n = rng.standard_normal(tuple(int(d) for d in rng.integers(2, 5, size=2))), 5
    x1 = rng.standard_normal(n)
    variants = [((x2, 0), {}), ((x2, (slice(None), 1)), {}), ((x1, slice(1, None)), {}),
                ((x1, np.array([0, 2, 0, 0])), {}), ((x2, (np.array([1, 0, 1]), slice(None))), {})]
    return _table_case(rng, "mini.getitem", lambda student: mini.getitem, 0, variants,
                       _mini_vjp(mini.getitem, 0),
                       "x[index] picks entries; the gradient is zeros shaped like x with g sent "
                       "back to the picked places, ADDED where an index picks an entry more than "
                       "once (np.add.at; x_bar[index] += g keeps only one of the repeats).")


SHAPE_CHECKS = [transpose_vjp_check, reshape_vjp_check, broadcast_to_vjp_check,
                _reduce_check(mini.sum), _reduce_check(mini.mean), _matmul_check(0),
                _matmul_check(1), getitem_vjp_check]


def log_softmax_vjp_check(rng):
    variants = [((rng.standard_normal(shape),), {"axis": axis})
                for shape, axis in [((5,), -1), ((3, 4), -1), ((3, 4), 1), ((3, 4), 0),
                                    ((2, 3, 4), 1), ((2, 3, 4), -3)]]
    variants.append(((rng.standard_normal((3, 4)),), {}))
    return _table_case(rng, "mini.log_softmax", lambda student: mini.log_softmax, 0, variants,
                       _mini_vjp(mini.log_softmax, 0),
                       "each output entry of a slice depends on every entry of that slice; J^T g "
                       "needs the softmax (exp(ans)) and the sum of g along axis, kept as an axis "
                       "of length 1 so that it broadcasts along the right axis.")


# ---------------------------------------------------------------------------------------------
# add_outgrads
# ---------------------------------------------------------------------------------------------

def add_outgrads_first_check(rng):
    g = rng.standard_normal(_shape(rng))
    return Case(
        what=f"add_outgrads(None, g) with g of shape {g.shape} (the first contribution a node "
             "receives)",
        call=lambda student: student.add_outgrads(None, _copy(g)),
        expected=lambda: ref.add_outgrads(None, g),
        hint="prev_g is None when nothing has arrived yet: the total is then g itself.")


def add_outgrads_sum_check(rng):
    shape = _shape(rng)
    prev_g, g = rng.standard_normal(shape), rng.standard_normal(shape)
    return Case(
        what=f"add_outgrads(prev_g, g) with prev_g and g of shape {shape}",
        call=lambda student: student.add_outgrads(_copy(prev_g), _copy(g)),
        expected=lambda: ref.add_outgrads(prev_g, g),
        hint="a node with several outgoing edges gets the sum of their contributions "
             "(L05 slide 20): return prev_g + g.")


def add_outgrads_inputs_unchanged_check(rng):
    shape = _shape(rng, ndims=(1, 2))
    prev_g, g = rng.standard_normal(shape), rng.standard_normal(shape)

    def call(student):
        mine_prev, mine_g = _copy(prev_g), _copy(g)
        total = student.add_outgrads(mine_prev, mine_g)
        return {"add_outgrads(prev_g, g)": total, "prev_g after the call": mine_prev,
                "g after the call": mine_g}

    return Case(
        what=f"add_outgrads(prev_g, g) with arrays of shape {shape}, and its inputs afterwards",
        call=call,
        expected=lambda: {"add_outgrads(prev_g, g)": ref.add_outgrads(prev_g, g),
                          "prev_g after the call": prev_g, "g after the call": g},
        hint="add_outgrads must not change its inputs: a VJP may hand the very same array to two "
             "parents (the VJP of add returns g for both), so `prev_g += g` would change another "
             "node's gradient too. Return a new array, prev_g + g.")


# ---------------------------------------------------------------------------------------------
# backward_pass on programs traced with mini's Box, over mini's toposort and table
# ---------------------------------------------------------------------------------------------

MISSING = "no entry for this node in the dict your backward_pass returned"

BACKWARD_HINT = ("visit the nodes in the reverse of toposort(end_node)'s order, so that a node's "
                 "total is complete before it is used (a KeyError for a node means it was "
                 "reached before its readers sent their shares); start the dict with "
                 "{end_node: g}; send each parent its share from vjps[node.fun][argnum], called "
                 "with (g, ans, *args, **node.kwargs) where (ans, args) = node.vjp_operands(), "
                 "and add shares up with add_outgrads.")


def _traced(program):
    """``(end node, {name: node})`` of ``program`` traced with mini's Box, each node named."""
    inputs, steps = program
    nodes = run_steps(steps, {name: Box(value, name=name) for name, value in inputs})
    for name, _, _, _, _ in steps:
        nodes[name].name = name
    return nodes[steps[-1][0]], nodes


def _node_key(node):
    return f"{node.name} ({node.fun.__name__ if node.fun else 'input'})"


def _backward_case(rng, program, what, only=None, hint=BACKWARD_HINT, shown=""):
    """Case: the student's backward_pass on the traced ``program`` against mini's, node by
    node; ``shown`` is added to the description (the program's listing).

    The result is ``{node: gradient}`` for every node of the graph (or only the nodes named in
    ``only``), listed in reverse topological order, so that the first difference reported is the
    first place where the backward sweep went wrong.
    """
    end_shape = np.shape(_traced(program)[0].value)
    g = float(rng.standard_normal()) if end_shape == () else rng.standard_normal(end_shape)

    def gradients(backward_pass):
        end, nodes = _traced(program)
        grads = backward_pass(_copy(g), end)
        if not isinstance(grads, dict):
            raise TypeError(f"backward_pass should return a dict {{node: gradient}}, "
                            f"got {type(grads).__name__}")
        keep = [nodes[name] for name in only] if only else reversed(mini.toposort(end))
        return {_node_key(node): grads.get(node, MISSING) for node in keep}

    def call(student):
        with student.using(add_outgrads=ref.add_outgrads, toposort=ref.toposort, vjps=mini.vjp_table):
            return gradients(student.backward_pass)

    return Case(what=what + f", g = {_describe(g)}" + shown, call=call,
                expected=lambda: gradients(ref.backward_pass), hint=hint)


def _describe(g):
    return f"{g:.4g}" if np.ndim(g) == 0 else f"an array of shape {np.shape(g)}"


def running_example_check(rng):
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
    m, n, k = (int(d) for d in rng.integers(2, 5, size=3))
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
    check.__name__ = f"random_program_{n_steps}_check"
    return check


def layer_check(rng):
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


def ladder_check(rng):
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


def long_chain_check(rng):
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
# make_vjp and grad (with mini's Box and backward_pass, and for grad mini's make_vjp, standing in)
# ---------------------------------------------------------------------------------------------

def _plain(value, name):
    if isinstance(value, Box):
        raise TypeError(f"{name} is a traced Box, not a plain number or array: return the end "
                        "node's .value")
    return value


def _make_vjp_case(what, fun, x, gs, hint):
    def outcome(make_vjp):
        vjp, value = make_vjp(fun, _copy(x))
        result = {"value": _plain(value, "the value make_vjp returned")}
        for i, g in enumerate(gs, start=1):
            result[f"vjp(g{i})"] = vjp(_copy(g))
        return result

    def call(student):
        with student.using(Box=Box, backward_pass=ref.backward_pass):
            return outcome(student.make_vjp)

    def expected():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return outcome(ref.make_vjp)

    return Case(what=what, call=call, expected=expected, hint=hint)


MAKE_VJP_HINT = ("trace fun on a Box holding x; what fun returns is the end node of the graph. "
                 "Return its plain .value, and a vjp(g) that runs backward_pass(g, end) and "
                 "picks out the input box's gradient (L05 slide 28).")


def make_vjp_running_example_check(rng):
    x1, x2 = (float(v) for v in rng.uniform(-1.0, 1.0, size=2))
    g = float(rng.standard_normal())
    return _make_vjp_case(
        f"make_vjp(f, x1) for f(x1) = x1 + exp(1.5 x1 + 2.0 x2) at x1 = {x1:.4g} (x2 = {x2:.4g}), "
        f"then vjp(g1) with g1 = {g:.4g}",
        lambda x: x + mini.exp(1.5 * x + 2.0 * x2), x1, [g], MAKE_VJP_HINT)


def make_vjp_matrix_check(rng):
    m, n, k = (int(d) for d in rng.integers(2, 5, size=3))
    W, c = rng.standard_normal((n, k)), rng.standard_normal(k)
    X = rng.standard_normal((m, n))
    gs = [rng.standard_normal((m, k)) for _ in range(2)]
    return _make_vjp_case(
        f"make_vjp(f, X) for f(X) = tanh(X @ W) * c + sum(X, axis=1, keepdims=True) with X of "
        f"shape {X.shape}, W of shape {W.shape}, c of shape {c.shape}; then vjp(g1) and vjp(g2), "
        f"two different g of shape {(m, k)} on the same trace",
        lambda X: mini.tanh(X @ W) * c + mini.sum(X, axis=1, keepdims=True), X, gs,
        MAKE_VJP_HINT + " vjp must use the g it is given and may be called more than once.")


def make_vjp_constant_check(rng):
    x = rng.standard_normal(_shape(rng, ndims=(1, 2)))
    constant = rng.standard_normal(3)
    return _make_vjp_case(
        f"make_vjp(f, x) for a function that ignores x (it returns a constant array), x of shape "
        f"{x.shape}; then vjp(g1)",
        lambda x: constant, x, [rng.standard_normal(3)],
        "when fun's output does not depend on x, no graph leads back to x: fun returns a plain "
        "array, not a Box. Return that array as the value, and let vjp(g) return zeros shaped "
        "like x (np.zeros_like(x)).")


def _grad_case(what, fun, x, hint):
    def call(student):
        with student.using(Box=Box, backward_pass=ref.backward_pass, make_vjp=ref.make_vjp):
            return student.grad(fun)(_copy(x))

    return Case(what=what, call=call, expected=lambda: ref.grad(fun)(x), hint=hint)


GRAD_HINT = ("grad(fun) returns a function of x: trace fun at x with make_vjp and call the vjp "
             "with the output's own gradient, 1.0 (x_bar_7 = 1 on L05 slide 19).")


def grad_running_example_check(rng):
    x1, x2 = (float(v) for v in rng.uniform(-1.0, 1.0, size=2))
    return _grad_case(f"grad(f)(x1) for f(x1) = x1 + exp(1.5 x1 + 2.0 x2) at x1 = {x1:.4g} "
                      f"(x2 = {x2:.4g})", lambda x: x + mini.exp(1.5 * x + 2.0 * x2), x1, GRAD_HINT)


def grad_vector_check(rng):
    m, n = (int(d) for d in rng.integers(2, 6, size=2))
    A, b, c = rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal(m)
    return _grad_case(f"grad(f)(x) for f(x) = sum(tanh(A @ x + b) * c) with x of shape ({n},), "
                      f"A of shape {A.shape}",
                      lambda x: mini.sum(mini.tanh(A @ x + b) * c), rng.standard_normal(n),
                      GRAD_HINT)


def grad_network_check(rng):
    batch, d, h = (int(v) for v in rng.integers(2, 6, size=3))
    X, w2, y = rng.standard_normal((batch, d)), rng.standard_normal(h), rng.standard_normal(batch)
    return _grad_case(f"grad(loss)(W1) for loss(W1) = mean((tanh(X @ W1) @ w2 - y) ** 2) with X of "
                      f"shape {X.shape}, W1 of shape {(d, h)}",
                      lambda W1: mini.mean((mini.tanh(X @ W1) @ w2 - y) ** 2),
                      0.5 * rng.standard_normal((d, h)), GRAD_HINT)


# ---------------------------------------------------------------------------------------------
# numerical_grad, compared with mini.grad (analytic) and with the central-difference formula
# ---------------------------------------------------------------------------------------------

NUMERICAL_HINT = ("for each entry i: shift a float64 copy of x by +h and by -h in entry i only, "
                  "and set gradient[i] = (f(x + h e_i) - f(x - h e_i)) / (2h) (L05 slide 30). The "
                  "result has x's shape.")


def _numerical_case(what, fun, x, expected, hint=NUMERICAL_HINT, h=None, report_x=False):
    kwargs = {} if h is None else {"h": h}

    def call(student):
        mine = _copy(x)
        gradient = student.numerical_grad(fun, mine, **kwargs)
        return {"gradient": gradient, "x after the call": mine} if report_x else gradient

    def expected_value():
        gradient = expected()
        return {"gradient": gradient, "x after the call": x} if report_x else gradient

    return Case(what=what, call=call, expected=expected_value, rtol=1e-5, atol=1e-6, hint=hint)


def numerical_vector_check(rng):
    m, n = (int(d) for d in rng.integers(2, 6, size=2))
    A, b, c, d = (rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal(m),
                  rng.uniform(0.5, 2.0, size=n))

    def f(x):
        return mini.sum(c * mini.tanh(A @ x + b)) + 0.5 * mini.sum(d * x * x)

    x = rng.standard_normal(n)
    return _numerical_case(f"numerical_grad(f, x) for f(x) = sum(c * tanh(A @ x + b)) + "
                           f"0.5 sum(d * x * x), x of shape {x.shape}, against the analytic "
                           "gradient", f, x, lambda: ref.grad(f)(x))


def numerical_matrix_check(rng):
    shape = _shape(rng, ndims=(2,), low=2)
    C, D = rng.standard_normal(shape), rng.standard_normal(shape)

    def f(X):
        return mini.sum(mini.log(1.0 + X * X) * C) + mini.sum(mini.exp(0.3 * X) * D)

    X = rng.standard_normal(shape)
    return _numerical_case(f"numerical_grad(f, X) for f(X) = sum(log(1 + X^2) * C) + "
                           f"sum(exp(0.3 X) * D), X of shape {shape}, and X after the call",
                           f, X, lambda: ref.grad(f)(X), report_x=True,
                           hint=NUMERICAL_HINT + " Work on a copy: x must be unchanged afterwards "
                           "(np.asarray returns x itself when it is already float64; "
                           "np.array(x, dtype=np.float64) copies).")


def numerical_scalar_check(rng):
    a, b = float(rng.uniform(-1, 1)), float(rng.uniform(-1, 1))

    def f(x):
        return mini.exp(a * x) * mini.tanh(x) + b * x * x

    x = float(rng.uniform(-2, 2))
    return _numerical_case(f"numerical_grad(f, x) for f(x) = exp({a:.3g} x) tanh(x) + {b:.3g} x^2 "
                           f"at the Python float x = {x:.4g}",
                           f, x, lambda: ref.grad(f)(x),
                           hint=NUMERICAL_HINT + " A Python float is an array of shape (): "
                           "np.array(x, dtype=np.float64) and np.ndindex(()) handle it.")


def numerical_float32_check(rng):
    n = int(rng.integers(2, 6))
    A, b = rng.standard_normal((n, n)), rng.standard_normal(n)

    def f(x):
        return mini.sum(mini.tanh(A @ x + b))

    x32 = rng.standard_normal(n).astype(np.float32)
    return _numerical_case(f"numerical_grad(f, x) for f(x) = sum(tanh(A @ x + b)) with x a float32 "
                           f"array of shape ({n},)", f, x32,
                           lambda: ref.grad(f)(x32.astype(np.float64)),
                           hint="compute in float64 whatever dtype x has (L05 slide 30): in "
                           "float32, x + 1e-6 is x rounded to about 7 digits, so the difference "
                           "quotient is mostly rounding error. Start from "
                           "np.array(x, dtype=np.float64).")


def numerical_step_check(rng):
    x = rng.uniform(-2, 2, size=int(rng.integers(2, 6)))
    h = float(rng.choice([0.5, 0.25, 0.1]))

    def f(x):
        return np.sum(x ** 3)

    return _numerical_case(f"numerical_grad(f, x, h={h}) for f(x) = sum(x ** 3), x of shape "
                           f"{x.shape}: with this large h the central difference is "
                           "3 x^2 + h^2 exactly", f, x, lambda: 3 * x ** 2 + h ** 2, h=h,
                           hint="use the h you are given, and the CENTRAL difference "
                                "(f(x + h e_i) - f(x - h e_i)) / (2h): the one-sided "
                                "(f(x + h e_i) - f(x)) / h gives 3 x^2 + 3 x h + h^2 here.")


# ---------------------------------------------------------------------------------------------
# Forward mode: jvp against mini's make_jvp, the two Jacobians against mini's jacobian
# ---------------------------------------------------------------------------------------------

JVP_HINT = ("Dual.apply computes prim.fun on the plain values and the output's tangent: for each "
            "argument that is a Dual, mini.jvp_of(prim, argnum)(its tangent, ans, *plain values, "
            "**kwargs), added up; constants contribute nothing. jvp(fun, x, v) runs fun once on "
            "Dual(x, v) and returns the plain value and tangent.")


def _jvp_case(what, fun, x, v):
    def call(student):
        value, tangent = student.jvp(fun, _copy(x), _copy(v))
        return {"value": value, "tangent": tangent}

    def expected():
        value, tangent = ref_forward.make_jvp(fun, x)(v)
        return {"value": value, "tangent": tangent}

    return Case(what=what, call=call, expected=expected, hint=JVP_HINT)


def jvp_layer_check(rng):
    m, n = (int(d) for d in rng.integers(2, 6, size=2))
    A, b, C = rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal((m, n))
    return _jvp_case(f"jvp(f, x, v) for f(x) = tanh(A @ x + b) * 2.0 - (C @ x) / 3.0 with x and v of "
                     f"shape ({n},), A and C of shape {(m, n)}",
                     lambda x: mini.tanh(A @ x + b) * 2.0 - (C @ x) / 3.0,
                     rng.standard_normal(n), rng.standard_normal(n))


def jvp_fan_out_check(rng):
    n = int(rng.integers(2, 6))
    w = rng.uniform(0.5, 1.5, size=n)
    return _jvp_case(f"jvp(f, x, v) for f(x) = sum(exp(x * w) * x) / (1.0 + x * x) with x and v of "
                     f"shape ({n},) (x is read four times)",
                     lambda x: mini.sum(mini.exp(x * w) * x) / (1.0 + x * x),
                     rng.standard_normal(n), rng.standard_normal(n))


def jvp_constant_check(rng):
    n = int(rng.integers(2, 6))
    constant = rng.standard_normal(3)
    return _jvp_case(f"jvp(f, x, v) for a function that ignores x (it returns a constant array of "
                     f"shape (3,)), x of shape ({n},)", lambda x: constant,
                     rng.standard_normal(n), rng.standard_normal(n))


def _counted(fun):
    def counted_fun(x):
        counted_fun.calls += 1
        return fun(x)
    counted_fun.calls = 0
    return counted_fun


def _jacobian_case(what, mode, fun, x):
    """Case: the student's jacobian_forward or jacobian_reverse against mini's jacobian, with the
    number of times fun ran: once per input direction forwards, once in all backwards."""
    def outcome(jacobian):
        counted = _counted(fun)
        J = jacobian(counted, _copy(x))
        return {"jacobian": J, "runs of fun": counted.calls}

    def call(student):
        if mode == "forward":
            return outcome(student.jacobian_forward)
        with student.using(Box=Box, backward_pass=ref.backward_pass, make_vjp=ref.make_vjp):
            return outcome(student.jacobian_reverse)

    def expected():
        J = ref.jacobian(fun)(x)
        return {"jacobian": np.reshape(J, (-1, np.size(x))),
                "runs of fun": np.size(x) if mode == "forward" else 1}

    hint = ("one jvp per input direction e_j (fun runs once for each of the n entries of x), each "
            "tangent J e_j a COLUMN of the (m, n) Jacobian" if mode == "forward" else
            "one trace with make_vjp (fun runs once), then one vjp call per output direction e_i, "
            "each J^T e_i a ROW of the (m, n) Jacobian")
    return Case(what=f"jacobian_{mode}(f, x) for {what}", call=call, expected=expected, hint=hint)


def _wide(rng):
    n = int(rng.integers(5, 9))
    w = rng.standard_normal(n)
    return ("the wide f(x) = sum(tanh(x * w)), x of shape ({n},), one output".format(n=n),
            lambda x: mini.sum(mini.tanh(x * w)), rng.standard_normal(n))


def _tall(rng):
    m = int(rng.integers(5, 9))
    c = rng.standard_normal(m)
    return (f"the tall f(x) = tanh(x * c) * x, x of shape (1,), c of shape ({m},)",
            lambda x: mini.tanh(x * c) * x, rng.standard_normal(1))


def _square(rng):
    n = int(rng.integers(2, 5))
    A = rng.standard_normal((n + 1, n))
    return (f"f(x) = exp(A @ x / 2.0) - x[0], A of shape {A.shape}, x of shape ({n},)",
            lambda x: mini.exp(A @ x / 2.0) - mini.getitem(x, 0), rng.standard_normal(n))


def _jacobian_check(mode, example):
    def check(rng):
        what, fun, x = example(rng)
        return _jacobian_case(what, mode, fun, x)
    check.__name__ = f"jacobian_{mode}_{example.__name__[1:]}_check"
    return check


FORWARD_CHECKS = ([jvp_layer_check, jvp_fan_out_check, jvp_constant_check]
                  + [_jacobian_check(mode, example) for mode in ("forward", "reverse")
                     for example in (_wide, _tall, _square)])


CHECKS = {
    "tracer": [tracer_running_example_check, tracer_operators_check, tracer_reflected_check],
    "add_outgrads": [add_outgrads_first_check, add_outgrads_sum_check,
                     add_outgrads_inputs_unchanged_check],
    "unbroadcast": [unbroadcast_check],
    "elementwise_vjps": ELEMENTWISE_CHECKS,
    "shape_vjps": SHAPE_CHECKS,
    "log_softmax_vjp": [log_softmax_vjp_check],
    "backward_pass": [running_example_check, layer_check, _random_program_check(6),
                      _random_program_check(10), _random_program_check(16), ladder_check,
                      long_chain_check],
    "make_vjp": [make_vjp_running_example_check, make_vjp_matrix_check, make_vjp_constant_check],
    "grad": [grad_running_example_check, grad_vector_check, grad_network_check],
    "numerical_grad": [numerical_vector_check, numerical_matrix_check, numerical_scalar_check,
                       numerical_float32_check, numerical_step_check],
    "forward_mode": FORWARD_CHECKS,
}
