"""Lab 3's checks of the reverse pass: backward_pass on graphs pre-traced from programs (their
VJPs the nodes' local Jacobians, add_outgrads answered here), make_vjp (a Box that only starts
the graph, fun's graph pre-traced, backward_pass answered here) and grad (make_vjp's vjp answered
here)."""
import itertools

import numpy as np

import mini
from autograder.checks import Case
from autograder.checks.lab3.shared import (_describe, _dims, _ran, _same_arguments, _shape, _vjp_of)
from autograder.checks.programs import listing, random_program
from autograder.probes.lab3 import MISSING, node_key, program_function
from autograder.probes.programs import run_steps
from mini.autodiff import Box

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
    inputs = list(zip(("x1", "x2", "w1", "w2"), (float(v) for v in rng.uniform(-1.0, 1.0, size=4))))
    program = (inputs,
               [("x3", "multiply", ["w1", "x1"], {}, {}), ("x4", "multiply", ["w2", "x2"], {}, {}),
                ("x5", "add", ["x3", "x4"], {}, {}), ("x6", "exp", ["x5"], {}, {}),
                ("x7", "add", ["x1", "x6"], {}, {})])
    return _backward_case(rng, program, "backward_pass(g, x7) on the running example f = x1 + "
                                        "exp(w1 x1 + w2 x2) at " + ", ".join(
                                            f"{name} = {value:.4g}" for name, value in inputs))


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
        f"make_vjp(f, x1) for f(x1) = x1 + exp(w1 x1 + w2 x2) at x1 = {x1:.4g} (x2 = {x2:.4g}, "
        "w1 = 1.5, w2 = 2.0), "
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
    return _grad_case(f"grad(f)(x1) for f(x1) = x1 + exp(w1 x1 + w2 x2) at x1 = {x1:.4g} "
                      f"(x2 = {x2:.4g}, w1 = 1.5, w2 = 2.0)", _running_example_steps(x2), x1)


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


def check_grad_at_two_points(rng):
    m, n = _dims(rng, 2, high=6)
    A, c = rng.standard_normal((m, n)), rng.standard_normal(m)
    steps = [("u", "matmul", ["x"], {0: A}, {}), ("h", "tanh", ["u"], {}, {}),
             ("p", "multiply", ["h"], {1: c}, {}), ("f", "sum", ["p"], {}, {})]
    fun = program_function(steps)
    xs = [rng.standard_normal(n), rng.standard_normal(n)]
    return Case(what=f"gradfun = grad(f) for f(x) = sum(tanh(A @ x) * c) with x of shape ({n},), "
                     "then gradfun(x1) and gradfun(x2) at two different points",
                probe="grad_results",
                inputs={"steps": steps, "xs": xs, "values": [fun(x) for x in xs]},
                expected=lambda: {f"gradfun(x{i})": mini.grad(fun)(x)
                                  for i, x in enumerate(xs, start=1)},
                stand_ins={f"vjp at x{i}": _vjp_of(steps, x) for i, x in enumerate(xs, start=1)},
                hint=GRAD_HINT + " The function grad returns is called at many points (each "
                                 "step of gradient descent): trace fun anew at each x it is "
                                 "given, not once for all of them.")


CHECKS = {
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
             "functions of vectors and matrices": (1, [check_grad_vector, check_grad_network,
                                                       check_grad_at_two_points])},
}
