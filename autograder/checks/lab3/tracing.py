"""Lab 3's checks of the tracer (the graph the student's Box records, rebuilt here with mini's
Box and compared with mini's own trace, gradients included) and of add_outgrads."""
import functools

import numpy as np

import mini
from autograder.checks import Case
from autograder.checks.lab3.shared import _dims, _shape
from autograder.probes.lab3 import recorded, written
from autograder.probes.programs import run_steps
from mini.autodiff import Box
from mini.primitives import Primitive

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
    inputs = list(zip(("x1", "x2", "w1", "w2"), (float(v) for v in rng.uniform(-1.0, 1.0, size=4))))
    steps = [("x3", "*", ["w1", "x1"], {}, {}), ("x4", "*", ["w2", "x2"], {}, {}),
             ("x5", "+", ["x3", "x4"], {}, {}), ("x6", "exp", ["x5"], {}, {}),
             ("x7", "+", ["x1", "x6"], {}, {})]
    return _tracer_case("your Box tracing f = x1 + exp(w1 * x1 + w2 * x2) at " + ", ".join(
        f"{name} = {value:.4g}" for name, value in inputs), inputs, steps)


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


CHECKS = {
    "tracer": {"the running example": (1, [check_tracer_running_example]),
               "every operator": (1, [check_tracer_operators]),
               "reflected operators (2.0 - x, 1.0 / x)": (1, [check_tracer_reflected])},
    "add_outgrads": {"the first contribution": (1, [check_add_outgrads_first]),
                     "adding a contribution": (1, [check_add_outgrads_sum]),
                     "its inputs left as they were": (2, [check_add_outgrads_inputs_unchanged])},
}
