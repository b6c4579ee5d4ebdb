"""Forward mode: for EVERY primitive the JVP and the VJP are the same Jacobian
(<u, J v> == <J^T u, v>) and the JVP is the central difference; make_jvp equals autograd's."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mini
from autograder.checks.programs import listing
from mini import linear, nn, primitives, table
from mini.table import Primitive
from support.random_programs import autograd_call, loss_of, programs

R = np.random.default_rng(0)
X23, X34, Y3 = R.standard_normal((2, 3)), R.standard_normal((3, 4)), R.standard_normal(3)
X234, POS23 = R.standard_normal((2, 3, 4)), R.uniform(0.5, 2.0, (2, 3))
IDS = np.array([[1, -1], [0, 1]])
MASK = np.array([[True, False, True], [False, True, True]])
WEIGHTS, LABELS = np.array([[1.0, 0.0, 1.0], [0.5, 2.0, 0.0]]), np.array([2, 0])


def n(*shape):
    return R.standard_normal(shape)


EXAMPLES = {   # primitive: [(args, kwargs), ...] covering the forms each accepts
    mini.add: [((n(3, 1), n(4)), {}), ((2.0, n(2, 3)), {})],
    mini.subtract: [((n(3, 1), n(4)), {})],
    mini.multiply: [((n(3, 1), n(4)), {}), ((n(2, 3), 1.5), {})],
    mini.divide: [((n(3, 1), R.uniform(1, 2, 4)), {})],
    mini.maximum: [((n(3, 1), n(4)), {})],
    mini.power: [((POS23, n(3)), {}), ((POS23, 3.0), {})],
    mini.where: [((MASK, n(2, 3), n(3)), {})],
    mini.negative: [((X23,), {})],
    mini.exp: [((X23,), {})],
    mini.log: [((POS23,), {})],
    mini.tanh: [((X23,), {})],
    mini.sqrt: [((POS23,), {})],
    primitives.std: [((X234,), {}), ((X234,), {"axis": 1, "ddof": 1}),
                     ((X234,), {"axis": (0, 2), "keepdims": True})],
    mini.conjugate: [((X23,), {})],
    mini.sigmoid: [((X23,), {})],
    mini.relu: [((X23,), {})],
    mini.logsumexp: [((X234,), {"axis": -1}), ((X234,), {}),
                     ((X234,), {"axis": (0, 2), "keepdims": True})],
    mini.softmax: [((X23,), {"axis": 0}), ((X234,), {})],
    mini.log_softmax: [((X23,), {"axis": 0}), ((X234,), {})],
    mini.sum: [((X234,), {}), ((X234,), {"axis": -1}), ((X234,), {"axis": (0, 2),
                                                                 "keepdims": True})],
    mini.mean: [((X234,), {"axis": 1}), ((X234,), {"axis": (-1, 0)})],
    linear.broadcast_like: [((n(2, 4), X234, 1), {}), ((n(1, 3, 1), X234, (0, 2), True), {})],
    table.sum_to_like: [((X234, n(3, 1)), {})],
    table.broadcast_to_like: [((n(3, 1), X234), {})],
    mini.reshape: [((X234, (3, -1)), {})],
    linear.reshape_like: [((n(6), X23), {})],
    mini.transpose: [((X234, (-1, 0, 1)), {}), ((X234,), {})],
    linear.untranspose: [((n(4, 2, 3), (-1, 0, 1)), {}), ((X234,), {})],
    mini.getitem: [((X34, (slice(1, None), [0, 2, 0])), {}), ((X23, MASK), {})],
    linear.scatter_add: [((n(2, 3), (slice(1, None), [0, 2, 0]), X34), {}),
                         ((n(4), MASK, X23), {})],
    mini.take: [((X34, IDS), {"axis": 0}), ((X34, IDS), {}), ((X34, IDS), {"axis": -1})],
    linear.untake: [((n(2, 2, 4), IDS, X34), {"axis": 0}), ((n(2, 2), IDS, X34), {}),
                    ((n(3, 2, 2), IDS, X34), {"axis": -1})],
    linear.concatenate_args: [((0, X23, n(1, 3)), {}), ((-1, X23, n(2, 2)), {})],
    linear.stack_args: [((0, X23, n(2, 3)), {}), ((-1, X23, n(2, 3)), {})],
    linear.concatenate_part: [((n(3, 3), 0, 1, X23, n(1, 3)), {})],
    mini.matmul: [((X234, n(4, 5)), {}), ((Y3, X34), {}), ((n(2, 1, 3, 4), n(5, 4, 2)), {})],
    linear.matmul_adjoint_a: [((n(2, 3, 5), X234, n(4, 5)), {}), ((n(4), Y3, X34), {}),
                              ((n(2, 5, 3, 2), n(2, 1, 3, 4), n(5, 4, 2)), {})],
    linear.matmul_adjoint_b: [((n(2, 3, 5), X234, n(4, 5)), {}), ((n(4), Y3, X34), {}),
                              ((n(2, 5, 3, 2), n(2, 1, 3, 4), n(5, 4, 2)), {})],
    linear.affine: [((X234, n(4, 5), n(5)), {}), ((Y3, X34, n(4)), {}), ((X23, X34, n(1, 4)), {})],
    mini.dot: [((n(2, 2, 3), X234[:, :3]), {}), ((2.0, X23), {}), ((Y3, X34), {})],
    linear.dot_adjoint_a: [((n(2, 2, 2, 4), n(2, 2, 3), X234[:, :3]), {}),
                           ((n(2, 3), 2.0, X23), {}), ((n(4), Y3, X34), {})],
    linear.dot_adjoint_b: [((n(2, 2, 2, 4), n(2, 2, 3), X234[:, :3]), {}),
                           ((n(2, 3), 2.0, X23), {}), ((n(4), Y3, X34), {})],
    # piecewise constant: both derivatives are zero
    mini.greater: [((X23, Y3), {})], mini.greater_equal: [((X23, Y3), {})],
    mini.less: [((X23, Y3), {})], mini.less_equal: [((X23, Y3), {})],
    mini.equal: [((X23, X23), {})], mini.not_equal: [((X23, Y3), {})],
    mini.zeros_like: [((X23,), {})], mini.ones_like: [((X23,), {})],
    mini.one_hot: [((np.array([2, 0]), 3), {})], mini.axis_size: [((X234, (0, 2)), {})],
    # mini.nn's: a pooling layer and the fused loss
    nn.masked_mean: [((X234[:, :, :2], WEIGHTS), {}), ((X234, R.uniform(0.5, 2, (2, 3))), {})],
    nn.masked_mean_adjoint: [((n(2, 4), WEIGHTS), {}), ((n(2, 2), R.uniform(0.5, 2, (2, 3))), {})],
    nn.softmax_cross_entropy: [((X23, LABELS), {}), ((X234, np.array([[0, 3, 1], [2, 2, 0]])), {}),
                               ((Y3, np.array(1)), {})],
    nn.softmax_cross_entropy_grad: [((1.7, X23, LABELS), {}),
                                    ((-0.3, X234, np.array([[0, 3, 1], [2, 2, 0]])), {})],
    nn.one_hot_like: [((LABELS, X23), {})],
    nn.sigmoid_cross_entropy: [((X23, R.uniform(0, 1, (2, 3))), {}), ((X23, R.uniform(0, 1, 3)), {}),
                               ((2.5, 0.25), {})],
}


def mini_primitives():
    """Every primitive mini defines (not the ones tests register for themselves)."""
    return {value for module in (table, linear, primitives, nn) for value in vars(module).values()
            if isinstance(value, Primitive)}


def test_every_primitive_has_an_example_here_and_both_derivatives_in_the_table():
    missing = sorted(p.__name__ for p in mini_primitives() - set(EXAMPLES))
    assert not missing, f"add examples for {missing}"
    for prim in mini_primitives():
        assert prim in mini.vjp_table and prim in mini.jvp_table, prim


def _float_positions(args):
    return [i for i, a in enumerate(args) if isinstance(a, (float, np.ndarray)) and
            np.asarray(a).dtype.kind == "f"]


CASES = [(prim, args, kwargs, argnum) for prim, examples in EXAMPLES.items()
         for args, kwargs in examples for argnum in _float_positions(args)]


@pytest.mark.parametrize("prim, args, kwargs, argnum", CASES,
                         ids=[f"{c[0].__name__}-{c[3]}-{i}" for i, c in enumerate(CASES)])
def test_jvp_and_vjp_are_the_same_jacobian_and_the_jvp_is_the_derivative(prim, args, kwargs,
                                                                           argnum):
    rng = np.random.default_rng(argnum)
    ans = prim(*args, **kwargs)
    u = rng.standard_normal(np.shape(ans))
    v = rng.standard_normal(np.shape(args[argnum]))
    Jv = mini.jvp_of(prim, argnum)(v, ans, *args, **kwargs)
    JTu = mini.vjp_of(prim, argnum)(u, ans, *args, **kwargs)
    assert np.shape(Jv) == np.shape(ans) and np.shape(JTu) == np.shape(args[argnum])
    assert np.sum(u * Jv) == pytest.approx(np.sum(JTu * v), rel=1e-10, abs=1e-12)

    def along(h):
        moved = list(args)
        moved[argnum] = args[argnum] + h * v
        return np.asarray(prim(*moved, **kwargs), dtype=np.float64)
    central = (along(1e-6) - along(-1e-6)) / 2e-6
    np.testing.assert_allclose(Jv, central, rtol=1e-5, atol=1e-6)


# --- make_jvp against autograd -------------------------------------------------------------------

@settings(max_examples=100, deadline=None, derandomize=True)
@given(programs(), st.integers(0, 2**31))
def test_jvps_of_random_programs_equal_autograds_make_jvp(program, seed):
    x = dict(program[0])["x"]
    v = np.random.default_rng(seed).standard_normal(x.shape)
    value, ours = mini.make_jvp(loss_of(program), x)(v)
    their_value, theirs = autograd.make_jvp(loss_of(program, autograd_call))(x)(v)
    np.testing.assert_allclose(value, their_value, rtol=1e-12)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9, err_msg=listing(program))


def test_jvp_of_a_vector_function_with_matrices_and_indexing():
    rng = np.random.default_rng(3)
    W, x, v = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(4)
    f = lambda np_, x: np_.concatenate([np_.tanh(np_.dot(W, x)), x[::-1] * x[0]], axis=0)
    value, ours = mini.jvp(lambda x: f(np, x), x, v)
    their_value, theirs = autograd.make_jvp(lambda x: f(anp, x))(x)(v)
    np.testing.assert_allclose(value, their_value)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    np.testing.assert_allclose(ours, mini.jacobian(lambda x: f(np, x))(x) @ v, rtol=1e-12)


def test_make_jvp_with_respect_to_another_argument_and_an_independent_output():
    f = lambda a, b: a * mini.exp(b)
    assert mini.make_jvp(f, 2.0, 0.0, argnum=1)(3.0) == (2.0, 6.0)
    value, tangent = mini.jvp(lambda x: np.ones(2), np.zeros(3), np.ones(3))
    assert value.tolist() == [1.0, 1.0] and tangent.tolist() == [0.0, 0.0]


def test_forward_over_reverse_and_forward_over_forward_give_second_derivatives():
    f = lambda x: mini.sum(mini.tanh(x) ** 3)
    x, v = np.array([0.3, -0.7, 1.1]), np.array([1.0, 2.0, -1.0])
    hvp = autograd.hessian_vector_product(lambda x: anp.sum(anp.tanh(x) ** 3))(x, v)
    np.testing.assert_allclose(mini.jvp(mini.grad(f), x, v)[1], hvp, rtol=1e-12)
    second = lambda x: mini.jvp(lambda y: mini.jvp(mini.tanh, y, 1.0)[1], x, 1.0)[1]
    t = np.tanh(0.4)
    assert second(0.4) == pytest.approx(-2 * t * (1 - t * t), rel=1e-12)


def test_a_tangent_of_the_wrong_shape_is_named():
    with pytest.raises(ValueError, match=r"tangent has shape \(2,\), but argument 0 has shape "
                                         r"\(3,\)"):
        mini.jvp(mini.tanh, np.zeros(3), np.ones(2))
