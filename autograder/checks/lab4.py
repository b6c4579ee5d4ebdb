"""Hidden checks of lab4_framework: session_run, gradients, sgd_update, the classifier, the two
optimisation passes (fold_constants, eliminate_common_subexpressions) and place.

Each check draws its numbers from the seed; each half of the check then builds its OWN graph from
them in a fresh ``mini.framework.Graph``, so student code never touches the graph the expected
answer is computed on.  Expected values come from mini's reference (its ``Session``,
``gradients``, ``GradientDescentOptimizer``, ``SentimentClassifier``, ``fold_constants``,
``eliminate_common_subexpressions`` and ``place``); no expected number is written here.  A check
of one fill-in leans only on mini's versions of the others, so one mistake costs the points of
that fill-in only: graphs are built with mini's ``gradients`` and run with mini's ``Session``,
and the passes after the first get mini's ``prune`` and ``rebuilt`` in place of the student's.

What each check verifies is behaviour: values of the graphs a student's function builds or
rewrites, run by mini's Session; how many nodes a pass leaves; and, for devices, which backend
really received each operation (recording backends registered for the check, not names in code).

mini's own versions of what the student writes are switched off while the student's function
runs, and are back as soon as it returns: the lab's later cells legitimately use mini's
``Session``, ``gradients``, ``prune`` and classifier, so they cannot be disabled for the whole
notebook (which is why ``REFERENCE`` lists only what no cell of the lab calls).
"""
import contextlib
import sys
import types

import numpy as np

import mini
from autograder import guard
from autograder.checks import Case
from autograder.checks.programs import listing, random_program, run_steps
from mini import autodiff as _autodiff
from mini import backend as _backend
from mini import framework as fw
from mini import graph as _graph
from mini import nn

# mini's reference, copied before anything is switched off (see autograder.guard): the stand-ins
_fw, _nn = guard.detached("mini.framework", "mini.nn")
_Session = fw.Session
_Optimizer = fw.GradientDescentOptimizer
_Classifier = nn.SentimentClassifier
_gradients, _prune, _rebuilt, _device = _fw.gradients, _fw.prune, _fw.rebuilt, _fw.device
_fold, _cse, _signature = _fw.fold_constants, _fw.eliminate_common_subexpressions, _fw.signature
_place, _cross_entropy = _fw.place, _nn.softmax_cross_entropy

REFERENCE = ["mini.evaluate", "mini.framework.fold_constants",
             "mini.framework.eliminate_common_subexpressions", "mini.framework.signature",
             "mini.framework.place", "mini.framework.optimize"]
"""What is switched off for the whole notebook: what no cell of the lab calls.  lab 2's
``evaluate`` runs a framework graph (it ignores unfed placeholders).  ``Session``, ``gradients``,
``prune``, ``rebuilt`` and the classifier are NOT listed: the lab trains with mini's on purpose,
so that training works even when a fill-in is wrong, and the visible tests of one fill-in use
mini's versions of the others; instead each is switched off while the student's own version is
checked (:func:`_without`)."""


def _copy(value):
    return value.copy() if isinstance(value, np.ndarray) else value


# ---------------------------------------------------------------------------------------------
# mini's versions switched off while the student's function runs
# ---------------------------------------------------------------------------------------------

SESSION_REFERENCES = [(fw.Session, "run"), (_graph, "evaluate")]
GRADIENTS_REFERENCES = [(fw, "gradients"), (_autodiff, "backward_pass")]
CLASSIFIER_REFERENCES = [(nn.SentimentClassifier, "logits"), (nn.SentimentClassifier, "loss"),
                         (nn.Embedding, "__call__"), (nn.Linear, "__call__"),
                         (nn, "masked_mean"), (nn, "softmax_cross_entropy")]
FOLD_REFERENCES = [(fw, "fold_constants"), (fw, "optimize"), (fw, "prune"), (fw, "rebuilt")]
CSE_REFERENCES = [(fw, "eliminate_common_subexpressions"), (fw, "optimize"), (fw, "signature")]
PLACE_REFERENCES = [(fw, "place")]


def _without(references, fill_in):
    """Every ``(owner, attribute)`` of ``references`` raising until the block ends, however the
    notebook reaches it (an alias, a bound method, a subclass): :func:`autograder.guard.switched_off`."""
    return guard.switched_off({
        vars(owner)[name]: f"{getattr(owner, '__name__', owner)}.{name} is mini's own version of "
                           f"what {fill_in} asks you to write, so it is switched off while "
                           f"{fill_in} is checked: write it yourself"
        for owner, name in references})


def _without_reference_runners():
    return _without(SESSION_REFERENCES, "session_run")


def _reference_run(graph):
    return lambda fetches, feed_dict=None: _Session(graph).run(fetches, feed_dict)


# ---------------------------------------------------------------------------------------------
# Recording backends: which operation really ran on which device
# ---------------------------------------------------------------------------------------------

class _Recording(_backend.NumpyBackend):
    """numpy's operations, each call written down as ``(device, operation)`` in ``log``."""

    OPERATIONS = ("matmul", "add", "subtract", "multiply", "divide", "maximum", "exp", "log",
                  "tanh", "sum")

    def __init__(self, name, log):
        self.name = name
        for op in self.OPERATIONS:
            setattr(self, op, self._recorded(op, getattr(_backend.NumpyBackend, op), log))

    def _recorded(self, op, fun, log):
        def call(*args, **kwargs):
            log.append([self.name, op])
            return fun(*args, **kwargs)
        return call


@contextlib.contextmanager
def _recording_devices(names):
    """Register backends called ``names`` that record into the list this yields."""
    log = []
    module = types.ModuleType(f"lab4_devices_{'_'.join(names)}")
    for name in names:
        setattr(module, name, lambda name=name: _Recording(name, log))
    sys.modules[module.__name__] = module
    saved = dict(_backend._FACTORIES)
    _backend._FACTORIES.update({name: f"{module.__name__}:{name}" for name in names})
    try:
        yield log
    finally:
        _backend._FACTORIES.clear()
        _backend._FACTORIES.update(saved)
        sys.modules.pop(module.__name__, None)


def _device_names(rng):
    number = int(rng.integers(1000, 10000))
    return [f"device{number}a", f"device{number}b"]


# ---------------------------------------------------------------------------------------------
# session_run
# ---------------------------------------------------------------------------------------------

SESSION_HINT = ("For each fetch, walk the nodes in the order toposort(fetch) gives and keep their "
                "values in a dict {node: value}: a Placeholder's value comes from feed_dict, a "
                "Variable's or Constant's is node.value, and an Operation's is "
                "node.forward(*args), where args = list(node.args) with each parent's value put "
                "in at its position from node.parent_argnums (the other positions hold constants, "
                "like the 1.5 of 1.5 * x1), computed with the backend node.device in use when it is not "
                "None. Return one value for one node, a list for a list, a dict for a dict.")


def _session_case(what, build, runs, hint=SESSION_HINT):
    """Case: ``runs(run, nodes)`` with the student's session_run against mini's Session.

    ``build()`` makes the graph in a fresh Graph and returns ``(graph, nodes)``; ``runs`` calls
    ``run(fetches, feed_dict)`` as it likes and returns plain data.
    """
    def call(student):
        with fw.Graph().as_default():
            graph, nodes = build()
        with _without_reference_runners():
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


MOVES = {"unary": 2, "binary": 3, "square": 1, "constant": 2, "reduce": 1, "matmul": 1}
"""Broadcasting, fan-out, numbers written into operations (2.0 - v), keyword arguments
(sum(v, axis=0)) and products (with the Variable W among others)."""
KINDS = ["Placeholder", "Variable", "Constant"]


def _random_program(rng, n_steps):
    """A random program over Placeholders, Variables and Constants, the first three inputs one of
    each and ``W`` a Variable.  Returns ``(program, kinds, fetch names)``: the fetches are the end,
    two steps before it and an input."""
    m, k = (int(d) for d in rng.integers(2, 5, size=2))
    shapes = [(m, k), (k,), (m, 1), ()]
    names = [f"in{i}" for i in range(int(rng.integers(3, 5)))]
    inputs = [(name, shapes[int(rng.integers(len(shapes)))] if i else (m, k))
              for i, name in enumerate(names)]
    program = random_program(rng, inputs + [("W", (k, k))], n_steps, MOVES)
    kinds = {name: KINDS[i] if i < 3 else str(rng.choice(KINDS)) for i, name in enumerate(names)}
    kinds["W"] = "Variable"
    steps = [name for name, _, _, _, _ in program[1]]
    middle = [steps[int(i)] for i in rng.choice(len(steps) - 1, size=2, replace=False)]
    return program, kinds, [steps[-1]] + middle + [str(rng.choice(list(kinds)))]


def _framework_nodes(program, kinds):
    """``{name: node}`` of ``program`` built into the default graph, each input a node of its kind
    (a Placeholder has the shape of its value, to be fed)."""
    inputs, steps = program
    nodes = {name: fw.Placeholder(np.shape(value), name) if kinds[name] == "Placeholder"
             else getattr(fw, kinds[name])(_copy(value), name) for name, value in inputs}
    return run_steps(steps, nodes)


def _placeholder_values(program, kinds):
    """What a run feeds: {name: value} of the program's Placeholders."""
    return {name: value for name, value in program[0] if kinds[name] == "Placeholder"}


def _random_graph_check(n_steps):
    def check(rng):
        program, kinds, fetches = _random_program(rng, n_steps)
        feed_values = _placeholder_values(program, kinds)

        def build():
            return fw.get_default_graph(), _framework_nodes(program, kinds)

        def runs(run, nodes):
            feed = {nodes[name]: _copy(value) for name, value in feed_values.items()}
            return run([nodes[name] for name in fetches], feed)

        return _session_case(
            f"session_run([{', '.join(fetches)}], feed_dict) on the random graph below (the "
            f"Placeholders fed){listing(program, kinds)}\n", build, runs)
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




def session_devices_check(rng):
    names = _device_names(rng)
    m, k = (int(v) for v in rng.integers(2, 5, size=2))
    X0, W0 = rng.standard_normal((m, k)), rng.standard_normal((k, k))

    def outcome(run_of):
        with _recording_devices(names) as log, fw.Graph().as_default() as graph:
            X, W = fw.Placeholder((None, k), "X"), fw.Variable(W0, "W")
            with _device(names[0]):
                h = mini.tanh(X @ W)
            loss = mini.sum(h * h) + mini.sum(mini.exp(-h))
            grad_W, = _gradients(loss, [W])
            _place([loss, grad_W], {"multiply": names[1]})
            values = run_of(graph)([loss, grad_W], {X: _copy(X0)})
            return {"values of [loss, grad_W]": values, "(device, operation) of every backend call":
                    list(log), "backend in use after the run": _backend.get_backend()}

    def call(student):
        def run_of(graph):
            def run(*args):
                with _without_reference_runners():
                    return student.session_run(*args)
            return run
        return outcome(run_of)

    return Case(what=f"session_run([loss, grad_W]) where X @ W and tanh were built inside "
                     f"device('{names[0]}') and every multiply was placed on '{names[1]}' (two "
                     "backends that record what they compute); the rest has no device",
                call=call, expected=lambda: outcome(_reference_run), rtol=1e-9, atol=1e-12,
                hint="compute an Operation whose node.device is not None inside "
                     "`with mini.use_backend(node.device):`, and one whose device is None with "
                     "whatever backend is in use, leaving it in use afterwards. " + SESSION_HINT)


def session_dict_and_wrong_feed_check(rng):
    n = int(rng.integers(2, 6))
    x0, w0 = rng.standard_normal(n), rng.standard_normal(n)
    key = f"loss_{int(rng.integers(100, 1000))}"

    def build():
        x, w = fw.Placeholder((None,), "x"), fw.Variable(w0, "w")
        y = mini.tanh(w * x)
        return fw.get_default_graph(), dict(x=x, w=w, y=y, loss=mini.sum(y * y))

    def runs(run, nd):
        feed = {nd["x"]: _copy(x0)}
        result = {"session_run({key: loss, 'y': y}, feed_dict)": run({key: nd["loss"],
                                                                      "y": nd["y"]}, feed)}
        try:
            run(nd["loss"], {nd["x"]: _copy(x0), nd["w"]: _copy(w0)})
            result["feeding the Variable w"] = "returned without raising"
        except TypeError as error:
            result["feeding the Variable w"] = ("raised TypeError naming it" if "w" in str(error)
                                                else "raised TypeError without naming it")
        except Exception as error:
            result["feeding the Variable w"] = f"raised {type(error).__name__}"
        return result

    return _session_case(
        f"session_run with a dict of fetches {{'{key}': loss, 'y': y}} for y = tanh(w * x), loss "
        "= sum(y^2), then with a feed_dict that also feeds the Variable w", build, runs,
        hint="a dict of fetches gives a dict with the same keys; a key of feed_dict that is not a "
             "Placeholder raises TypeError naming that node (repr(node) names it). "
             + SESSION_HINT)


# ---------------------------------------------------------------------------------------------
# gradients: the backward graph, run by mini's Session
# ---------------------------------------------------------------------------------------------

GRADIENTS_HINT = ("Build nodes, compute nothing: seed {loss: mini.ones_like(loss)}, visit "
                  "reversed(toposort(loss)), and for each parent of a node add "
                  "mini.vjp_of(node.fun, argnum)(g, node, *node.args, **node.kwargs) to what that "
                  "parent already has (+ on nodes builds an add node). A variable with no "
                  "contribution gets mini.zeros_like(variable).")


def _gradients_case(what, build, feed_values, hint=GRADIENTS_HINT):
    """Case: the nodes of the student's ``gradients(loss, wrt)`` run by mini's Session, against
    mini's ``gradients``.  ``build()`` returns ``(nodes, loss, wrt names)``."""
    def outcome(gradients_of):
        with fw.Graph().as_default() as graph:
            nodes, loss, wrt = build()
            built = gradients_of(loss, [nodes[name] for name in wrt])
            untouched = all(node.value is None for node in _prune([loss]) if node.fun is not None)
        if not isinstance(built, (list, tuple)) or len(built) != len(wrt):
            return {"gradients(...) returns": f"{type(built).__name__} of "
                                              f"{len(built) if hasattr(built, '__len__') else 1}"}
        values = _Session(graph).run(list(built), {nodes[name]: _copy(value)
                                                   for name, value in feed_values.items()})
        return {"the forward graph is left uncomputed": untouched,
                **{f"gradient with respect to {name}": value for name, value in zip(wrt, values)}}

    def call(student):
        def student_gradients(loss, variables):
            with _without(GRADIENTS_REFERENCES, "gradients"):
                return student.gradients(loss, variables)
        return outcome(student_gradients)

    return Case(what=what, call=call, expected=lambda: outcome(_gradients), rtol=1e-8,
                atol=1e-10, hint=hint)


def gradients_running_example_check(rng):
    x1, x2 = (float(v) for v in rng.uniform(-1.0, 1.0, size=2))

    def build():
        p1, p2 = fw.Placeholder((), "x1"), fw.Placeholder((), "x2")
        return {"x1": p1, "x2": p2}, p1 + mini.exp(1.5 * p1 + 2.0 * p2), ["x1", "x2"]

    return _gradients_case(f"gradients(x7, [x1, x2]) for the running example at x1 = {x1:.4g}, "
                           f"x2 = {x2:.4g} (x1 is read twice: its contributions add up)", build,
                           {"x1": x1, "x2": x2})


def _random_gradients_check(n_steps):
    def check(rng):
        program, kinds, fetches = _random_program(rng, n_steps)

        def build():
            nodes = _framework_nodes(program, kinds)
            end, middle = nodes[fetches[0]], nodes[fetches[1]]
            loss = mini.sum(end) + 0.5 * mini.sum(middle * middle)
            return nodes, loss, list(kinds)

        return _gradients_case(
            f"gradients(loss, [every input]) for loss = sum({fetches[0]}) + 0.5 * "
            f"sum({fetches[1]}^2) on the random graph below (broadcasting, fan-out, numbers "
            f"written into operations, keyword arguments){listing(program, kinds)}\n", build,
            _placeholder_values(program, kinds))
    check.__name__ = f"gradients_random_graph_{n_steps}_check"
    return check


def gradients_unreached_check(rng):
    n = int(rng.integers(2, 6))
    x0, w0 = rng.standard_normal(n), rng.standard_normal(n)
    shape = tuple(int(v) for v in rng.integers(1, 4, size=2))
    u0 = rng.standard_normal(shape)

    def build():
        x, w = fw.Placeholder((None,), "x"), fw.Variable(w0, "w")
        unused = fw.Variable(u0, "unused")
        return {"x": x, "w": w, "unused": unused}, mini.mean(mini.tanh(w * x)), ["unused", "w"]

    return _gradients_case(
        f"gradients(loss, [unused, w]) for loss = mean(tanh(w * x)), x of shape ({n},) fed, and a "
        f"Variable 'unused' of shape {shape} that the loss does not read", build, {"x": x0},
        hint="a variable that no contribution reaches gets zeros shaped like it, as a node "
             "(mini.zeros_like(variable)). " + GRADIENTS_HINT)


def gradients_classifier_check(rng):
    vocab, length, batch = int(rng.integers(6, 12)), int(rng.integers(3, 6)), int(rng.integers(2, 5))
    model = _Classifier(vocab, embed_dim=3, hidden_dim=4)
    params = model.init(rng)
    ids0 = rng.integers(0, vocab, size=(batch, length))
    mask0 = (np.arange(length) < rng.integers(1, length + 1, size=(batch, 1))).astype(float)
    labels0 = rng.integers(0, 2, size=batch)
    names = sorted(params)

    def build():
        nodes = {name: fw.Variable(value, name) for name, value in params.items()}
        nodes["ids"] = fw.Placeholder((None, None), "ids", dtype=np.int64)
        nodes["mask"] = fw.Placeholder((None, None), "mask")
        nodes["labels"] = fw.Placeholder((None,), "labels", dtype=np.int64)
        loss = model.loss(nodes, nodes["ids"], nodes["mask"], nodes["labels"])
        return nodes, loss, names

    return _gradients_case(
        f"gradients(loss, [its {len(names)} Variables]) for the sentiment classifier's loss "
        f"(vocabulary {vocab}, embedding 3, hidden 4) on a batch of {batch} sentences of "
        f"{length} positions", build, {"ids": ids0, "mask": mask0, "labels": labels0})


# ---------------------------------------------------------------------------------------------
# classifier_logits and classifier_loss, run by mini's Session
# ---------------------------------------------------------------------------------------------

CLASSIFIER_HINT = ("classifier_logits: take the rows of params['embedding'] at ids, then "
                   "x @ W + b with 'hidden', relu, x @ W + b with 'output', then average each "
                   "sentence's word scores with the mask as weights (mask[:, :, None]), divided "
                   "by its number of real words. classifier_loss: -mean over the batch of "
                   "sum(one_hot_like(labels, logits) * log_softmax(logits, axis=-1), axis=-1).")


def _batch(rng, vocab, batch, length):
    ids = rng.integers(0, vocab, size=(batch, length))
    mask = (np.arange(length) < rng.integers(1, length + 1, size=(batch, 1))).astype(float)
    return ids, mask, rng.integers(0, 2, size=batch)


def _classifier_case(what, rng, runs, scale=1.0, hint=CLASSIFIER_HINT):
    """Case: ``runs(logits_of, loss_of, nodes, session)`` with the student's classifier (framework
    graph of Variables and Placeholders) against mini's ``SentimentClassifier``."""
    vocab, embed, hidden = (int(v) for v in rng.integers(3, 9, size=3))
    model = _Classifier(vocab, embed_dim=embed, hidden_dim=hidden)
    params = {name: scale * value for name, value in model.init(rng).items()}
    batches = [_batch(rng, vocab, int(rng.integers(2, 6)), int(rng.integers(2, 7)))
               for _ in range(3)]

    def outcome(logits_of, loss_of):
        with fw.Graph().as_default() as graph:
            nodes = {name: fw.Variable(value, name) for name, value in params.items()}
            nodes["ids"] = fw.Placeholder((None, None), "ids", dtype=np.int64)
            nodes["mask"] = fw.Placeholder((None, None), "mask")
            nodes["labels"] = fw.Placeholder((None,), "labels", dtype=np.int64)
            return runs(logits_of, loss_of, nodes, _Session(graph), params, batches)

    def call(student):
        def logits_of(*args):
            with _without(CLASSIFIER_REFERENCES, "classifier_logits"):
                return student.classifier_logits(*args)

        def loss_of(*args):
            with _without(CLASSIFIER_REFERENCES, "classifier_loss"):
                return student.classifier_loss(*args)
        return outcome(logits_of, loss_of)

    return Case(what=f"{what} (vocabulary {vocab}, embedding {embed}, hidden {hidden})", call=call,
                expected=lambda: outcome(lambda p, i, m: model.logits(p, i, m), _cross_entropy),
                rtol=1e-8, atol=1e-10, hint=hint)


def _feed(nodes, batch):
    ids, mask, labels = batch
    return {nodes["ids"]: ids, nodes["mask"]: mask, nodes["labels"]: labels}


def classifier_logits_check(rng):
    def runs(logits_of, loss_of, nodes, session, params, batches):
        logits = logits_of(nodes, nodes["ids"], nodes["mask"])
        graph_values = [session.run(logits, _feed(nodes, batch)) for batch in batches]
        eager = logits_of(params, batches[0][0], batches[0][1])
        return {"logits of each batch (framework graph)": graph_values,
                "logits of the first batch (arrays)": np.asarray(eager, dtype=float)}

    return _classifier_case("classifier_logits on three random batches, as a graph of Variables "
                            "and Placeholders run by mini's Session and on plain arrays (padding "
                            "positions hold word ids too, which must not count)", rng, runs)


def classifier_loss_check(rng):
    def runs(logits_of, loss_of, nodes, session, params, batches):
        logits = fw.Placeholder((None, None), "logits")
        loss = loss_of(logits, nodes["labels"])
        grad, = _gradients(loss, [logits])
        result = {}
        for i, (z, labels) in enumerate(large):
            result[f"loss and its gradient, batch {i + 1}"] = session.run(
                [loss, grad], {logits: z, nodes["labels"]: labels})
        return result

    large = [(30.0 * rng.standard_normal((n, 2)), rng.integers(0, 2, size=n)) for n in (2, 3, 5)]
    return _classifier_case("classifier_loss(logits, labels) and its gradient for logits fed as "
                            "a Placeholder, with entries up to about 100 (softmax must not "
                            "overflow)", rng, runs,
                            hint="use mini.log_softmax (it subtracts the row maximum) and "
                                 "nn.one_hot_like(labels, logits); average over the batch. "
                                 + CLASSIFIER_HINT)


def classifier_training_check(rng):
    lr = float(rng.choice([0.1, 0.3, 0.5]))

    def runs(logits_of, loss_of, nodes, session, params, batches):
        loss = loss_of(logits_of(nodes, nodes["ids"], nodes["mask"]), nodes["labels"])
        train = _Optimizer(lr).minimize(loss, [nodes[name] for name in sorted(params)])
        losses = [session.run([loss, train], _feed(nodes, batch))[0] for batch in batches * 2]
        return {"loss of each step": losses,
                **{f"{name} after training": nodes[name].value for name in sorted(params)}}

    return _classifier_case(f"six training steps of GradientDescentOptimizer({lr}) on "
                            "classifier_loss(classifier_logits(...), labels), built and run with "
                            "mini's framework", rng, runs, scale=2.0)


def classifier_training_step_check(rng):
    vocab = int(rng.integers(5, 10))
    params = _Classifier(vocab, embed_dim=3, hidden_dim=4).init(rng)
    batches = [_batch(rng, vocab, int(rng.integers(2, 5)), int(rng.integers(2, 6)))
               for _ in range(3)]
    lr = float(rng.choice([0.1, 0.3]))

    def reference_step(initial, learning_rate):
        graph = fw.Graph()
        with graph.as_default():
            variables = {name: fw.Variable(value, name) for name, value in initial.items()}
            nodes = {"ids": fw.Placeholder((None, None), "ids", dtype=np.int64),
                     "mask": fw.Placeholder((None, None), "mask"),
                     "labels": fw.Placeholder((None,), "labels", dtype=np.int64)}
            logits = _Classifier(vocab, 3, 4).logits(variables, nodes["ids"], nodes["mask"])
            loss = _cross_entropy(logits, nodes["labels"])
            train = _Optimizer(learning_rate).minimize(loss, list(variables.values()))
        return {"graph": graph, "params": variables, **nodes, "logits": logits, "loss": loss,
                "train_op": train}

    def outcome(build):
        initial = {name: value.copy() for name, value in params.items()}
        built = build(initial, lr)
        keys = ["graph", "params", "ids", "mask", "labels", "logits", "loss", "train_op"]
        if not isinstance(built, dict) or not set(keys) <= set(built):
            return {"build_training_step returns": "not a dict with the keys " + ", ".join(keys)}
        session, losses = _Session(built["graph"]), []
        for ids, mask, labels in batches:
            feed = {built["ids"]: ids, built["mask"]: mask, built["labels"]: labels}
            losses.append(session.run([built["loss"], built["train_op"]], feed)[0])
        return {"loss of each step": losses,
                "logits after training": session.run(built["logits"], {
                    built["ids"]: batches[0][0], built["mask"]: batches[0][1]}),
                "initial_params left as they were": all(np.array_equal(initial[n], params[n])
                                                        for n in params)}

    def call(student):
        def build(*args):
            with _without(CLASSIFIER_REFERENCES, "build_training_step"):
                return student.build_training_step(*args)
        return outcome(build)

    return Case(what=f"three steps of the graph build_training_step(initial_params, {lr}) builds, "
                     f"for a classifier with vocabulary {vocab}, embedding 3, hidden 4, run by "
                     "mini's Session", call=call, expected=lambda: outcome(reference_step),
                rtol=1e-8, atol=1e-10,
                hint="in a new Graph: one Variable per parameter, Placeholders ids (int64), mask "
                     "and labels (int64), your classifier_logits and classifier_loss on them, and "
                     "GradientDescentOptimizer(learning_rate).minimize(loss, all the Variables). "
                     + CLASSIFIER_HINT)


# ---------------------------------------------------------------------------------------------
# The optimisation passes: fold_constants (with prune and rebuilt), then
# eliminate_common_subexpressions (with signature), run by mini's Session
# ---------------------------------------------------------------------------------------------

PASS_HINT = ("Walk prune(fetches) in order with a dict {node: stand-in}; a node's stand-in is "
             "rebuilt(node, [stand-ins of its parents]) unless the pass replaces it; return "
             "[stand-in of each fetch]. Never change a node in place.")


def _random_constant_program(rng, n_steps):
    """A random program whose inputs are mostly Constants (some Placeholders and Variables), so
    that much of it folds; Variables are given new values before the second run."""
    program, _, fetches = _random_program(rng, n_steps)
    kinds = {name: str(rng.choice(["Constant", "Constant", "Placeholder", "Variable"]))
             for name, _ in program[0]}
    return program, kinds, fetches


def _pass_case(what, rng, n_steps, pass_name, twice, hint):
    """Case: the student's pass on a random program (built twice into one graph if ``twice``):
    values of its result in two runs (Variables reassigned between), and its node count."""
    program, kinds, fetches = _random_constant_program(rng, n_steps)
    feeds = [{name: rng.standard_normal(np.shape(value)) for name, value in program[0]
              if kinds[name] == "Placeholder"} for _ in range(2)]
    new_values = {name: rng.standard_normal(np.shape(value)) for name, value in program[0]
                  if kinds[name] == "Variable"}

    def outcome(run_pass):
        with fw.Graph().as_default() as graph:
            nodes = _framework_nodes(program, kinds)
            ends = [nodes[name] for name in fetches]
            if twice:
                again = _built_again(nodes, program)
                ends += [again[name] for name in fetches[:2]]
            before = len(_prune(ends))
            result = run_pass(ends)
        if not isinstance(result, list) or len(result) != len(ends):
            return {"the pass returns": f"{type(result).__name__}, not a list of {len(ends)} nodes"}
        values = []
        for run, feed in enumerate(feeds):
            if run:
                for name, value in new_values.items():
                    nodes[name].assign(value)
            values.append(_Session(graph).run(result, {nodes[n]: _copy(v) for n, v in feed.items()}))
        return {"values of the stand-ins, first run": values[0],
                "values after the Variables were assigned new values": values[1],
                "nodes the fetches need after the pass": float(len(_prune(result))),
                "the original graph is unchanged": len(_prune(ends)) == before}

    return Case(what=f"{what}{listing(program, kinds)}\n(fetches: {', '.join(fetches)}"
                     f"{', and the first two again, built a second time' if twice else ''})",
                call=lambda student: outcome(run_student_pass(student, pass_name)),
                expected=lambda: outcome(_fold if pass_name == "fold_constants" else _cse),
                rtol=1e-9, atol=1e-12, hint=hint)


def _built_again(nodes, program):
    """The operations of a program built again on the same inputs: every one a repeat."""
    return run_steps(program[1], {name: nodes[name] for name, _ in program[0]})


def run_student_pass(student, pass_name):
    """The student's pass, with mini's own passes switched off while it runs; the second pass
    gets mini's prune and rebuilt in place of the student's (they belong to the first)."""
    def run(fetches):
        if pass_name == "fold_constants":
            with _without(FOLD_REFERENCES, pass_name):
                return student.fold_constants(fetches)
        with student.using(prune=_prune, rebuilt=_rebuilt), \
                _without(CSE_REFERENCES, pass_name):
            return student.eliminate_common_subexpressions(fetches)
    return run


def _fold_check(n_steps):
    def check(rng):
        return _pass_case("fold_constants(fetches) on the random graph below, whose inputs are "
                          "mostly Constants; its result run twice by mini's Session, the "
                          "Variables assigned new values in between", rng, n_steps,
                          "fold_constants", False,
                          "fold an Operation exactly when the stand-ins of ALL its parents are "
                          "Constants (a Variable changes when training assigns it, a Placeholder "
                          "with every feed); compute it from their values with node.forward and "
                          "put a Constant in its place. " + PASS_HINT)
    check.__name__ = f"fold_random_graph_{n_steps}_check"
    return check


def fold_prune_and_rebuilt_check(rng):
    program, kinds, fetches = _random_program(rng, 10)

    def outcome(prune_of, rebuilt_of):
        with fw.Graph().as_default() as graph:
            nodes = _framework_nodes(program, kinds)
            ends = [nodes[name] for name in fetches] + [nodes[fetches[0]]]
            order = prune_of(ends)
            placed = {id(n): i for i, n in enumerate(order)}
            valid = all(id(p) in placed and placed[id(p)] < placed[id(n)] for n in order
                        for p in n.parents)
            operation = nodes[fetches[0]]
            same = rebuilt_of(operation, list(operation.parents)) is operation
            with _device("numpy"):
                stand_ins = [mini.negative(p) for p in operation.parents]
            copy = rebuilt_of(operation, stand_ins)
            feed = {nodes[n]: _copy(v) for n, v in _placeholder_values(program, kinds).items()}
            return {"the nodes prune returns (sorted names)": sorted(n.name for n in order),
                    "each node once": len(order) == len(placed),
                    "every node after its inputs": valid,
                    "rebuilt with its own parents returns the node itself": same,
                    "the copy's value, reading negated parents": _Session(graph).run(copy, feed),
                    "the copy keeps name, device and keyword arguments": [
                        copy.name == operation.name, copy.device == operation.device,
                        copy.kwargs == operation.kwargs, copy is not operation,
                        tuple(copy.parents) == tuple(stand_ins)],
                    "the original is unchanged": _Session(graph).run(operation, feed)}

    def call(student):
        def guarded(name):
            def run(*args):
                with _without(FOLD_REFERENCES, "fold_constants"):
                    return getattr(student, name)(*args)
            return run
        return outcome(guarded("prune"), guarded("rebuilt"))

    return Case(what=f"prune(fetches) and rebuilt(node, parents) on the random graph below"
                     f"{listing(program, kinds)}\n(fetches: {', '.join(fetches)}, "
                     f"{fetches[0]} again)", call=call, expected=lambda: outcome(_prune, _rebuilt),
                rtol=1e-9, atol=1e-12,
                hint="prune: every node each fetch depends on, once, in an order where each node "
                     "comes after its inputs (toposort of each fetch, skipping nodes already "
                     "listed). rebuilt: the node itself when no parent changed; else a new "
                     "Operation(None, node.fun, args, node.kwargs, parents, node.parent_argnums, "
                     "name=node.name, graph=node.graph) whose args have the new parents at "
                     "node.parent_argnums, with node.device copied.")


def _stateful_counter():
    calls = []

    def count(value):
        calls.append(1)
        return value

    prim = mini.primitive(count)
    prim.stateful = True
    return prim, calls


def stateful_check(rng):
    value = float(rng.standard_normal())

    def outcome(run_pass, which):
        prim, calls = _stateful_counter()
        with fw.Graph().as_default() as graph:
            c = fw.Constant(value, "c")
            a, b = prim(c * 2.0), prim(c * 2.0)
            ends = run_pass([a + b])
        during = float(len(calls))
        result = _Session(graph).run(ends)
        return {f"calls of the stateful primitive while {which} ran": during,
                "its calls in one run of the result": float(len(calls)) - during,
                "the value": result}

    def check_of(which):
        def call(student):
            return outcome(run_student_pass(student, which), which)
        return Case(what=f"{which} on a + b, where a and b are two calls of a primitive marked "
                         "stateful (a side effect, like the optimizer's update) on 2 * c, c a "
                         "Constant", call=call,
                    expected=lambda: outcome(_fold if which == "fold_constants" else _cse, which),
                    hint="an Operation whose primitive has stateful = True is never folded or "
                         "merged (getattr(node.fun, 'stateful', False)): running it at "
                         "optimisation time, or once instead of twice, changes what the program "
                         "does. " + PASS_HINT)
    return check_of


def fold_stateful_check(rng):
    return stateful_check(rng)("fold_constants")


def cse_stateful_check(rng):
    return stateful_check(rng)("eliminate_common_subexpressions")


def _cse_check(n_steps):
    def check(rng):
        return _pass_case("eliminate_common_subexpressions(fetches) on the random graph below, "
                          "built twice on the same inputs so that every operation has a repeat; "
                          "its result run twice by mini's Session", rng, n_steps,
                          "eliminate_common_subexpressions", True,
                          "look up each node's signature AFTER its parents were replaced by "
                          "their stand-ins (that is how the repeat of a whole subgraph is "
                          "found, bottom-up), keep the first node of each signature and the "
                          "first Constant of each value (value_key(node.value)). " + PASS_HINT)
    check.__name__ = f"cse_random_graph_{n_steps}_check"
    return check


def signature_check(rng):
    m = int(rng.integers(2, 5))
    number = round(float(rng.uniform(0.5, 2.0)), 2)

    def pairs():
        x, y = fw.Placeholder((m, m), "x"), fw.Placeholder((m, m), "y")
        t = mini.tanh(x)
        return [
            ("tanh(x), tanh(x)", mini.tanh(x), mini.tanh(x)),
            ("tanh(x), tanh(y)", mini.tanh(x), mini.tanh(y)),
            ("tanh(x), exp(x)", mini.tanh(x), mini.exp(x)),
            (f"{number} * t, {number} * t", number * t, number * t),
            (f"{number} * t, {number + 1} * t", number * t, (number + 1) * t),
            (f"t * {number}, {number} * t", t * number, number * t),
            ("sum(t, axis=0), sum(t, axis=1)", mini.sum(t, axis=0), mini.sum(t, axis=1)),
            ("sum(t, axis=0), sum(t, axis=0)", mini.sum(t, axis=0), mini.sum(t, axis=0)),
            ("t[:, None], t[:, None]", t[:, None], t[:, None]),
            ("t[0], t[1]", t[0], t[1]),
            ("t - x, x - t", t - x, x - t),
            ("t + x, x + t", t + x, x + t),
            (f"maximum(t, {number}), maximum({number}, t)", mini.maximum(t, number),
             mini.maximum(number, t)),
        ]

    def outcome(signature_of):
        with fw.Graph().as_default():
            cases = pairs()
            x = cases[0][1].parents[0]
            a = mini.tanh(x)
            with _device("numpy"):
                b = mini.tanh(x)
        result = {f"equal signatures for {pair}": bool(signature_of(p) == signature_of(q))
                  for pair, p, q in cases}
        result["tanh(x) on no device == tanh(x) on 'numpy'"] = bool(signature_of(a) ==
                                                                     signature_of(b))
        return result

    def call(student):
        with _without(CSE_REFERENCES, "signature"):
            return outcome(student.signature)

    return Case(what=f"signature on pairs of Operations over Placeholders x, y of shape ({m}, {m}), "
                     "t = tanh(x): equal exactly when they compute the same thing",
                call=call, expected=lambda: outcome(_signature),
                hint="combine node.fun, for every position of node.args either ('node', "
                     "id(parent)) or ('value', value_key(arg)), the keyword arguments as sorted "
                     "(key, value_key(value)) pairs, and node.device, in one tuple.")


def _reference_optimize(fetches):
    folded = _fold(fetches)
    merged = _cse(folded)
    return merged, {"needed": len(_prune(fetches)), "folded": len(_prune(folded)),
                    "merged": len(_prune(merged))}


def optimize_check(rng):
    program, kinds, fetches = _random_constant_program(rng, 10)
    feed_values = _placeholder_values(program, kinds)

    def outcome(optimize_of):
        with fw.Graph().as_default() as graph:
            nodes = _framework_nodes(program, kinds)
            again = _built_again(nodes, program)
            ends = [nodes[name] for name in fetches] + [again[fetches[0]]]
            result = optimize_of(ends)
        if not (isinstance(result, tuple) and len(result) == 2):
            return {"optimize returns": f"{type(result).__name__}, not (stand-ins, counts)"}
        stand_ins, counts = result
        values = _Session(graph).run(list(stand_ins), {nodes[n]: _copy(v)
                                                       for n, v in feed_values.items()})
        return {"counts": {str(k): float(v) for k, v in dict(counts).items()},
                "values of the stand-ins": values}

    def call(student):
        def optimize_of(ends):
            with student.using(prune=_prune, rebuilt=_rebuilt, fold_constants=_fold), \
                    _without(CSE_REFERENCES, "optimize"):
                return student.optimize(ends)
        return outcome(optimize_of)

    return Case(what=f"optimize(fetches) on the random graph below, its first fetch built twice"
                     f"{listing(program, kinds)}\n(fetches: {', '.join(fetches)}, "
                     f"{fetches[0]} again)", call=call,
                expected=lambda: outcome(_reference_optimize), rtol=1e-9, atol=1e-12,
                hint="count len(prune(...)) of the fetches, of what fold_constants returns, and of "
                     "what eliminate_common_subexpressions returns for THAT; return the last "
                     "stand-ins and the dict {'needed': ..., 'folded': ..., 'merged': ...}.")


# ---------------------------------------------------------------------------------------------
# place: which backend really computes each operation
# ---------------------------------------------------------------------------------------------

def _place_case(what, rng, by_hand, hint):
    names = _device_names(rng)
    m, k = (int(v) for v in rng.integers(2, 5, size=2))
    X0, W0 = rng.standard_normal((m, k)), rng.standard_normal((k, k))
    rule = {"matmul": names[0], str(rng.choice(["tanh", "exp"])): names[0]}
    default = names[1] if rng.random() < 0.7 else None

    def outcome(place_of):
        with _recording_devices(names) as log, fw.Graph().as_default() as graph:
            X, W = fw.Placeholder((None, k), "X"), fw.Variable(W0, "W")
            h = mini.tanh(X @ W)
            if by_hand:
                with _device(names[1]):
                    h = h * 2.0 + 1.0
            loss = mini.sum(mini.exp(-h) * h)
            grad_W, = _gradients(loss, [W])
            unrelated = mini.tanh(X) + 1.0
            counts = place_of([loss, grad_W], rule, default)
            values = _Session(graph).run([loss, grad_W], {X: _copy(X0)})
            return {"place(...) returns": {str(key): float(value) for key, value in
                                           (counts.items() if isinstance(counts, dict) else [])},
                    "(device, operation) of every backend call in one run": list(log),
                    "devices of the nodes no fetch needs": [str(n.device) for n in
                                                            _prune([unrelated])],
                    "values": values}

    def call(student):
        def place_of(*args):
            with student.using(prune=_prune), _without(PLACE_REFERENCES, "place"):
                return student.place(*args)
        return outcome(place_of)

    return Case(what=f"{what}: place([loss, grad_W], {rule}, {default!r}) for loss = "
                     f"sum(exp(-h) * h), h = tanh(X @ W), then one run by mini's Session with "
                     f"two backends '{names[0]}' and '{names[1]}' that record what they compute",
                call=call, expected=lambda: outcome(_place), rtol=1e-9, atol=1e-12, hint=hint)


PLACE_HINT = ("for every node of prune(fetches) whose fun is not None: if node.device is None, "
              "set it to devices.get(node.fun.__name__, default); count every such Operation "
              "under its device (None included) in the dict you return. Leave inputs and nodes no "
              "fetch needs alone.")


def place_rule_check(rng):
    return _place_case("placement by rule", rng, False, PLACE_HINT)


def place_by_hand_check(rng):
    return _place_case("placement by rule after some operations were placed by hand (with "
                       "device(...))", rng, True,
                       "an Operation that already has a device keeps it, and is counted under "
                       "it. " + PLACE_HINT)


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
                    session_long_chain_check, session_devices_check,
                    session_dict_and_wrong_feed_check],
    "gradients": [gradients_running_example_check, _random_gradients_check(6),
                  _random_gradients_check(14), gradients_unreached_check,
                  gradients_classifier_check],
    "sgd_update": [sgd_one_step_check, sgd_several_runs_check, sgd_only_listed_check,
                   sgd_not_in_place_check, sgd_training_check],
    "classifier": [classifier_logits_check, classifier_loss_check, classifier_training_check,
                   classifier_training_step_check],
    "fold_constants": [fold_prune_and_rebuilt_check, _fold_check(8), _fold_check(16),
                       fold_stateful_check],
    "eliminate_common_subexpressions": [signature_check, _cse_check(8), _cse_check(14),
                                        cse_stateful_check, optimize_check],
    "place": [place_rule_check, place_by_hand_check],
}
