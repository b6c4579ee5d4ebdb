"""A TensorFlow-v1 style static graph (the deferred front end, L05 slides 35-48).

Phase one builds the program as a graph of symbolic nodes: ``Placeholder`` for data fed at run
time, ``Variable`` for parameters whose values persist between runs, ``Constant`` for fixed data,
and an ``Operation`` for every primitive applied to them (``a * x + b`` builds three nodes).  Phase
two runs it: ``Session().run(fetches, feed_dict)`` computes just the nodes the fetches need, in
topological order (``mini.graph.toposort``).

Nothing about derivatives is written here.  ``gradients(loss, variables)`` runs mini's one
``backward_pass`` (``mini.reverse``, the eager front end's too) with symbolic nodes in place of
arrays: every VJP in ``mini.primitives`` is written with primitives, so on symbolic inputs it builds
nodes instead of computing, and the result is a backward graph that the Session runs like any
other (slide 26 draws exactly this).

Phase two "executes an optimized version on the available devices" (slide 35): ``optimize`` prunes
the graph to what the fetches need, folds operations on constants into constants and merges
repeated operations (``Session(optimize=True)`` runs the result), and every Operation carries a
``device``, one of mini's backends, on which the Session computes it (``with device("cpu"):`` or
``place``).

    x = Placeholder((None,), "x")
    a, b = Variable(2.0, "a"), Variable(1.0, "b")
    y = a * x + b
    grad_a, grad_b = gradients(mini.sum(y), [a, b])
    Session().run([y, grad_a], {x: np.array([1.0, 2.0])})
"""
import contextlib
import itertools
import threading

import numpy as np

from mini import backend
from mini.answers import answer
from mini.graph import Node, reachable, toposort
from mini.numpy_tracing import TracedArray
from mini.primitives import Primitive, Traced, ones_like, zeros_like
from mini.reverse import backward_pass


class Graph:
    """A collection of nodes built together; a Session runs the nodes of one graph."""

    _ids = itertools.count(1)

    def __init__(self):
        self.id = next(self._ids)
        self._counts = {}
        self.size = 0                  # nodes built in this graph so far


    def unique_name(self, base):
        """``base``, ``base_1``, ``base_2``, ... so that messages can tell nodes apart."""
        count = self._counts.get(base, 0)
        self._counts[base] = count + 1
        return base if count == 0 else f"{base}_{count}"

    @contextlib.contextmanager
    def as_default(self):
        """Build new nodes in this graph inside a ``with`` block (in this thread)."""
        previous, _defaults.graph = _defaults.graph, self
        try:
            yield self
        finally:
            _defaults.graph = previous

    def __repr__(self):
        return f"<Graph {self.id}>"


class _Defaults(threading.local):
    """Where new nodes go and where they run, for the thread that builds them: a ``with`` block
    in one thread does not move another's nodes (TensorFlow keeps its default graph per thread
    for the same reason).  ``graph`` None is the process's graph, ``device`` None the backend
    in use when a Session runs the node."""

    graph = None
    device = None


_defaults = _Defaults()
_process_graph = Graph()


def get_default_graph():
    """The graph new nodes go into in this thread."""
    return _defaults.graph or _process_graph


class Tensor(Node, TracedArray):
    """A node of a static graph.  Its value exists only inside a Session run.

    ``device`` names the backend (``mini.backend``: "numpy", "cpu", "cuda") an Operation is
    computed on, ``None`` for whatever backend is in use when the Session runs it.
    """

    __slots__ = ("graph", "device")

    def __init__(self, value=None, fun=None, args=(), kwargs=None, parents=(), parent_argnums=(),
                 name=None, graph=None):
        self.graph = graph or get_default_graph()
        self.device = _defaults.device
        self.graph.size += 1
        super().__init__(value, fun, args, kwargs, parents, parent_argnums,
                         self.graph.unique_name(name or type(self).__name__))

    @classmethod
    @answer("lab3", "tracer")
    def apply(cls, prim, args, kwargs):
        """A primitive applied to graph nodes does not compute: it adds an Operation node."""
        parents, argnums = [], []
        for argnum, arg in enumerate(args):
            if isinstance(arg, Tensor):
                parents.append(arg)
                argnums.append(argnum)
            elif isinstance(arg, Traced):
                raise TypeError(f"{prim.__name__}: cannot mix framework nodes with a value traced "
                                f"by mini.grad ({arg!r}); use one front end at a time")
        graphs = {parent.graph for parent in parents}
        if len(graphs) > 1:
            raise ValueError(f"{prim.__name__}: its inputs "
                             f"{', '.join(f'{p!r} ({p.graph!r})' for p in parents)} belong to "
                             "different graphs; build a computation in one graph")
        return Operation(None, prim, tuple(args), kwargs, parents, argnums,
                         name=prim.__name__, graph=parents[0].graph)

    def vjp_operands(self):
        """VJPs read this node and its argument nodes, so they build the backward graph."""
        return self, self.args

    def __repr__(self):
        return f"<{type(self).__name__} '{self.name}'>"


class Placeholder(Tensor):
    """Input data, supplied in ``feed_dict`` each time the graph runs (slide 37).

    Args:
        shape: the expected shape; ``None`` in a position accepts any size there.
        name: how errors and pictures refer to it.
        dtype: the fed value is converted to this type.
    """

    __slots__ = ("shape", "dtype")

    def __init__(self, shape=None, name=None, dtype=np.float64):
        super().__init__(name=name or "Placeholder")
        self.shape = None if shape is None else tuple(shape)
        self.dtype = np.dtype(dtype)

    def check_feed(self, value):
        """Convert a fed value, or say which placeholder got which wrong shape."""
        value = np.asarray(value, dtype=self.dtype)
        if self.shape is not None and (value.ndim != len(self.shape) or any(
                want is not None and want != got for want, got in zip(self.shape, value.shape))):
            raise ValueError(f"Placeholder '{self.name}' expects shape {self.shape} but was fed "
                             f"shape {value.shape}")
        return value


class Variable(Tensor):
    """A parameter: a stateful node whose value persists across runs (slide 38)."""

    __slots__ = ()

    def __init__(self, initial_value, name=None):
        super().__init__(np.array(initial_value, dtype=np.result_type(initial_value, 1.0)),
                         name=name or "Variable")

    def assign(self, new_value):
        """Replace the value (same shape).  The old array is left untouched."""
        new_value = np.asarray(new_value, dtype=self.value.dtype)
        if new_value.shape != self.value.shape:
            raise ValueError(f"Variable '{self.name}' has shape {self.value.shape}; cannot assign "
                             f"a value of shape {new_value.shape}")
        self.value = new_value


class Constant(Tensor):
    """Fixed data (slide 39): it cannot be fed or assigned."""

    __slots__ = ()

    def __init__(self, value, name=None):
        super().__init__(np.asarray(value), name=name or "Constant")

    def assign(self, new_value):
        raise TypeError(f"Constant '{self.name}' cannot be reassigned; use a Variable for values "
                        "that change")


class Operation(Tensor):
    """A primitive applied to nodes (slide 40): forward is the primitive, backward its VJPs."""

    __slots__ = ()

    def forward(self, *values):
        """Compute this node from its inputs' values (in argument order)."""
        return self.fun.fun(*values, **self.kwargs)


class Session:
    """Runs nodes of one graph (slides 45-48), each Operation on its device (slide 35).

    With ``optimize=True`` it runs what :func:`optimize` makes of the fetches instead: the same
    values from fewer nodes.
    """

    def __init__(self, graph=None, optimize=False):
        self.graph = graph or get_default_graph()
        self.optimize = optimize
        self._plans = {}     # fetched nodes -> (nodes to compute, in order; what stands for each
        #                      fetch): a graph never changes below a node once built, so the plan
        #                      is made once per set of fetches

    @answer("lab4", "session_run")
    def run(self, fetches, feed_dict=None):
        """Compute ``fetches`` (a node, a list/tuple of nodes or a dict of them).

        Placeholders take their values from ``feed_dict``, Variables and Constants use their own,
        and each Operation applies its primitive to its inputs' values, in topological order.  Only
        the nodes the fetches depend on are computed.  Returns values in the shape of ``fetches``.
        """
        nodes = _flatten(fetches)
        for node in nodes:
            if node.graph is not self.graph:
                raise ValueError(f"cannot fetch {node!r}: it belongs to {node.graph!r}, this "
                                 f"Session runs {self.graph!r}")
        feeds = self._checked_feeds(feed_dict or {})

        key = tuple(map(id, nodes))
        if key not in self._plans:
            targets = optimize(nodes) if self.optimize else nodes
            self._plans[key] = prune(targets), targets
        order, targets = self._plans[key]
        values = {}
        for node in order:
            if isinstance(node, Placeholder):
                if node not in feeds:
                    raise ValueError(f"Placeholder '{node.name}' was not fed: pass its value in "
                                     f"feed_dict, e.g. run(..., feed_dict={{{node.name}: ...}})")
                values[node] = feeds[node]
            elif node.fun is None:
                values[node] = node.value
            else:
                args = node.arguments([values[parent] for parent in node.parents])
                with on_device(node.device):
                    values[node] = node.forward(*args)
        return _unflatten(fetches, [values[node] for node in targets])

    @answer("lab4", "session_run")
    def _checked_feeds(self, feed_dict):
        feeds = {}
        for node, value in feed_dict.items():
            if not isinstance(node, Placeholder):
                raise TypeError(f"cannot feed {node!r}: only Placeholders are fed"
                                + (" (change a Variable with .assign)" if isinstance(node, Variable)
                                   else ""))
            if node.graph is not self.graph:
                raise ValueError(f"cannot feed {node!r}: it belongs to {node.graph!r}, this "
                                 f"Session runs {self.graph!r}")
            feeds[node] = node.check_feed(value)
        return feeds


@answer("lab4", "gradients")
def gradients(loss, variables):
    """Nodes computing d(sum of loss)/d(variable) for each variable (slide 44).

    The backward graph is built by mini's ``backward_pass`` itself: seeded with ``ones_like(loss)``,
    every VJP it calls receives nodes, so it adds nodes.  A variable the loss does not depend on
    gets a zeros node.
    """
    grads = backward_pass(ones_like(loss), loss)
    return [grads[v] if v in grads else zeros_like(v) for v in variables]


@answer("lab4", "sgd_update")
def sgd_update(variables, grads, learning_rate):
    """One Operation that, each time a Session runs it, moves every variable against the value
    of its gradient node: theta <- theta - learning_rate * grad (slide 44).  Its primitive is
    marked ``stateful``, so the optimisation passes neither fold nor merge it."""
    def step(*grad_values):
        for variable, grad in zip(variables, grad_values):
            variable.assign(variable.value - learning_rate * grad)

    update = Primitive(step, name="GradientDescent")
    update.stateful = True
    return Tensor.apply(update, tuple(grads), {})


@answer("lab4", "gradient_check")
def numerical_gradients(loss, variables, feed_dict=None, h=1e-6):
    """Central differences (slide 30) of the sum of ``loss``'s entries with respect to each
    Variable, entry by entry, in float64: (L(theta + h e_k) - L(theta - h e_k)) / 2h, each L one
    Session run with ``feed_dict``.  Compare them with what :func:`gradients` builds; every
    Variable holds its own array again afterwards."""
    session, estimates = Session(loss.graph), []
    for variable in variables:
        value = variable.value
        estimate = np.zeros(value.shape)
        for index in np.ndindex(value.shape):
            step = np.zeros(value.shape)
            step[index] = h
            try:
                variable.assign(value + step)
                above = np.sum(session.run(loss, feed_dict))
                variable.assign(value - step)
                below = np.sum(session.run(loss, feed_dict))
            finally:
                variable.value = value
            estimate[index] = (above - below) / (2 * h)
        estimates.append(estimate)
    return estimates


class GradientDescentOptimizer:
    """Plain gradient descent, theta <- theta - lr * dL/dtheta (slide 44)."""

    def __init__(self, learning_rate):
        self.learning_rate = learning_rate

    @answer("lab4", "minimize")
    def minimize(self, loss, var_list=None):
        """An Operation that, each time it runs, takes one step on every Variable of ``loss``."""
        if var_list is None:
            var_list = [n for n in reachable(loss) if isinstance(n, Variable)]
        if not var_list:
            raise ValueError(f"minimize: {loss!r} depends on no Variable, so there is nothing to "
                             "train")
        return sgd_update(var_list, gradients(loss, var_list), self.learning_rate)


# ---------------------------------------------------------------------------------------------
# Devices (slide 35: phase two runs on the available devices)
# ---------------------------------------------------------------------------------------------

@contextlib.contextmanager
def device(name):
    """Operations built inside the ``with`` block are computed on backend ``name`` (like
    ``tf.device``); ``device(None)`` lets them follow the backend in use."""
    _check_device(name)
    previous, _defaults.device = _defaults.device, name
    try:
        yield name
    finally:
        _defaults.device = previous


@answer("lab4", "place")
def place(fetches, devices, default=None):
    """Give every Operation the fetches need a device: ``devices[primitive name]`` if listed, else
    ``default``; one placed by hand (``with device(...)``) keeps its device, as in TensorFlow.
    Returns ``{device: number of operations the fetches need there}``."""
    for name in set(devices.values()) | {default}:
        _check_device(name)
    counts = {}
    for node in prune(_flatten(fetches)):
        if node.fun is not None:
            if node.device is None:
                node.device = devices.get(node.fun.__name__, default)
            counts[node.device] = counts.get(node.device, 0) + 1
    return counts


@contextlib.contextmanager
def on_device(name):
    """Run the block on backend ``name`` (``None``: on the backend in use)."""
    if name is None or name == backend.get_backend():
        yield
    else:
        with backend.use_backend(name):
            yield


def _check_device(name):
    if name is not None and name not in backend.names():
        raise ValueError(f"unknown device {name!r}: a device is one of mini's backends, "
                         f"{', '.join(backend.names())}")


# ---------------------------------------------------------------------------------------------
# Graph optimisation (slide 35: phase two executes an optimized version)
# ---------------------------------------------------------------------------------------------

@answer("lab4", "fold_constants")
def optimize(fetches):
    """Nodes computing the same values as ``fetches``, from fewer nodes: the graph pruned to what
    the fetches need, constants folded, common subexpressions merged.  Placeholders and
    Variables stay the same nodes, so feeds and training work unchanged."""
    return eliminate_common_subexpressions(fold_constants(_flatten(fetches)))


@answer("lab4", "fold_constants")
def fold_constants(fetches):
    """Replace every Operation whose inputs are all Constants by a Constant holding its value,
    computed once now instead of in every run; returns what stands for each fetch."""
    new = {}
    for node in prune(fetches):
        parents = [new[parent] for parent in node.parents]
        if _pure(node) and all(isinstance(parent, Constant) for parent in parents):
            args = node.arguments([parent.value for parent in parents])
            with node.graph.as_default(), on_device(node.device):
                new[node] = Constant(node.forward(*args), f"{node.name}_folded")
        else:
            new[node] = rebuilt(node, parents)
    return [new[fetch] for fetch in fetches]


@answer("lab4", "eliminate_common_subexpressions")
def eliminate_common_subexpressions(fetches):
    """Merge Operations that apply the same primitive, with the same keyword arguments, to the
    same inputs, and Constants of equal value: the first one stands for all; returns what stands
    for each fetch."""
    new, first = {}, {}
    for node in prune(fetches):
        candidate = rebuilt(node, [new[parent] for parent in node.parents])
        if isinstance(node, Constant):
            new[node] = first.setdefault(("Constant", value_key(node.value)), node)
        elif _pure(node):
            new[node] = first.setdefault(signature(candidate), candidate)
        else:
            new[node] = candidate
    return [new[fetch] for fetch in fetches]


COMMUTATIVE = ("add", "multiply", "maximum")
"""Primitives whose two arguments can change places: ``a + b`` and ``b + a`` are one value."""


@answer("lab4", "eliminate_common_subexpressions")
def signature(node):
    """What an Operation computes, as a hashable key: primitive, arguments (input nodes by
    identity, numbers by value; in either order for a COMMUTATIVE primitive), keyword arguments
    and device.  Equal keys, equal values."""
    inputs = dict(zip(node.parent_argnums, node.parents))
    args = tuple(("node", id(inputs[i])) if i in inputs else ("value", value_key(arg))
                 for i, arg in enumerate(node.args))
    if node.fun.__name__ in COMMUTATIVE:
        args = tuple(sorted(args, key=repr))
    kwargs = tuple(sorted((key, value_key(value)) for key, value in node.kwargs.items()))
    return node.fun, args, kwargs, node.device


@answer("lab4", "fold_constants")
def rebuilt(node, parents):
    """``node`` itself if ``parents`` are its parents, else a copy of it reading ``parents``."""
    if all(new is old for new, old in zip(parents, node.parents)):
        return node
    copy = Operation(None, node.fun, tuple(node.arguments(parents)), node.kwargs, parents,
                     node.parent_argnums, name=node.name, graph=node.graph)
    copy.device = node.device
    return copy


@answer("lab4", "fold_constants")
def _pure(node):
    return node.fun is not None and not getattr(node.fun, "stateful", False)


def value_key(value):
    """A hashable stand-in for a number, array, index or tuple written into an operation."""
    if isinstance(value, (tuple, list)):
        return type(value).__name__, tuple(map(value_key, value))
    if isinstance(value, slice):
        return "slice", value_key(value.start), value_key(value.stop), value_key(value.step)
    if value is None or value is Ellipsis:
        return repr(value)
    array = np.asarray(value)
    if array.dtype == object:
        return "object", id(value)
    return array.dtype.str, array.shape, array.tobytes()


@answer("lab4", "session_run")
def _flatten(fetches):
    if isinstance(fetches, dict):
        nodes = list(fetches.values())
    elif isinstance(fetches, (list, tuple)):
        nodes = list(fetches)
    else:
        nodes = [fetches]
    for node in nodes:
        if not isinstance(node, Tensor):
            raise TypeError(f"cannot fetch {node!r}: fetches must be graph nodes (a node, a list "
                            "or a dict of nodes)")
    return nodes


@answer("lab4", "session_run")
def _unflatten(fetches, results):
    if isinstance(fetches, dict):
        return dict(zip(fetches, results))
    if isinstance(fetches, (list, tuple)):
        return type(fetches)(results)
    return results[0]


@answer("lab4", "fold_constants")
def prune(nodes):
    """The graph pruned to ``nodes``: what they depend on, in one topological order, each node
    once (the fetches of a run; slide 35's "optimized version" starts here)."""
    seen, order = set(), []
    for fetch in nodes:
        for node in toposort(fetch):
            if node not in seen:
                seen.add(node)
                order.append(node)
    return order
