"""Hidden checks of lab4_framework: session_run, the new operations (square, softplus, mse) and
sgd_update.

Each check draws its numbers from the seed; each half of the check then builds its OWN graph from
them in a fresh ``mini.framework.Graph``, so student code never touches the graph the expected
answer is computed on.  Expected values come from mini's reference (its ``Session``,
``gradients``, ``GradientDescentOptimizer``, and ``mini.grad`` on formulas written with mini's
primitives); no expected number is written here.  A check of one fill-in leans only on mini's
versions of the others, so one mistake costs the points of that fill-in only:

* session_run runs graphs built with mini's own primitives and mini's ``gradients``;
* the new operations are run by mini's ``Session`` and differentiated by mini's ``gradients`` (and
  by ``mini.grad``, since both front ends read the same VJP table);
* the update node of sgd_update is run by mini's ``Session``, on losses made of mini's primitives.

mini's own ways of running a graph (``Session.run``, ``mini.evaluate``) are switched off while a
session_run check calls the student's code, and are back as soon as the call returns: the lab's
later cells legitimately train with mini's ``Session``, so it cannot be disabled for the whole
notebook (which is why ``REFERENCE`` lists only ``evaluate``).
"""
import contextlib

import numpy as np

import mini
from autograder.checks import Case, program_listing
from mini import framework as fw
from mini import graph as _graph
from mini import nn

# mini's reference, kept here before the worker's guard can stub anything (see autograder.guard)
_Session = fw.Session
_session_run = fw.Session.run
_gradients = fw.gradients
_Optimizer = fw.GradientDescentOptimizer
_evaluate = _graph.evaluate

REFERENCE = ["mini.graph.evaluate", "mini.evaluate"]
"""What the worker disables for the whole notebook: lab 2's ``evaluate`` runs a framework graph
(it ignores unfed placeholders), and nothing in lab 4 needs it.  ``mini.framework.Session`` is NOT
listed: the lab trains the classifier with it on purpose, so that training works even when
session_run is wrong; instead it is switched off during the session_run checks only."""


def _copy(value):
    return value.copy() if isinstance(value, np.ndarray) else value


# ---------------------------------------------------------------------------------------------
# mini's runners switched off while student code runs (session_run checks)
# ---------------------------------------------------------------------------------------------

class ReferenceDisabled(RuntimeError):
    """The submission's session_run called mini's own Session.run or evaluate."""


def _refuse(what):
    def disabled(*args, **kwargs):
        raise ReferenceDisabled(f"{what} is mini's own version of what session_run asks you to "
                                "write, so it is switched off while session_run is checked: "
                                "compute the nodes yourself, in the order toposort gives")
    return disabled


@contextlib.contextmanager
def _without_reference_runners(student):
    """Make ``Session.run`` and ``evaluate`` raise (every alias the notebook holds too)."""
    run_stub = _refuse("mini.framework.Session.run")
    evaluate_stub = _refuse("mini.evaluate")
    patched = [(fw.Session, "run", run_stub), (_graph, "evaluate", evaluate_stub),
               (mini, "evaluate", evaluate_stub)]
    saved = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in patched]
    aliases = {}
    for name, value in list(student._namespace.items()):
        function = getattr(value, "__func__", value)
        if function is _session_run:
            aliases[name] = run_stub
        elif function is _evaluate:
            aliases[name] = evaluate_stub
    for owner, name, stub in patched:
        setattr(owner, name, stub)
    try:
        with student.using(**aliases):
            yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def _reference_run(graph):
    return lambda fetches, feed_dict=None: _Session(graph).run(fetches, feed_dict)


# ---------------------------------------------------------------------------------------------
# session_run
# ---------------------------------------------------------------------------------------------

SESSION_HINT = ("For each fetch, walk the nodes in the order toposort(fetch) gives and keep their "
                "values in a dict {node: value}: a Placeholder's value comes from feed_dict, a "
                "Variable's or Constant's is node.value, and an Operation's is "
                "node.forward(*args), where args = list(node.args) with each parent's value put "
                "in at its position from node.parent_argnums (the other positions hold constants, "
                "like the 1.5 of 1.5 * x1). Return one value for one node, a list for a list.")


def _session_case(what, build, runs, hint=SESSION_HINT):
    """Case: ``runs(run, nodes)`` with the student's session_run against mini's Session.

    ``build()`` makes the graph in a fresh Graph and returns ``(graph, nodes)``; ``runs`` calls
    ``run(fetches, feed_dict)`` as it likes and returns plain data.
    """
    def call(student):
        with fw.Graph().as_default():
            graph, nodes = build()
        with _without_reference_runners(student):
            return runs(student.session_run, nodes)

    def expected():
        with fw.Graph().as_default():
            graph, nodes = build()
        return runs(_reference_run(graph), nodes)

    return Case(what=what, call=call, expected=expected, rtol=1e-9, atol=1e-12, hint=hint)


def session_running_example_check(rng):
    x1, x2 = (float(v) for v in rng.uniform(-1.0, 1.0, size=2))

    def build():
        p1, p2 = fw.Placeholder((), "x1"), fw.Placeholder((), "x2")
        x3, x4 = 1.5 * p1, 2.0 * p2
        x5 = x3 + x4
        x6 = mini.exp(x5)
        x7 = p1 + x6
        return fw.get_default_graph(), dict(x1=p1, x2=p2, x3=x3, x5=x5, x6=x6, x7=x7)

    def runs(run, n):
        feed = {n["x1"]: x1, n["x2"]: x2}
        return {"session_run([x7, x5, x3], feed_dict)": run([n["x7"], n["x5"], n["x3"]], feed),
                "session_run(x6, feed_dict)": run(n["x6"], feed)}

    return _session_case(
        f"session_run on the running example x3 = 1.5 * x1, x4 = 2.0 * x2, x5 = x3 + x4, "
        f"x6 = exp(x5), x7 = x1 + x6 with Placeholders x1 = {x1:.4g}, x2 = {x2:.4g} fed",
        build, runs)


def session_linear_check(rng):
    n = int(rng.integers(2, 7))
    a0, b0 = (float(v) for v in rng.standard_normal(2))
    xs = rng.standard_normal(n)

    def build():
        x = fw.Placeholder((None,), "x")
        a, b = fw.Variable(a0, "a"), fw.Variable(b0, "b")
        return fw.get_default_graph(), dict(x=x, a=a, b=b, y=a * x + b)

    def runs(run, n_):
        feed = {n_["x"]: _copy(xs)}
        return {"session_run(y, feed_dict)": run(n_["y"], feed),
                "session_run([y, a, b], feed_dict)": run([n_["y"], n_["a"], n_["b"]], feed)}

    return _session_case(
        f"session_run on y = a * x + b (L05 slide 36) with Variables a = {a0:.3g}, b = {b0:.3g} "
        "and "
        f"x fed an array of shape ({n},): one fetched node, then a list [y, a, b]",
        build, runs)


UNARY = ("tanh", "sigmoid", "negative", "relu", "exp")
BINARY = ("add", "subtract", "multiply", "maximum")


def _random_program(rng, n_steps):
    """A random program over Placeholders, Variables and Constants: broadcasting, fan-out,
    constants written into operations (2.0 - v) and keyword arguments (sum(v, axis=0)).

    Returns ``(inputs, steps, fetch names)``; ``inputs`` is ``[(name, kind, value)]``, a step is
    ``(name, primitive name, operand names, {position: constant}, kwargs)``.
    """
    m, k = (int(d) for d in rng.integers(2, 5, size=2))
    kinds = ["Placeholder", "Variable", "Constant"]
    shapes = [(m, k), (k,), (m, 1), ()]
    inputs = [(f"in{i}", kinds[i % 3] if i < 3 else str(rng.choice(kinds)),
               rng.standard_normal(shapes[int(rng.integers(len(shapes)))] if i else (m, k)))
              for i in range(int(rng.integers(3, 5)))]
    values = {name: value for name, _, value in inputs}
    W = ("W", "Variable", rng.standard_normal((k, k)))
    inputs.append(W)
    values["W"] = W[2]
    steps = []

    def pick():
        names = list(values)
        weights = np.arange(1, len(names) + 1, dtype=float) ** 2
        return names[int(rng.choice(len(names), p=weights / weights.sum()))]

    while len(steps) < n_steps:
        name, a = f"v{len(steps) + 1}", pick()
        kind = rng.choice(["unary", "binary", "same", "constant", "reduce", "matmul"],
                          p=[.2, .3, .1, .2, .1, .1])
        constants, kwargs = {}, {}
        if kind == "unary":
            prim, operands = str(rng.choice(UNARY)), [a]
        elif kind == "binary":
            b = pick()
            if not _broadcasts(np.shape(values[a]), np.shape(values[b])):
                continue
            prim, operands = str(rng.choice(BINARY)), [a, b]
        elif kind == "same":
            prim, operands = "multiply", [a, a]
        elif kind == "constant":
            prim, operands = str(rng.choice(["add", "subtract", "multiply"])), [a]
            constants = {int(rng.integers(2)): round(float(rng.uniform(-2, 2)), 2)}
        elif kind == "reduce":
            if np.ndim(values[a]) == 0:
                continue
            prim, operands = str(rng.choice(["sum", "mean"])), [a]
            kwargs = {"axis": int(rng.integers(np.ndim(values[a]))),
                      "keepdims": bool(rng.random() < 0.5)}
        else:
            if np.ndim(values[a]) not in (1, 2) or np.shape(values[a])[-1] != k:
                continue
            prim, operands = "matmul", [a, "W"]
        args = [values[o] for o in operands]
        for position, constant in sorted(constants.items()):
            args.insert(position, constant)
        value = getattr(mini, prim)(*args, **kwargs)
        if not np.all(np.abs(value) < 20):
            prim, operands, constants, kwargs = "tanh", [a], {}, {}
            value = np.tanh(values[a])
        values[name] = value
        steps.append((name, prim, operands, constants, kwargs))
    names = [s[0] for s in steps]
    middle = [names[int(i)] for i in rng.choice(len(names) - 1, size=2, replace=False)]
    return inputs, steps, [names[-1]] + middle + [inputs[int(rng.integers(len(inputs)))][0]]


def _broadcasts(shape_a, shape_b):
    try:
        return len(np.broadcast_shapes(shape_a, shape_b)) <= 2
    except ValueError:
        return False


def _build_program(inputs, steps):
    nodes = {}
    for name, kind, value in inputs:
        if kind == "Placeholder":
            nodes[name] = fw.Placeholder(np.shape(value), name)
        else:
            nodes[name] = getattr(fw, kind)(_copy(value), name)
    for name, prim, operands, constants, kwargs in steps:
        args = [nodes[o] for o in operands]
        for position, constant in sorted(constants.items()):
            args.insert(position, constant)
        nodes[name] = getattr(mini, prim)(*args, **kwargs)
    return nodes


def _listing(inputs, steps):
    return program_listing([f"{name} = {kind} of shape {np.shape(value)}"
                            for name, kind, value in inputs], steps)


def _random_graph_check(n_steps):
    def check(rng):
        inputs, steps, fetches = _random_program(rng, n_steps)
        feed_values = {name: value for name, kind, value in inputs if kind == "Placeholder"}

        def build():
            return fw.get_default_graph(), _build_program(inputs, steps)

        def runs(run, nodes):
            feed = {nodes[name]: _copy(value) for name, value in feed_values.items()}
            return run([nodes[name] for name in fetches], feed)

        return _session_case(
            f"session_run([{', '.join(fetches)}], feed_dict) on the random graph below (the "
            f"Placeholders fed){_listing(inputs, steps)}\n", build, runs)
    check.__name__ = f"session_random_graph_{n_steps}_check"
    return check


def session_backward_graph_check(rng):
    m, d, h = (int(v) for v in rng.integers(2, 5, size=3))
    X0, c0 = rng.standard_normal((m, d)), rng.standard_normal(h)
    W0, b0 = 0.7 * rng.standard_normal((d, h)), rng.standard_normal(h)

    def build():
        X = fw.Placeholder((None, d), "X")
        W, b, c = fw.Variable(W0, "W"), fw.Variable(b0, "b"), fw.Constant(_copy(c0), "c")
        loss = mini.mean(mini.tanh(X @ W + b) * c)
        grad_W, grad_b = _gradients(loss, [W, b])
        return fw.get_default_graph(), dict(X=X, loss=loss, grad_W=grad_W, grad_b=grad_b)

    def runs(run, n):
        return run([n["loss"], n["grad_W"], n["grad_b"]], {n["X"]: _copy(X0)})

    return _session_case(
        f"session_run([loss, grad_W, grad_b], feed_dict) for loss = mean(tanh(X @ W + b) * c), "
        f"with X of shape {X0.shape} fed and grad_W, grad_b = gradients(loss, [W, b]): the "
        "backward graph is a graph like any other (L05 slide 26)", build, runs,
        hint="gradients() builds ordinary Operation nodes (multiply, sum_to_like, broadcast_like, "
             "...), some with keyword arguments in node.kwargs, which node.forward applies for "
             "you. " + SESSION_HINT)


def _raised(action, placeholder_name):
    """What ``action()`` did, in words: the answer expected of a run with a missing feed."""
    try:
        action()
    except ValueError as error:
        if placeholder_name in str(error):
            return "raised ValueError naming the placeholder"
        return f"raised ValueError without naming the placeholder: {str(error)[:200]}"
    except Exception as error:
        return f"raised {type(error).__name__}: {str(error)[:200]}"
    return "returned without raising"


def session_feeds_check(rng):
    n = int(rng.integers(2, 6))
    name = f"labels_{int(rng.integers(100, 1000))}"
    w0, w1 = rng.standard_normal(n), rng.standard_normal(n)
    x_a, x_b, t_b = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(n)

    def build():
        x, t = fw.Placeholder((None,), "x"), fw.Placeholder((None,), name)
        w = fw.Variable(w0, "w")
        y = mini.tanh(w * x)
        error = mini.sum((y - t) * (y - t))
        return fw.get_default_graph(), dict(x=x, t=t, w=w, y=y, error=error)

    def runs(run, nd):
        result = {"session_run(y, {x: ...}) (t not fed, y does not need it)":
                  run(nd["y"], {nd["x"]: _copy(x_a)}),
                  "session_run(error, {x: ...}) (t not fed, error needs it)":
                  _raised(lambda: run(nd["error"], {nd["x"]: _copy(x_a)}), name)}
        result["session_run([y, error], {x: ..., t: ...})"] = run(
            [nd["y"], nd["error"]], {nd["x"]: _copy(x_b), nd["t"]: _copy(t_b)})
        result["session_run(error, {x: ...}) again, after a run that fed t"] = _raised(
            lambda: run(nd["error"], {nd["x"]: _copy(x_b)}), name)
        nd["w"].assign(w1)
        result["session_run(y, {x: ...}) after w.assign(...)"] = run(nd["y"], {nd["x"]: _copy(x_b)})
        return result

    return _session_case(
        f"session_run on y = tanh(w * x), error = sum((y - t)^2) with Placeholders x and "
        f"'{name}' (t) of shape ({n},): only what a fetch needs must be fed; a missing feed must "
        "raise a ValueError naming the Placeholder, also after an earlier run fed it; a Variable "
        "is read when the graph runs", build, runs,
        hint="compute only the nodes toposort(fetch) returns; for a Placeholder missing from "
             "feed_dict raise ValueError(f\"... '{node.name}' ...\"). Keep values in a dict that "
             "lives for one call: never store them on the nodes, or an old feed is reused. Read a "
             "Variable's node.value when the run reaches it.")


def session_once_check(rng):
    n = int(rng.integers(2, 6))
    x0 = rng.standard_normal(n)

    def build():
        calls = {"shared": 0, "unneeded": 0}

        def counting(label):
            def fun(v):
                calls[label] += 1
                return 2.0 * v
            return mini.primitive(fun)

        x = fw.Variable(x0, "x")
        shared = counting("shared")(x)
        a, b = mini.tanh(shared), shared * shared
        unneeded = counting("unneeded")(x)
        return fw.get_default_graph(), dict(a=a, b=b, total=a + b, calls=calls,
                                            unneeded=unneeded)

    def runs(run, nd):
        values = run([nd["a"], nd["b"], nd["total"]])
        return {"values of [a, b, a + b]": values,
                "times the shared node was computed": float(nd["calls"]["shared"]),
                "times a node no fetch needs was computed": float(nd["calls"]["unneeded"])}

    return _session_case(
        f"session_run([a, b, a + b]) where a = tanh(s), b = s * s share the node s = 2 * x (x a "
        f"Variable of shape ({n},)), and another node reading x is not fetched", build, runs,
        hint="every node is computed at most once per call, even when several fetches need it "
             "(an optimizer's update node computed twice would take two steps): skip nodes that "
             "already have a value in your dict. Nodes no fetch depends on are not computed.")


def session_drives_training_check(rng):
    n, steps = int(rng.integers(4, 9)), int(rng.integers(3, 6))
    lr = float(rng.choice([0.05, 0.1, 0.2]))
    batches = [(rng.standard_normal(n), rng.standard_normal(n)) for _ in range(steps)]
    a0, b0 = (float(v) for v in rng.standard_normal(2))

    def build():
        x, t = fw.Placeholder((None,), "x"), fw.Placeholder((None,), "t")
        a, b = fw.Variable(a0, "a"), fw.Variable(b0, "b")
        loss = mini.mean((a * x + b - t) * (a * x + b - t))
        train = _Optimizer(lr).minimize(loss, [a, b])
        return fw.get_default_graph(), dict(x=x, t=t, a=a, b=b, loss=loss, train=train)

    def runs(run, nd):
        losses = []
        for xs, ts in batches:
            loss, _ = run([nd["loss"], nd["train"]], {nd["x"]: _copy(xs), nd["t"]: _copy(ts)})
            losses.append(loss)
        return {"loss of each run": losses, "a after the runs": nd["a"].value,
                "b after the runs": nd["b"].value}

    return _session_case(
        f"{steps} runs of session_run([loss, train_op], feed_dict) with loss = "
        f"mean((a x + b - t)^2), train_op = GradientDescentOptimizer({lr}).minimize(loss), "
        f"x and t of shape ({n},) fed new values each run", build, runs,
        hint="the update node's forward assigns new values to a and b and returns None: store "
             "None as its value like any other. Read each Variable's node.value when a run "
             "reaches it, so the next run sees the updated parameters. " + SESSION_HINT)


def session_long_chain_check(rng):
    length = 1500
    cs = np.exp(0.02 * rng.standard_normal(length))
    ds = rng.standard_normal(length)
    x0 = float(rng.standard_normal())

    def build():
        x = fw.Placeholder((), "x")
        v, middle = x, None
        for i in range(length):
            v = v * float(cs[i]) + float(ds[i])
            if i == length // 2:
                middle = v
        return fw.get_default_graph(), dict(x=x, end=v, middle=middle)

    def runs(run, nd):
        return run([nd["end"], nd["middle"]], {nd["x"]: x0})

    return _session_case(
        f"session_run([v{length}, v{length // 2 + 1}], {{x: {x0:.3g}}}) on a chain of "
        f"{2 * length + 1} nodes, v_i = c_i * v_(i-1) + d_i with v_0 = x", build, runs,
        hint="a function that calls itself once per node stops at Python's recursion limit "
             "(about 1000 deep): loop over the list toposort(fetch) returns instead. "
             + SESSION_HINT)


# ---------------------------------------------------------------------------------------------
# The new operations: square, softplus, mse (checked in the framework and in eager mode)
# ---------------------------------------------------------------------------------------------

def _square(x):
    return x * x


def _softplus(x):
    return mini.log(1.0 + mini.exp(x))


def _mse(pred, target):
    return mini.mean((pred - target) * (pred - target))


REFERENCE_OPS = {"square": _square, "softplus": _softplus, "mse": _mse}

OPS_HINT = ("The forward function gets plain arrays and may use any numpy; the VJP "
            "vjp(g, ans, *args) must return g times the derivative, written with operations mini "
            "can trace (mini's primitives, +, -, *, /, np.exp, ...), because in the framework "
            "gradients() calls it on graph nodes to build the backward graph. Register it with "
            "mini.defvjp(op, vjp_for_arg0, vjp_for_arg1, ...).")


class _StudentOps:
    """``ops["square"]`` is the notebook's square, looked up only when a check uses it (so a
    missing mse does not fail the check of square)."""

    def __init__(self, student):
        self.student = student

    def __getitem__(self, name):
        return getattr(self.student, name)


def _ops_case(what, build, fetch_names, feed_values, hint, eager=None):
    """Case: values and gradients through the student's operations, run by mini's Session.

    ``build(ops)`` makes the graph with ``ops`` (a dict of the three operations) and returns
    ``(nodes, loss, wrt)``: gradients(loss, [nodes[name] for name in wrt]) are fetched too.
    ``eager``, if given, is ``fun(ops) -> plain result`` run outside the framework as well.
    """
    def outcome(ops):
        with fw.Graph().as_default() as graph:
            nodes, loss, wrt = build(ops)
            grads = _gradients(loss, [nodes[name] for name in wrt])
        fetched = [nodes[name] for name in fetch_names] + list(grads)
        values = _Session(graph).run(fetched, {nodes[name]: _copy(value)
                                               for name, value in feed_values.items()})
        labels = fetch_names + [f"gradient of the loss with respect to {name}" for name in wrt]
        result = dict(zip(labels, values))
        if eager is not None:
            result["eager (mini.grad)"] = eager(ops)
        return result

    def call(student):
        return outcome(_StudentOps(student))

    return Case(what=what, call=call, expected=lambda: outcome(REFERENCE_OPS), rtol=1e-7,
                atol=1e-10, hint=hint)


def _shape(rng, ndims=(1, 2)):
    return tuple(int(n) for n in rng.integers(2, 5, size=int(rng.choice(ndims))))


def square_check(rng):
    shape = _shape(rng)
    x0, c0 = rng.standard_normal(shape), rng.standard_normal(shape)

    def build(ops):
        x = fw.Placeholder((None,) * len(shape), "x")
        y = ops["square"](x)
        return {"x": x, "square(x)": y}, mini.sum(fw.Constant(_copy(c0), "c") * y), ["x"]

    return _ops_case(f"square(x) and the gradient of sum(c * square(x)) in a framework graph, x "
                     f"a Placeholder fed an array of shape {shape}", build, ["square(x)"],
                     {"x": x0}, "square(x) = x * x, so x_bar = 2 x g. " + OPS_HINT)


def softplus_check(rng):
    shape = _shape(rng)
    x0, c0 = rng.uniform(-8, 8, size=shape), rng.standard_normal(shape)

    def build(ops):
        x = fw.Placeholder((None,) * len(shape), "x")
        y = ops["softplus"](x)
        return {"x": x, "softplus(x)": y}, mini.sum(fw.Constant(_copy(c0), "c") * y), ["x"]

    return _ops_case(f"softplus(x) and the gradient of sum(c * softplus(x)) in a framework graph, "
                     f"x a Placeholder fed an array of shape {shape} with entries in [-8, 8]",
                     build, ["softplus(x)"], {"x": x0},
                     "softplus(x) = log(1 + e^x), whose derivative is e^x / (1 + e^x) = "
                     "sigmoid(x): x_bar = g * mini.sigmoid(x). " + OPS_HINT)


def softplus_eager_check(rng):
    n = int(rng.integers(2, 6))
    x0, c0 = rng.uniform(-5, 5, size=n), rng.standard_normal(n)

    def eager(ops):
        value, gradient = mini.value_and_grad(lambda x: mini.sum(c0 * ops["softplus"](x)))(
            _copy(x0))
        return {"value": value, "gradient": gradient}

    def call(student):
        return eager({"softplus": student.softplus})

    return Case(what=f"mini.value_and_grad of sum(c * softplus(x)) for x of shape ({n},), in "
                     "eager mode (no framework): the same VJP serves both front ends",
                call=call, expected=lambda: eager(REFERENCE_OPS), rtol=1e-7, atol=1e-10,
                hint="mini.grad reads the VJP you registered with mini.defvjp from the same table "
                     "as gradients() does; here it gets arrays instead of nodes. " + OPS_HINT)


def mse_check(rng):
    shape = _shape(rng)
    p0, t0 = rng.standard_normal(shape), rng.standard_normal(shape)
    k = float(rng.uniform(0.5, 3.0))

    def build(ops):
        p = fw.Placeholder((None,) * len(shape), "pred")
        t = fw.Placeholder((None,) * len(shape), "target")
        error = ops["mse"](p, t)
        return {"pred": p, "target": t, "mse(pred, target)": error}, k * error, ["pred", "target"]

    return _ops_case(
        f"mse(pred, target) and the gradients of {k:.3g} * mse(pred, target) with respect to "
        f"both arguments in a framework graph; pred and target are Placeholders of shape "
        f"{(None,) * len(shape)} fed arrays of shape {shape}", build, ["mse(pred, target)"],
        {"pred": p0, "target": t0},
        "mse = (1/n) sum (pred - target)^2 over all n entries, so pred_bar = g * 2 (pred - target) "
        "/ n and target_bar = -pred_bar. n is known only when the graph runs: in the framework "
        "pred is a node whose Placeholder shape has None in it, so use mini.axis_size(pred) (a "
        "primitive, computed at run time), not pred.size, len(pred) or np.size(pred). " + OPS_HINT)


def composite_check(rng):
    m, d = (int(v) for v in rng.integers(2, 6, size=2))
    X0, t0 = rng.standard_normal((m, d)), rng.standard_normal(m)
    w0, b0 = 0.5 * rng.standard_normal(d), float(rng.standard_normal())

    def loss_of(ops, X, w, b, t):
        return ops["mse"](ops["softplus"](X @ w) + ops["square"](b), t)

    def build(ops):
        X, t = fw.Placeholder((None, d), "X"), fw.Placeholder((None,), "t")
        w, b = fw.Variable(w0, "w"), fw.Variable(b0, "b")
        loss = loss_of(ops, X, w, b, t)
        return {"X": X, "t": t, "w": w, "b": b, "loss": loss}, loss, ["w", "b"]

    def eager(ops):
        grads = mini.grad(lambda p: loss_of(ops, X0, p["w"], p["b"], t0))({"w": _copy(w0),
                                                                         "b": b0})
        return {"gradient with respect to w": grads["w"], "gradient with respect to b": grads["b"]}

    return _ops_case(
        f"a model made of all three: loss = mse(softplus(X @ w) + square(b), t) with X of shape "
        f"({m}, {d}) and t of shape ({m},) fed, Variables w ({d},) and b (); its value and "
        "gradients in the framework, and its gradients by mini.grad", build, ["loss"],
        {"X": X0, "t": t0},
        "if the single-operation checks pass, look at how g arrives: here the VJP of square gets "
        "g from an add, the VJP of softplus from a matmul. " + OPS_HINT, eager=eager)


# ---------------------------------------------------------------------------------------------
# sgd_update: the update node, run by mini's Session
# ---------------------------------------------------------------------------------------------

SGD_HINT = ("Return ONE node: write a Python function of the gradient values that does "
            "variable.assign(variable.value - learning_rate * grad) for each pair, make it a "
            "primitive with mini.primitive, and call that primitive on the gradient nodes. "
            "Calling it on nodes builds an Operation; the Session computes the gradient nodes "
            "first (they are its inputs) and then calls your function with their values, on "
            "every run.")


def _regression_graph(X_shape, w0, b0, extra=None):
    X, t = fw.Placeholder((None, X_shape[1]), "X"), fw.Placeholder((None,), "t")
    w, b = fw.Variable(w0, "w"), fw.Variable(b0, "b")
    prediction = X @ w + b
    nodes = dict(X=X, t=t, w=w, b=b)
    if extra is not None:
        nodes["c"] = fw.Variable(extra, "c")
        prediction = prediction * nodes["c"]
    nodes["loss"] = mini.mean((prediction - t) * (prediction - t))
    return nodes


def _sgd_case(what, build, var_names, lr, runs, hint=SGD_HINT):
    """Case: the student's ``sgd_update(variables, grads, lr)`` node against mini's optimizer.

    ``build()`` returns the graph's nodes (with "loss"); ``runs(session, nodes, update)`` runs the
    update node with mini's Session and returns plain data.
    """
    def call(student):
        with fw.Graph().as_default() as graph:
            nodes = build()
            variables = [nodes[name] for name in var_names]
            update = student.sgd_update(variables, _gradients(nodes["loss"], variables), lr)
        return runs(_Session(graph), nodes, update)

    def expected():
        with fw.Graph().as_default() as graph:
            nodes = build()
            update = _Optimizer(lr).minimize(nodes["loss"], [nodes[name] for name in var_names])
        return runs(_Session(graph), nodes, update)

    return Case(what=what, call=call, expected=expected, rtol=1e-9, atol=1e-12, hint=hint)


def _regression_data(rng):
    m, d = (int(v) for v in rng.integers(3, 7, size=2))
    return m, d, rng.standard_normal((m, d)), rng.standard_normal(m)


def sgd_one_step_check(rng):
    m, d, X0, t0 = _regression_data(rng)
    w0, b0 = rng.standard_normal(d), float(rng.standard_normal())
    lr = float(rng.choice([0.05, 0.1, 0.3]))

    def runs(session, nodes, update):
        session.run(update, {nodes["X"]: _copy(X0), nodes["t"]: _copy(t0)})
        return {"w after one run": nodes["w"].value, "b after one run": nodes["b"].value}

    return _sgd_case(f"one run of update = sgd_update([w, b], gradients(loss, [w, b]), {lr}) for "
                     f"loss = mean((X @ w + b - t)^2), X of shape ({m}, {d}) fed",
                     lambda: _regression_graph((m, d), w0, b0), ["w", "b"], lr, runs)


def sgd_several_runs_check(rng):
    m, d, _, _ = _regression_data(rng)
    feeds = [(rng.standard_normal((m, d)), rng.standard_normal(m)) for _ in range(3)]
    w0, b0 = rng.standard_normal(d), float(rng.standard_normal())
    lr = float(rng.choice([0.05, 0.1, 0.2]))

    def runs(session, nodes, update):
        result = {}
        for i, (X0, t0) in enumerate(feeds, start=1):
            session.run(update, {nodes["X"]: _copy(X0), nodes["t"]: _copy(t0)})
            result[f"[w, b] after run {i}"] = [np.array(nodes["w"].value),
                                               np.array(nodes["b"].value)]
        return result

    return _sgd_case(f"three runs of the node sgd_update([w, b], gradients(loss, [w, b]), {lr}) "
                     f"for loss = mean((X @ w + b - t)^2), each run fed a new X of shape "
                     f"({m}, {d}) and t", lambda: _regression_graph((m, d), w0, b0), ["w", "b"],
                     lr, runs, hint="each run must use the gradients computed in THAT run, at the "
                     "current parameters: the update is a node, not a step taken once when the "
                     "graph is built. " + SGD_HINT)


def sgd_only_listed_check(rng):
    m, d, X0, t0 = _regression_data(rng)
    w0, b0, c0 = rng.standard_normal(d), float(rng.standard_normal()), float(rng.uniform(0.5, 2))
    lr = float(rng.choice([0.05, 0.1, 0.2]))

    def runs(session, nodes, update):
        session.run(update, {nodes["X"]: _copy(X0), nodes["t"]: _copy(t0)})
        return {name: nodes[name].value for name in ("w", "b", "c")}

    return _sgd_case(f"sgd_update([b, w], gradients(loss, [b, w]), {lr}) for loss = "
                     f"mean(((X @ w + b) * c - t)^2), which also depends on a Variable c that is "
                     "not in the list; w, b and c after one run",
                     lambda: _regression_graph((m, d), w0, b0, extra=c0), ["b", "w"], lr, runs,
                     hint="update exactly the variables you are given, each with the gradient at "
                     "the same position in grads; others keep their values. " + SGD_HINT)


def sgd_not_in_place_check(rng):
    m, d, X0, t0 = _regression_data(rng)
    w0, b0 = rng.standard_normal(d), float(rng.standard_normal())
    lr = float(rng.choice([0.05, 0.1, 0.2]))

    def runs(session, nodes, update):
        before = nodes["w"].value.copy()
        fetched_w, _ = session.run([nodes["w"], update], {nodes["X"]: _copy(X0),
                                                         nodes["t"]: _copy(t0)})
        return {"w before any run (building the node must change nothing)": before,
                "w fetched in the same run as the update (its value before the step)": fetched_w,
                "w after the run": nodes["w"].value}

    return _sgd_case(f"Session.run([w, update]) with update = sgd_update([w, b], gradients(loss, "
                     f"[w, b]), {lr}), loss = mean((X @ w + b - t)^2), w of shape ({d},)",
                     lambda: _regression_graph((m, d), w0, b0), ["w", "b"], lr, runs,
                     hint="give each Variable a NEW array with variable.assign(variable.value - "
                     "learning_rate * grad); `variable.value -= ...` changes the old array in "
                     "place, and with it every value already computed from it in this run (here "
                     "the fetched w). Building the node must not change any value. " + SGD_HINT)


def sgd_training_check(rng):
    vocab, length, batch, steps = int(rng.integers(8, 15)), 5, 6, 12
    model = nn.SentimentClassifier(vocab, embed_dim=4, hidden_dim=5)
    params = model.init(rng)
    data = []
    for _ in range(steps):
        ids = rng.integers(0, vocab, size=(batch, length))
        mask = (np.arange(length) < rng.integers(1, length + 1, size=(batch, 1))).astype(float)
        data.append((ids, mask, rng.integers(0, 2, size=batch)))
    lr = 0.5
    names = sorted(params)

    def build():
        variables = {name: fw.Variable(value, name) for name, value in params.items()}
        ids = fw.Placeholder((None, None), "ids", dtype=np.int64)
        mask, labels = fw.Placeholder((None, None), "mask"), fw.Placeholder((None,), "labels",
                                                                          dtype=np.int64)
        loss = model.loss(variables, ids, mask, labels)
        return {**variables, "ids": ids, "mask": mask, "labels": labels, "loss": loss}

    def runs(session, nodes, update):
        losses = []
        for ids, mask, labels in data:
            loss, _ = session.run([nodes["loss"], update], {nodes["ids"]: ids,
                                                            nodes["mask"]: mask,
                                                            nodes["labels"]: labels})
            losses.append(loss)
        return {"loss of each step": losses,
                **{f"{name} after training": nodes[name].value for name in names}}

    return _sgd_case(f"{steps} training steps of the sentiment classifier (vocabulary {vocab}, "
                     f"embedding 4, hidden 5) on random batches of {batch} sentences: "
                     f"Session.run([loss, update]) with update = sgd_update(its {len(names)} "
                     f"Variables, their gradients, {lr})", build, names, lr, runs)


CHECKS = {
    "session_run": [session_running_example_check, session_linear_check,
                    _random_graph_check(8), _random_graph_check(16), session_backward_graph_check,
                    session_feeds_check, session_once_check, session_drives_training_check,
                    session_long_chain_check],
    "operations": [square_check, softplus_check, softplus_eager_check, mse_check,
                   composite_check],
    "sgd_update": [sgd_one_step_check, sgd_several_runs_check, sgd_only_listed_check,
                   sgd_not_in_place_check, sgd_training_check],
}
