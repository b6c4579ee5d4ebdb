"""Lab 3's checks of the student's VJP table: unbroadcast against mini's sum_to_shape, and the
elementwise, shape-moving and log_softmax VJPs against mini's, one primitive and argument at a
time, each called directly on every broadcasting, axis and keepdims variant with ``unbroadcast``
answered here."""
import re

import numpy as np

import mini
from autograder.checks import Case
from autograder.checks.lab3.shared import _arguments, _dims, _x2, _x3
from mini.table import sum_to_shape

# ---------------------------------------------------------------------------------------------
# unbroadcast, against mini's sum_to_shape, on every way a shape can be broadcast
# ---------------------------------------------------------------------------------------------

UNBROADCAST_HINT = ("the result must have exactly `shape`, and each of its entries must collect "
                    "every entry of g it was copied to. Line `shape` up with g's shape at the "
                    "right, as numpy does, and check each axis that broadcasting made or "
                    "stretched, on the smallest failing call above.")


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
                       "each output entry of a slice depends on every entry of that slice: check "
                       "your J^T g for one slice by hand on x = (0, 0), then mind the axis (a "
                       "negative one, a middle one, the default) and what you reduce over it.")


def _each_vjp(checks):
    """One behaviour, worth one part, per primitive: the VJPs of all its arguments."""
    primitives = {}
    for check in checks:            # check_<primitive>_vjp or check_<primitive>_<argnum>_vjp
        primitive = re.fullmatch(r"check_(\w+?)(_[01])?_vjp", check.__name__).group(1)
        primitives.setdefault(f"the VJPs of mini.{primitive}", (1, []))[1].append(check)
    return primitives


CHECKS = {
    "unbroadcast": {"every broadcast undone": (1, [check_unbroadcast])},
    "elementwise_vjps": _each_vjp(ELEMENTWISE_CHECKS),
    "shape_vjps": _each_vjp(SHAPE_CHECKS),
    "log_softmax_vjp": {"the VJP of mini.log_softmax": (1, [check_log_softmax_vjp])},
}
