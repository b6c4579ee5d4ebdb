"""mini.framework (the static, TensorFlow-v1 style front end) against closed forms, central
differences and mini.autodiff on 200 random graphs (autograder.checks.programs); every error
names the node at fault."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mini
from autograder.checks.programs import MOVES, listing, random_program, run_steps
from mini import framework as fw

E55 = np.exp(5.5)


@pytest.fixture
def graph():
    with fw.Graph().as_default() as g:
        yield g


# --- closed forms ---------------------------------------------------------------------------------

def test_linear_model_values_and_gradients(graph):
    x = fw.Placeholder((None,), "x")
    a, b = fw.Variable(2.0, "a"), fw.Variable(1.0, "b")
    y = a * x + b
    grad_a, grad_b, grad_x = fw.gradients(mini.sum(y), [a, b, x])
    xs = np.array([1.0, 2.0, 3.0])
    y_value, ga, gb, gx = fw.Session().run([y, grad_a, grad_b, grad_x], {x: xs})

    np.testing.assert_array_equal(y_value, 2.0 * xs + 1.0)
    assert ga == pytest.approx(xs.sum()) and gb == pytest.approx(3.0)    # d/da = sum x, d/db = n
    np.testing.assert_array_equal(gx, [2.0, 2.0, 2.0])
    eager = mini.grad(lambda p: mini.sum(p["a"] * xs + p["b"]))({"a": 2.0, "b": 1.0})
    assert (ga, gb) == (eager["a"], eager["b"])


def test_running_example_equals_autodiff_and_the_analytic_gradient(graph):
    """f = x1 + exp(1.5 x1 + 2.0 x2) at x1 = 3, x2 = 0.5 (L05 slides 13-19)."""
    def f(x1, x2):
        return x1 + mini.exp(1.5 * x1 + 2.0 * x2)

    x1, x2 = fw.Placeholder((), "x1"), fw.Placeholder((), "x2")
    out = f(x1, x2)
    grads = fw.gradients(out, [x1, x2])
    value, g1, g2 = fw.Session().run([out, *grads], {x1: 3.0, x2: 0.5})

    assert value == f(3.0, 0.5) == pytest.approx(3 + E55, rel=1e-15)
    assert g1 == mini.grad(f, 0)(3.0, 0.5) == pytest.approx(1 + 1.5 * E55, rel=1e-14)
    assert g2 == mini.grad(f, 1)(3.0, 0.5) == pytest.approx(2 * E55, rel=1e-14)


def test_the_backward_graph_is_a_graph_of_the_same_session(graph):
    x = fw.Variable(3.0, "x")
    (g,) = fw.gradients(mini.exp(2.0 * x), [x])
    assert isinstance(g, fw.Operation) and g.graph is graph
    assert x.value == 3.0 and g.value is None      # built, not computed: that is the Session's job
    assert fw.Session().run(g) == pytest.approx(2 * np.exp(6.0), rel=1e-14)


def test_minimize_takes_one_gradient_step_per_run(graph):
    x, t = fw.Placeholder((None,), "x"), fw.Placeholder((None,), "t")
    a, b = fw.Variable(0.5, "a"), fw.Variable(-1.0, "b")
    loss = mini.mean((a * x + b - t) * (a * x + b - t))
    train = fw.GradientDescentOptimizer(0.1).minimize(loss)
    xs, ts = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    expected_a, expected_b = 0.5, -1.0
    for _ in range(3):
        residual = expected_a * xs + expected_b - ts
        expected_a -= 0.1 * np.mean(2 * residual * xs)
        expected_b -= 0.1 * np.mean(2 * residual)
        fw.Session().run(train, {x: xs, t: ts})
    assert a.value == pytest.approx(expected_a, rel=1e-14)
    assert b.value == pytest.approx(expected_b, rel=1e-14)


# --- 200 random graphs: the framework's gradients are the derivatives (central differences of the
# forward computation, which uses no VJP), and equal mini.grad's -----------------------------------

M, N = 3, 4
SHAPES = [(), (N,), (1, N), (M, 1), (M, N)]     # every pair broadcasts, to at most (M, N)


@st.composite
def programs(draw):
    """A random program over one to three inputs of SHAPES and W of shape (N, N), with every
    move; operands drawn from every value so far, so values fan out, and every value joined into
    the end.  Hypothesis draws the shapes, the length and the seed, and shrinks them."""
    shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3))
    inputs = [(f"x{k}", shape) for k, shape in enumerate(shapes)] + [("W", (N, N))]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return random_program(rng, inputs, draw(st.integers(1, 8)), dict.fromkeys(MOVES, 1),
                          prefer_recent=False, join_unread=True)


def loss_of(program, inputs):
    """The shared recipe: sum(end) of the program run on ``inputs`` ({name: value}), arrays
    (eager), traced values or Variables (framework) alike."""
    steps = program[1]
    return mini.sum(run_steps(steps, inputs)[steps[-1][0]])


@settings(max_examples=200, deadline=None, derandomize=True)
@given(programs())
def test_framework_gradients_equal_central_differences_and_mini_grad_on_random_graphs(program):
    params = dict(program[0])

    def loss(p):
        return loss_of(program, p)

    eager_value, eager_grads = mini.value_and_grad(loss)(params)

    with fw.Graph().as_default() as graph:
        variables = {name: fw.Variable(value, name) for name, value in params.items()}
        loss_node = loss(variables)
        grad_nodes = fw.gradients(loss_node, list(variables.values()))
    results = fw.Session(graph).run([loss_node] + grad_nodes)
    value, grads = results[0], dict(zip(variables, results[1:]))

    np.testing.assert_allclose(value, eager_value, rtol=1e-10, atol=1e-10)
    for name in params:
        assert np.shape(grads[name]) == np.shape(params[name]), name
        numerical = mini.numerical_grad(lambda v: loss({**params, name: v}), params[name])
        np.testing.assert_allclose(grads[name], numerical, rtol=1e-5, atol=1e-5,
                                   err_msg=f"gradient of {name} for the program{listing(program)}")
        np.testing.assert_allclose(grads[name], eager_grads[name], rtol=1e-10, atol=1e-10,
                                   err_msg=f"gradient of {name} for the program{listing(program)}")


# --- running only what the fetches need, in the shape they were asked -----------------------------

def test_fetches_as_one_node_a_list_a_tuple_and_a_dict(graph):
    a, b = fw.Variable(2.0, "a"), fw.Constant(3.0, "b")
    total, product = a + b, a * b
    session = fw.Session()
    assert session.run(total) == 5.0
    assert session.run([total, product]) == [5.0, 6.0]
    assert session.run((product, total)) == (6.0, 5.0)
    assert session.run({"sum": total, "product": product}) == {"sum": 5.0, "product": 6.0}


def test_only_what_the_fetches_need_is_computed(graph):
    calls = []
    counted = mini.primitive(lambda x: calls.append(x) or x)
    a, unfed = fw.Variable(2.0, "a"), fw.Placeholder((), "unfed")
    needed, not_needed = a * 3.0, counted(a) + unfed
    assert fw.Session().run(needed) == 6.0       # `unfed` is not fed, and that is fine
    assert calls == []                           # the branch the fetch does not read never ran
    assert fw.Session().run(not_needed, {unfed: 1.0}) == 3.0 and calls == [2.0]


def test_variables_keep_their_values_between_runs_and_placeholders_do_not(graph):
    x, w = fw.Placeholder((), "x"), fw.Variable(1.0, "w")
    train = fw.GradientDescentOptimizer(0.5).minimize(w * x)
    session = fw.Session()
    session.run(train, {x: 2.0})
    session.run(train, {x: 2.0})
    assert w.value == pytest.approx(1.0 - 2 * 0.5 * 2.0)
    with pytest.raises(ValueError, match="Placeholder 'x' was not fed"):
        session.run(train)


# --- every error names the node at fault ----------------------------------------------------------

def test_unfed_placeholder_is_named(graph):
    images = fw.Placeholder((None, 3), "images")
    with pytest.raises(ValueError, match="Placeholder 'images' was not fed"):
        fw.Session().run(mini.sum(images))


def test_wrong_feed_shape_names_the_node_and_both_shapes(graph):
    images = fw.Placeholder((None, 3), "images")
    with pytest.raises(ValueError, match=r"Placeholder 'images' expects shape \(None, 3\) but was "
                                         r"fed shape \(2, 4\)"):
        fw.Session().run(mini.sum(images), {images: np.zeros((2, 4))})
    with pytest.raises(ValueError, match=r"'images' expects shape \(None, 3\) .* shape \(3,\)"):
        fw.Session().run(mini.sum(images), {images: np.zeros(3)})


def test_fetch_from_another_graph_is_named():
    with fw.Graph().as_default() as first:
        a = fw.Variable(1.0, "a")
    with fw.Graph().as_default() as second:
        fw.Variable(2.0, "b")
    with pytest.raises(ValueError, match=f"cannot fetch <Variable 'a'>: it belongs to "
                                         f"{first!r}, this Session runs {second!r}"):
        fw.Session(second).run(a)


def test_operation_mixing_graphs_is_named():
    with fw.Graph().as_default():
        a = fw.Variable(1.0, "a")
    with fw.Graph().as_default():
        b = fw.Variable(2.0, "b")
    with pytest.raises(ValueError, match="add: its inputs <Variable 'a'>.*<Variable 'b'>.* belong "
                                         "to different graphs"):
        a + b


def test_feeding_a_non_placeholder_is_named(graph):
    w, c = fw.Variable(1.0, "w"), fw.Constant(2.0, "c")
    y = w * c
    with pytest.raises(TypeError, match=r"cannot feed <Variable 'w'>: only Placeholders are fed "
                                        r"\(change a Variable with .assign\)"):
        fw.Session().run(y, {w: 5.0})
    with pytest.raises(TypeError, match="cannot feed <Constant 'c'>: only Placeholders are fed"):
        fw.Session().run(y, {c: 5.0})
    with pytest.raises(TypeError, match="cannot feed <Operation 'multiply'>"):
        fw.Session().run(y, {y: 5.0})


def test_constant_reassignment_is_named(graph):
    c = fw.Constant(2.0, "c")
    with pytest.raises(TypeError, match="Constant 'c' cannot be reassigned"):
        c.assign(3.0)
    assert fw.Session().run(c) == 2.0


def test_variable_assignment_of_the_wrong_shape_is_named(graph):
    w = fw.Variable(np.zeros(3), "w")
    with pytest.raises(ValueError, match=r"Variable 'w' has shape \(3,\); cannot assign a value of "
                                         r"shape \(4,\)"):
        w.assign(np.zeros(4))


def test_minimize_without_a_variable_is_named(graph):
    x, c = fw.Placeholder((), "x"), fw.Constant(1.0, "c")
    with pytest.raises(ValueError, match="minimize: <Operation 'multiply'> depends on no Variable"):
        fw.GradientDescentOptimizer(0.1).minimize(x * c)


def test_fetching_something_that_is_not_a_node_is_named(graph):
    with pytest.raises(TypeError, match=r"cannot fetch 3\.0: fetches must be graph nodes"):
        fw.Session().run([fw.Variable(1.0, "w"), 3.0])


# --- phase two: the optimised graph and devices (slide 35) ---------------------------------------

def _plan(fetches):
    return fw.prune(fw.optimize(fetches))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(programs(), st.integers(0, 2**32 - 1))
def test_optimize_keeps_every_value_and_leaves_nothing_to_fold_or_merge(program, kinds):
    with fw.Graph().as_default() as graph:
        inputs = {name: (fw.Constant if kinds >> k & 1 else fw.Variable)(value, name)
                  for k, (name, value) in enumerate(program[0])}
        loss = loss_of(program, inputs)
        again = loss_of(program, inputs)        # the same program built twice: all repeats
        variables = [node for node in inputs.values() if isinstance(node, fw.Variable)]
        fetches = [loss, again] + fw.gradients(loss + again, variables)
    plain = fw.Session(graph).run(fetches)
    optimised = fw.Session(graph, optimize=True).run(fetches)
    for got, want in zip(optimised, plain):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=listing(program))

    plan = _plan(fetches)
    operations = [node for node in plan if node.fun is not None]
    assert not any(all(isinstance(p, fw.Constant) for p in node.parents) for node in operations)
    assert len({fw.signature(node) for node in operations}) == len(operations)
    assert len(plan) < len(fw.prune(fetches))
    assert ({n for n in plan if n.fun is None and not isinstance(n, fw.Constant)}
            <= set(inputs.values()))


def test_folding_turns_constant_arithmetic_into_one_constant(graph):
    scale = mini.exp(fw.Constant(2.0, "c")) * 3.0
    x = fw.Placeholder((None,), "x")
    (y,) = fw.fold_constants([scale * x])
    assert [type(p) for p in y.parents] == [fw.Constant, fw.Placeholder]
    assert y.parents[0].value == pytest.approx(3 * np.exp(2.0), rel=1e-15)
    assert fw.Session().run(y, {x: np.ones(2)}) == pytest.approx([3 * np.exp(2.0)] * 2)


def test_merging_keeps_one_of_each_repeat_but_not_different_numbers_or_axes(graph):
    x = fw.Placeholder((2, 3), "x")
    a, b = mini.tanh(x) * 2.0, mini.tanh(x) * 2.0
    c, d = mini.tanh(x) * 3.0, mini.sum(mini.tanh(x), axis=0) + mini.sum(mini.tanh(x), axis=1)[0]
    e, f = x - mini.tanh(x), 2.0 * mini.tanh(x)           # subtract does not commute, multiply does
    ends = fw.eliminate_common_subexpressions([a, b, c, d, e, f, mini.tanh(x) - x])
    assert ends[0] is ends[1] is ends[5] and ends[2] is not ends[0] and ends[4] is not ends[6]
    tanhs = [n for n in fw.prune(ends) if getattr(n.fun, "__name__", "") == "tanh"]
    assert len(tanhs) == 1
    feed = {x: np.arange(6.0).reshape(2, 3)}
    for got, want in zip(fw.Session().run(ends, feed),
                         fw.Session().run([a, b, c, d, e, f, mini.tanh(x) - x], feed)):
        np.testing.assert_array_equal(got, want)


def test_two_update_nodes_stay_two_and_the_optimised_session_trains_alike():
    runs = []
    for optimised in (False, True):
        with fw.Graph().as_default() as g:
            x, w = fw.Placeholder((None,), "x"), fw.Variable(1.0, "w")
            loss = mini.mean((w * x - 1.0) * (w * x - 1.0))
            steps = [fw.GradientDescentOptimizer(0.1).minimize(loss) for _ in range(2)]
        session = fw.Session(g, optimize=optimised)
        for _ in range(3):
            session.run(steps, {x: np.array([1.0, 2.0])})
        runs.append(w.value)
        assert sum(n.fun.__name__ == "GradientDescent" for n in _plan(steps) if n.fun) == 2
    assert runs[0] == runs[1] != 1.0


class _Recording(mini.backend.NumpyBackend):
    """A backend that writes down every operation it is asked for."""

    calls = []

    def __init__(self):
        for op in ("matmul", "add", "multiply", "exp", "tanh", "sum"):
            setattr(self, op, self._recorded(op, getattr(np, op)))

    def _recorded(self, op, fun):
        def call(*args, **kwargs):
            self.calls.append((self.name, op))
            return fun(*args, **kwargs)
        return call


@pytest.fixture
def recording_devices():
    """Two backends, "left" and "right", that record which operations ran on them."""
    _Recording.calls = []
    for name in ("left", "right"):
        mini.backend.register(name, type(name, (_Recording,), {"name": name}))
    yield _Recording.calls
    for name in ("left", "right"):
        mini.backend.unregister(name)


def test_each_operation_runs_on_the_backend_of_its_device(graph, recording_devices):
    x, W = fw.Placeholder((None, 2), "x"), fw.Variable(np.eye(2), "W")
    with fw.device("left"):
        h = x @ W
    with fw.device("right"):
        y = mini.tanh(h) + 1.0
    value = fw.Session().run(y, {x: np.ones((3, 2))})
    np.testing.assert_allclose(value, np.tanh(np.ones((3, 2))) + 1.0)
    assert recording_devices == [("left", "matmul"), ("right", "tanh"), ("right", "add")]
    assert mini.get_backend() == "numpy"


def test_place_sets_devices_by_primitive_and_counts_them(graph, recording_devices):
    x, W = fw.Placeholder((None, 2), "x"), fw.Variable(np.eye(2), "W")
    loss = mini.sum(mini.tanh(x @ W))
    (grad_W,) = fw.gradients(loss, [W])
    counts = fw.place([loss, grad_W], {"matmul": "left"}, "right")
    operations = [n for n in fw.prune([loss, grad_W]) if n.fun is not None]
    assert counts == {"left": 1, "right": len(operations) - 1}
    fw.Session().run([loss, grad_W], {x: np.ones((3, 2))})
    assert recording_devices[0] == ("left", "matmul")
    assert [device for device, _ in recording_devices[1:]] == ["right"] * 4
    with pytest.raises(ValueError, match="'gpu0'"):
        fw.place(loss, {"matmul": "gpu0"})
    with pytest.raises(ValueError, match="'tpu'.*cuda"):
        with fw.device("tpu"):
            pass


def test_folding_leaves_variables_to_be_read_when_the_graph_runs(graph):
    w, x = fw.Variable(0.0, "w"), fw.Placeholder((), "x")
    y = mini.exp(w) * x + mini.exp(fw.Constant(0.0, "c"))
    session = fw.Session(optimize=True)
    assert session.run(y, {x: 2.0}) == pytest.approx(3.0)
    w.assign(1.0)
    assert session.run(y, {x: 2.0}) == pytest.approx(2 * np.e + 1.0)
    assert sum(isinstance(n, fw.Constant) for n in _plan([y])) == 1


def test_a_stateful_operation_is_neither_folded_nor_merged(graph):
    calls = []

    def record(value):
        calls.append(value)
        return value

    side_effect = mini.primitive(record)
    side_effect.stateful = True
    c = fw.Constant(2.0, "c")
    total = side_effect(c) + side_effect(c)
    optimised = fw.optimize([total])
    assert calls == [] and len(fw.prune(optimised)) == len(fw.prune([total]))
    assert fw.Session(optimize=True).run(total) == 4.0 and calls == [2.0, 2.0]


def test_place_keeps_a_device_given_by_hand(graph):
    x = fw.Placeholder((None,), "x")
    with fw.device("numpy"):
        y = mini.exp(x)
    assert fw.place([mini.tanh(y)], {"exp": "cpu"}, "cpu") == {"numpy": 1, "cpu": 1}
    assert y.device == "numpy"


def test_equal_constants_are_merged_and_then_what_reads_them(graph):
    x = fw.Placeholder((None,), "x")
    a, b = fw.Constant(np.arange(3.0), "a"), fw.Constant(np.arange(3.0), "b")
    c = fw.Constant(np.arange(3.0).astype(np.float32), "c")           # another dtype: kept apart
    ends = fw.eliminate_common_subexpressions([x * a, x * b, x * c])
    assert ends[0] is ends[1] is not ends[2]
    assert len(fw.prune(ends)) == 5


def test_each_thread_builds_in_its_own_default_graph_and_device():
    """A ``with graph.as_default()`` or ``with device(...)`` in one thread (a grader computing
    one check while another computes the next) moves no node another thread builds."""
    import threading
    barrier, seen = threading.Barrier(2), {}

    def build(name):
        with fw.Graph().as_default() as graph, fw.device("numpy"):
            barrier.wait()                   # both threads are inside their blocks now
            node = fw.Placeholder((), name) * 2.0
            barrier.wait()
            seen[name] = (node.graph is graph, node.device, graph)

    threads = [threading.Thread(target=build, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen["a"][:2] == seen["b"][:2] == (True, "numpy") and seen["a"][2] is not seen["b"][2]
    outside = fw.Placeholder((), "outside")
    assert outside.graph is fw.get_default_graph() and outside.device is None
