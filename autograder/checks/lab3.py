"""Hidden checks of lab3_autodiff: VJPs of primitives, add_outgrads, backward_pass, make_vjp, grad
and numerical_grad.

Expected values come from mini's reference (its VJP table, ``backward_pass``, ``make_vjp``,
``grad``) or from the central-difference formula itself; no expected number is written here.  A
check of one fill-in runs with mini's versions of the fill-ins it builds on standing in for the
student's (``student.using``), so one early mistake costs only its own points:

* the VJP checks call the student's VJP functions directly on random inputs and compare them with
  mini's table (the broadcasting checks first sum the result back to the argument's shape, exactly
  as ``mini.defvjp(..., broadcasting=True)`` does);
* the backward_pass checks trace random programs with mini's own primitives, so the student's
  backward_pass is driven by mini's VJP table and mini's add_outgrads, never by the student's VJPs;
* make_vjp runs with mini's backward_pass, grad with mini's backward_pass and make_vjp.

While lab 3 is graded the worker switches off mini's versions of what the lab asks for (REFERENCE,
see autograder.guard).  The stand-ins above are private copies made when this module is imported,
before that happens, so they keep working.
"""
import types
import warnings

import numpy as np

import mini
import mini.autodiff
from autograder.checks import Case, program_listing
from mini.autodiff import Box
from mini.primitives import sum_to_like

REFERENCE = ("mini.backward_pass", "mini.autodiff.backward_pass",
             "mini.add_outgrads", "mini.autodiff.add_outgrads",
             "mini.make_vjp", "mini.autodiff.make_vjp",
             "mini.grad", "mini.autodiff.grad",
             "mini.value_and_grad", "mini.autodiff.value_and_grad",
             "mini.numerical_grad", "mini.gradcheck.numerical_grad")


def _detached(module):
    """Copies of ``module``'s functions that find each other in a snapshot of the module taken now.

    The guard later replaces ``mini.autodiff.backward_pass`` and friends with stubs; mini's own
    ``make_vjp`` looks ``backward_pass`` up in its module when it runs, so it would find the stub.
    These copies look it up in the snapshot instead.
    """
    snapshot = dict(vars(module))
    for name, value in vars(module).items():
        if isinstance(value, types.FunctionType) and value.__globals__ is vars(module):
            copy = types.FunctionType(value.__code__, snapshot, value.__name__, value.__defaults__,
                                      value.__closure__)
            copy.__kwdefaults__, copy.__doc__ = value.__kwdefaults__, value.__doc__
            snapshot[name] = copy
    return types.SimpleNamespace(**snapshot)


ref = _detached(mini.autodiff)   # ref.backward_pass, ref.add_outgrads, ref.make_vjp, ref.grad

ARGUMENT_NAMES = {mini.exp: "x", mini.log: "x", mini.tanh: "x", mini.multiply: "x, y",
                  mini.matmul: "a, b", mini.sum: "x"}


def _copy(value):
    """A fresh copy: a function that writes into its inputs cannot change the expected side."""
    return value.copy() if isinstance(value, np.ndarray) else value


def _shape(rng, ndims=(0, 1, 2), low=1, high=5):
    ndim = int(rng.choice(ndims))
    return tuple(int(n) for n in rng.integers(low, high, size=ndim))


# ---------------------------------------------------------------------------------------------
# VJPs of primitives, compared with mini's table
# ---------------------------------------------------------------------------------------------

def _vjp_case(rng, prim, argnum, fill_in, args, kwargs=None, hint="", broadcasting=False):
    """Case: the student's ``fill_in(g, ans, *args, **kwargs)`` against mini's VJP for ``argnum``.

    With ``broadcasting`` the student's result is summed to the argument's shape first, which is
    what ``mini.defvjp(prim, ..., broadcasting=True)`` does to every VJP it registers.
    """
    kwargs = kwargs or {}
    ans = prim.fun(*args, **kwargs)
    g = rng.standard_normal(np.shape(ans))
    shapes = " and ".join(f"{name} of shape {np.shape(arg)}"
                          for name, arg in zip(ARGUMENT_NAMES[prim].split(", "), args))
    keywords = "".join(f", {key}={value!r}" for key, value in kwargs.items())
    what = (f"your VJP of {prim.__name__} for argument {argnum}: "
            f"{fill_in}(g, ans, {ARGUMENT_NAMES[prim]}{keywords}) with {shapes}")
    if broadcasting:
        what += (", summed back to the argument's shape as mini.defvjp(..., broadcasting=True) "
                 "does")

    def call(student):
        result = getattr(student, fill_in)(_copy(g), _copy(ans), *map(_copy, args), **kwargs)
        return sum_to_like(result, args[argnum]) if broadcasting else result

    def expected():
        return mini.vjp_of(prim, argnum)(g, ans, *args, **kwargs)

    return Case(what=what, call=call, expected=expected, hint=hint)


def exp_vjp_check(rng):
    x = rng.standard_normal(_shape(rng))
    return _vjp_case(rng, mini.exp, 0, "exp_vjp", (x,), hint=(
        "the derivative of exp is exp itself, and the forward pass already computed it: it is ans. "
        "An elementwise function has a diagonal Jacobian, so J^T g multiplies g entry by entry."))


def log_vjp_check(rng):
    x = rng.uniform(0.2, 3.0, size=_shape(rng))
    return _vjp_case(rng, mini.log, 0, "log_vjp", (x,), hint=(
        "d log(x)/dx = 1/x, entry by entry; multiply (or divide) g elementwise."))


def tanh_vjp_check(rng):
    x = 1.5 * rng.standard_normal(_shape(rng))
    return _vjp_case(rng, mini.tanh, 0, "tanh_vjp", (x,), hint=(
        "d tanh(x)/dx = 1 - tanh(x)^2, and tanh(x) is ans: no need to recompute it."))


MULTIPLY_HINT = ("z = x * y entrywise, so dz/dx is y and dz/dy is x, entry by entry: each "
                 "argument's gradient is g times the OTHER argument.")
MULTIPLY_BROADCAST_HINT = (MULTIPLY_HINT + " Return it at the shape of g; mini's defvjp(..., "
                           "broadcasting=True) sums it back to the argument's shape for you.")


def _same_shape_pair(rng):
    shape = _shape(rng, ndims=(1, 2))
    return rng.standard_normal(shape), rng.standard_normal(shape)


def multiply_vjp_x_check(rng):
    return _vjp_case(rng, mini.multiply, 0, "multiply_vjp_x", _same_shape_pair(rng),
                     hint=MULTIPLY_HINT)


def multiply_vjp_y_check(rng):
    return _vjp_case(rng, mini.multiply, 1, "multiply_vjp_y", _same_shape_pair(rng),
                     hint=MULTIPLY_HINT)


# Every way the two arguments of a binary operation can broadcast against each other, in both
# orders: a VJP wrong for one of them fails every time, not only for the seeds that draw it.
def _broadcast_shapes(m, n):
    pairs = [((m, 1), (n,)), ((m, n), (n,)), ((m, n), ()), ((1, n), (m, 1))]
    return pairs + [pair[::-1] for pair in pairs]


def _multiply_broadcast_check(argnum, kind):
    def check(rng):
        m, n = (int(k) for k in rng.integers(2, 5, size=2))
        args = tuple(rng.standard_normal(shape) for shape in _broadcast_shapes(m, n)[kind])
        return _vjp_case(rng, mini.multiply, argnum, f"multiply_vjp_{'xy'[argnum]}", args,
                         hint=MULTIPLY_BROADCAST_HINT, broadcasting=True)
    check.__name__ = f"multiply_broadcast_{'xy'[argnum]}_{kind}_check"
    return check


MULTIPLY_BROADCAST_CHECKS = [_multiply_broadcast_check(argnum, kind)
                             for argnum in (0, 1) for kind in range(len(_broadcast_shapes(2, 3)))]


MATMUL_HINT = ("for C = A @ B with A of shape (m, k), B of shape (k, n) and g of shape (m, n): "
               "A_bar = g @ B^T has A's shape (m, k), B_bar = A^T @ g has B's shape (k, n) "
               "(L05 slide 23, y = W x gives x_bar = W^T y_bar). Check the shapes first.")


def _matmul_pair(rng, square):
    """(a, b) of shapes (m, k), (k, n): all three equal, or all three different."""
    if square:
        m = k = n = int(rng.integers(2, 5))
    else:
        m, k, n = (int(d) for d in rng.permutation([1, 2, 3, 4, 5])[:3])
    return rng.standard_normal((m, k)), rng.standard_normal((k, n))


def matmul_vjp_a_check(rng):
    return _vjp_case(rng, mini.matmul, 0, "matmul_vjp_a", _matmul_pair(rng, square=False),
                     hint=MATMUL_HINT)


def matmul_vjp_b_check(rng):
    return _vjp_case(rng, mini.matmul, 1, "matmul_vjp_b", _matmul_pair(rng, square=False),
                     hint=MATMUL_HINT)


SQUARE_HINT = ("with square matrices every product has the right shape, so a missing or misplaced "
               "transpose shows only in the numbers. " + MATMUL_HINT)


def matmul_square_a_check(rng):
    return _vjp_case(rng, mini.matmul, 0, "matmul_vjp_a", _matmul_pair(rng, square=True),
                     hint=SQUARE_HINT)


def matmul_square_b_check(rng):
    return _vjp_case(rng, mini.matmul, 1, "matmul_vjp_b", _matmul_pair(rng, square=True),
                     hint=SQUARE_HINT)


SUM_HINT = ("every entry of x that was summed receives the gradient of the sum it went into: "
            "spread g back over the summed axis. g has the shape of ans; with keepdims=False the "
            "summed axis is missing from g, so put it back (np.expand_dims) before broadcasting "
            "to x's shape (np.broadcast_to), or numpy lines g up with the wrong axis.")


def sum_all_check(rng):
    x = rng.standard_normal(_shape(rng, ndims=(1, 2, 3)))
    return _vjp_case(rng, mini.sum, 0, "sum_vjp", (x,), hint=SUM_HINT)


def _sum_axis_check(axis, keepdims):
    def check(rng):
        x = rng.standard_normal(_shape(rng, ndims=(2, 3), low=2))
        return _vjp_case(rng, mini.sum, 0, "sum_vjp", (x,),
                         {"axis": axis, "keepdims": keepdims}, hint=SUM_HINT)
    check.__name__ = f"sum_axis_{axis}_keepdims_{keepdims}_check"
    return check


# The first and the last axis, counted from either end, with and without keepdims: every one, in
# every grading run.
SUM_AXIS_CHECKS = [_sum_axis_check(axis, keepdims)
                   for axis in (0, 1, -1) for keepdims in (False, True)]


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
# backward_pass on programs traced with mini's own primitives
# ---------------------------------------------------------------------------------------------

MISSING = "no entry for this node in the dict your backward_pass returned"

BACKWARD_HINT = ("visit the nodes in reversed(mini.toposort(end_node)); at each node take its "
                 "total gradient from the dict, get (ans, args) = node.vjp_operands(), and for "
                 "each (argnum, parent) in zip(node.parent_argnums, node.parents) add "
                 "mini.vjp_of(node.fun, argnum)(g, ans, *args, **node.kwargs) into the parent's "
                 "entry with add_outgrads. Start the dict with {end_node: g}, not with ones.")


def _program(spec):
    """Trace ``spec`` with mini's primitives; return ``(end node, {name: node})``.

    ``spec`` is ``(inputs, steps)``: ``inputs`` a list of ``(name, value)``, ``steps`` a list of
    ``(name, primitive name, operand names, constants, kwargs)``; constants is a dict
    ``{position: number}`` of non-traced arguments.
    """
    inputs, steps = spec
    nodes = {name: Box(value, name=name) for name, value in inputs}
    for name, prim_name, operands, constants, kwargs in steps:
        args = [nodes[operand] for operand in operands]
        for position, constant in sorted(constants.items()):
            args.insert(position, constant)
        node = getattr(mini, prim_name)(*args, **kwargs)
        node.name = name
        nodes[name] = node
    return nodes[steps[-1][0]], nodes


def _listing(spec):
    inputs, steps = spec
    return program_listing([f"{name} = input of shape {np.shape(value)}" for name, value in inputs],
                           steps)


def _node_key(node):
    return f"{node.name} ({node.fun.__name__ if node.fun else 'input'})"


def _backward_case(rng, spec, what, only=None, hint=BACKWARD_HINT, listing=""):
    """Case: the student's backward_pass on the traced ``spec`` against mini's, node by node.

    The result is ``{node: gradient}`` for every node of the graph (or only the nodes named in
    ``only``), listed in reverse topological order, so that the first difference reported is the
    first place where the backward sweep went wrong.
    """
    end_shape = np.shape(_program(spec)[0].value)
    g = float(rng.standard_normal()) if end_shape == () else rng.standard_normal(end_shape)

    def gradients(backward_pass):
        end, nodes = _program(spec)
        grads = backward_pass(_copy(g), end)
        if not isinstance(grads, dict):
            raise TypeError(f"backward_pass should return a dict {{node: gradient}}, "
                            f"got {type(grads).__name__}")
        keep = [nodes[name] for name in only] if only else reversed(mini.toposort(end))
        return {_node_key(node): grads.get(node, MISSING) for node in keep}

    def call(student):
        with student.using(add_outgrads=ref.add_outgrads):
            return gradients(student.backward_pass)

    return Case(what=what + f", g = {_describe(g)}" + listing, call=call,
                expected=lambda: gradients(ref.backward_pass), hint=hint)


def _describe(g):
    return f"{g:.4g}" if np.ndim(g) == 0 else f"an array of shape {np.shape(g)}"


def running_example_check(rng):
    x1, x2 = (float(v) for v in rng.uniform(-1.0, 1.0, size=2))
    spec = ([("x1", x1), ("x2", x2)],
            [("x3", "multiply", ["x1"], {0: 1.5}, {}), ("x4", "multiply", ["x2"], {0: 2.0}, {}),
             ("x5", "add", ["x3", "x4"], {}, {}), ("x6", "exp", ["x5"], {}, {}),
             ("x7", "add", ["x1", "x6"], {}, {})])
    return _backward_case(rng, spec, f"backward_pass(g, x7) on the running example f = x1 + "
                                     f"exp(1.5 x1 + 2.0 x2) at x1 = {x1:.4g}, x2 = {x2:.4g}")


def _random_spec(rng, n_steps):
    """A random program over a few inputs with broadcasting, fan-out and reductions."""
    m, n, k = (int(d) for d in rng.integers(2, 5, size=3))
    candidates = [("X", (m, n)), ("W", (n, k)), ("b", (n,)), ("c", (m, 1)), ("s", ())]
    chosen = [candidates[0]] + [candidates[i] for i in sorted(
        rng.choice(np.arange(1, 5), size=int(rng.integers(2, 5)), replace=False))]
    inputs = [(name, rng.standard_normal(shape)) for name, shape in chosen]
    values = dict(inputs)
    uses = {name: 0 for name in values}
    steps = []

    def add_step(prim_name, operands, constants=None, kwargs=None):
        name = f"v{len(steps) + 1}"
        args = [values[operand] for operand in operands]
        for position, constant in sorted((constants or {}).items()):
            args.insert(position, constant)
        values[name] = getattr(mini, prim_name).fun(*args, **(kwargs or {}))
        uses[name] = 0
        for operand in operands:
            uses[operand] += 1
        steps.append((name, prim_name, list(operands), constants or {}, kwargs or {}))
        return name

    def pick():
        names = list(values)
        if rng.random() < 0.6:
            return names[-1 - int(rng.integers(min(2, len(names))))]
        return names[int(rng.integers(len(names)))]

    while len(steps) < n_steps:
        a = pick()
        va = values[a]
        size = float(np.max(np.abs(va))) if np.size(va) else 0.0
        kind = rng.choice(["unary", "binary", "binary", "matmul", "sum", "square", "transpose"])
        if kind == "unary":
            prim = rng.choice(["tanh", "sigmoid", "exp"] if size < 2.5 else ["tanh", "sigmoid"])
            add_step(str(prim), [a])
        elif kind == "binary":
            partners = [b for b in values if _broadcasts(np.shape(va), np.shape(values[b]))
                        and size * np.max(np.abs(values[b]), initial=0.0) < 30]
            if not partners:
                continue
            b = partners[int(rng.integers(len(partners)))]
            pair = [a, b] if rng.random() < 0.5 else [b, a]
            add_step(str(rng.choice(["add", "subtract", "multiply"])), pair)
        elif kind == "matmul":
            partners = [b for b in values if np.ndim(va) == 2 and np.ndim(values[b]) in (1, 2)
                        and np.shape(values[b])[0] == np.shape(va)[1] and b != a]
            if not partners or size > 5:
                continue
            add_step("matmul", [a, partners[int(rng.integers(len(partners)))]])
        elif kind == "sum" and np.ndim(va) >= 1:
            axis = None if rng.random() < 0.3 else int(rng.integers(-np.ndim(va), np.ndim(va)))
            add_step("sum", [a], kwargs={"axis": axis, "keepdims": bool(rng.random() < 0.5)})
        elif kind == "square" and size < 5:
            # log(a * a + 1): the multiply reads the same node twice (two edges from one node)
            add_step("log", [add_step("add", [add_step("multiply", [a, a])], {1: 1.0})])
        elif kind == "transpose" and np.ndim(va) == 2:
            add_step("transpose", [a])

    # every value nobody read flows into the end, so every node has a path to it (the final adds
    # broadcast a scalar onto the last value)
    last = steps[-1][0]
    for name in [name for name, count in uses.items() if count == 0 and name != last]:
        last = add_step("add", [last, add_step("sum", [name])])
    return inputs, steps


def _broadcasts(shape_a, shape_b):
    try:
        return len(np.broadcast_shapes(shape_a, shape_b)) <= 2
    except ValueError:
        return False


def _random_program_check(n_steps):
    def check(rng):
        spec = _random_spec(rng, n_steps)
        end_name = spec[1][-1][0]
        return _backward_case(rng, spec, f"backward_pass(g, {end_name}) on the random program "
                                         "below, traced with mini's primitives",
                              listing=f"; the program:{_listing(spec)}\n")
    check.__name__ = f"random_program_{n_steps}_check"
    return check


def layer_check(rng):
    """A layer with broadcasting (+ b), a node read twice (H * H) and sums over axis 1, whose VJPs
    need the node's kwargs."""
    m, n, k = (int(d) for d in rng.permutation([2, 3, 4, 5])[:3])
    spec = ([("X", rng.standard_normal((m, n))), ("W", rng.standard_normal((n, k))),
             ("b", rng.standard_normal(k))],
            [("Z", "matmul", ["X", "W"], {}, {}), ("A", "add", ["Z", "b"], {}, {}),
             ("H", "tanh", ["A"], {}, {}), ("S", "multiply", ["H", "H"], {}, {}),
             ("r", "sum", ["S"], {}, {"axis": 1}), ("q", "sum", ["X"], {}, {"axis": 1}),
             ("end", "add", ["r", "q"], {}, {})])
    return _backward_case(rng, spec, f"backward_pass(g, end) for end = sum(H * H, axis=1) + "
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
    spec = ([("x", rng.standard_normal(n)), ("w", rng.uniform(-0.8, 0.8, size=n))], steps)
    return _backward_case(rng, spec, f"backward_pass(g, v{rungs}) on a ladder of {rungs} rungs, "
                                     "v_i = tanh(v_(i-1)) + w * v_(i-1) with v_0 = x (each v "
                                     f"feeds two nodes, w feeds {rungs}), x and w of shape ({n},)")


def long_chain_check(rng):
    steps, v = [], "x"
    for i in range(1, 1501):
        c, d = float(np.exp(0.02 * rng.standard_normal())), float(rng.standard_normal())
        steps += [(f"m{i}", "multiply", [v], {1: c}, {}), (f"v{i}", "add", [f"m{i}"], {1: d}, {})]
        v = f"v{i}"
    spec = ([("x", float(rng.standard_normal()))], steps)
    return _backward_case(rng, spec, "backward_pass(g, v1500) on a chain of 3001 nodes, "
                                     "v_i = c_i * v_(i-1) + d_i with v_0 = x",
                          only=["x", "v750"], hint="a walk that calls itself once per node stops "
                          "at Python's recursion limit (about 1000 calls deep): loop over "
                          "reversed(mini.toposort(end_node)) instead. " + BACKWARD_HINT)


# ---------------------------------------------------------------------------------------------
# make_vjp and grad (with mini's backward_pass, and for grad mini's make_vjp, standing in)
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
        with student.using(backward_pass=ref.backward_pass):
            return outcome(student.make_vjp)

    def expected():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return outcome(ref.make_vjp)

    return Case(what=what, call=call, expected=expected, hint=hint)


MAKE_VJP_HINT = ("start the trace with start = Box(x), run end = fun(start), and return "
                 "(vjp, end.value) where vjp(g) runs backward_pass(g, end) and picks out the "
                 "gradient of start (L05 slide 28).")


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
        with student.using(backward_pass=ref.backward_pass, make_vjp=ref.make_vjp):
            return student.grad(fun)(_copy(x))

    return Case(what=what, call=call, expected=lambda: ref.grad(fun)(x), hint=hint)


GRAD_HINT = ("grad(fun) returns a function of x: trace fun at x with make_vjp and call the vjp "
             "with g = 1.0, the gradient of the output with respect to itself (x_bar_7 = 1 on "
             "L05 slide 19).")


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


CHECKS = {
    "add_outgrads": [add_outgrads_first_check, add_outgrads_sum_check,
                     add_outgrads_inputs_unchanged_check],
    "unary_vjps": [exp_vjp_check, log_vjp_check, tanh_vjp_check],
    "multiply_vjps": [multiply_vjp_x_check, multiply_vjp_y_check, *MULTIPLY_BROADCAST_CHECKS],
    "matmul_vjps": [matmul_vjp_a_check, matmul_vjp_b_check, matmul_square_a_check,
                    matmul_square_b_check],
    "sum_vjp": [sum_all_check, *SUM_AXIS_CHECKS],
    "backward_pass": [running_example_check, layer_check, _random_program_check(6),
                      _random_program_check(10), _random_program_check(16), ladder_check,
                      long_chain_check],
    "make_vjp": [make_vjp_running_example_check, make_vjp_matrix_check, make_vjp_constant_check],
    "grad": [grad_running_example_check, grad_vector_check, grad_network_check],
    "numerical_grad": [numerical_vector_check, numerical_matrix_check, numerical_scalar_check,
                       numerical_float32_check, numerical_step_check],
}
