"""Lab 3's checks of forward mode: the JVP table alone, against mini's; jvp against make_jvp,
and jacobian_forward and jacobian_reverse against mini's jacobian, with JVPs (and for
jacobian_reverse a make_vjp's vjp) answered here."""
import numpy as np

import mini
from autograder.checks import Case
from autograder.checks.lab3.shared import (_arguments, _dims, _ran, _runs, _same_arguments, _vjp_of,
                                           _x2, _x3)
from autograder.probes.lab3 import program_function
from autograder.probes.programs import arguments, run_steps

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


CHECKS = {
    "the JVPs of the primitives": (3, JVP_TABLE_CHECKS),
    "jvp of a program, fan-out included": (2, [check_jvp_layer, check_jvp_fan_out]),
    "jvp of a function that ignores its input": (1, [check_jvp_constant]),
    "jacobian_forward": (2, JACOBIAN_FORWARD_CHECKS),
    "jacobian_reverse": (2, JACOBIAN_REVERSE_CHECKS),
}
