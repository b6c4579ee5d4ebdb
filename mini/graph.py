"""Computation graphs: nodes, topological order, forward evaluation.

A computation graph (lecture L05, slide 13) has one node per variable or operation and an edge
between each operation and each of its inputs.  An edge runs the way data flow, from the input to
the operation that reads it, and the operation's node keeps its incoming edges as its ``parents``.
Both of mini's front ends build graphs of :class:`Node`: ``mini.autodiff`` while the program runs
(dynamic, like PyTorch), ``mini.framework`` before it runs (static, like TensorFlow v1).
Everything that walks a graph, the forward evaluation here and the reverse pass in
``mini.reverse``, visits nodes in the order :func:`toposort` returns.
"""

from mini.answers import answer


class Node:
    """One vertex of a computation graph.

    Attributes:
        value: the node's forward value (a number or numpy array; ``None`` while not yet computed).
        fun: the primitive that computes this node from its arguments, or ``None`` for an input.
        args: the primitive's positional arguments.  Positions that come from other nodes are listed
            in ``parent_argnums``; their entries in ``args`` may be placeholders and are replaced by
            the parents' values when the node is (re)evaluated.
        kwargs: the primitive's keyword arguments (axis, shape, ...): constants, never nodes.
        parents: the nodes this one reads, a tuple in the order of ``parent_argnums``: the node's
            incoming edges, one from each input it reads.
        parent_argnums: for each parent, which argument of ``fun`` it is.
        name: a label for messages and pictures.
    """

    __slots__ = ("value", "fun", "args", "kwargs", "parents", "parent_argnums", "name", "source")

    def __init__(self, value=None, fun=None, args=(), kwargs=None, parents=(), parent_argnums=(),
                 name=None):
        self.value = value
        self.fun = fun
        self.args = args
        self.kwargs = kwargs or {}
        self.parents = tuple(parents)
        self.parent_argnums = tuple(parent_argnums)
        self.name = name
        self.source = None

    @answer("lab2", "evaluate")
    def arguments(self, values):
        """The positional arguments ``fun`` is called with: ``args``, with ``values`` (one per
        parent, in the order of ``parents``) put at the positions of ``parent_argnums``."""
        args = list(self.args)
        for argnum, value in zip(self.parent_argnums, values, strict=True):
            args[argnum] = value
        return args

    @answer("lab2", "evaluate")
    def vjp_operands(self):
        """What the VJPs of ``fun`` are called with: the output and the arguments' values."""
        return self.value, tuple(self.arguments([parent.value for parent in self.parents]))

    @property
    def label(self):
        """What pictures and messages call this node: its name, else its primitive's name."""
        if self.name is not None:
            return self.name
        return getattr(self.fun, "__name__", "input") if self.fun is not None else "input"

    def __repr__(self):
        return f"<{type(self).__name__} {self.label}>"


class CycleError(ValueError):
    """The graph has a cycle, so no topological order exists."""


@answer("lab2", "toposort")
def reachable(end_node):
    """Every node that ``end_node`` depends on (itself included), found without recursion.

    Nodes are dict keys, hashed by identity (a traced value's ``==`` is elementwise, its hash
    still its identity's): the dict keeps them in the order they are found.
    """
    seen = {end_node: None}
    stack = [end_node]
    while stack:
        for parent in stack.pop().parents:
            if parent not in seen:
                seen[parent] = None
                stack.append(parent)
    return list(seen)


@answer("lab2", "toposort")
def toposort(end_node):
    """Order the nodes ``end_node`` depends on so that every node comes after all of its inputs.

    This is the lecture's queue procedure (L05 slide 15) run from the other end, where it needs
    no list of each node's readers: count, for each node, the edges to it from the nodes
    ``end_node`` depends on (its readers there); take ``end_node``, and then, again and again, a
    node whose readers have all been taken, decrementing the counts of its parents as it is
    taken.  Every node is taken after everything that reads it, so the list read backwards has
    every node after its inputs.  It is a loop, not a recursion, so a chain of a million nodes
    sorts as easily as three.

    Returns:
        list of nodes, inputs first, ``end_node`` last.

    Raises:
        CycleError: if the nodes form a cycle; the message names a node on it.
    """
    untaken_readers = {end_node: 0}
    stack = [end_node]
    while stack:                                # every node end_node depends on, and its readers
        for parent in stack.pop().parents:
            if parent in untaken_readers:
                untaken_readers[parent] += 1
            else:
                untaken_readers[parent] = 1
                stack.append(parent)

    # the queue is the list of taken nodes itself: read front to back while ready nodes join it;
    # parents join last first, so that read backwards, a node's inputs keep their argument order
    order = [end_node] if untaken_readers[end_node] == 0 else []
    for node in order:
        for parent in reversed(node.parents):
            untaken_readers[parent] -= 1
            if untaken_readers[parent] == 0:
                order.append(parent)

    if len(order) < len(untaken_readers):
        stuck = [node for node, count in untaken_readers.items() if count > 0]
        raise CycleError(f"the graph has a cycle through node {_node_on_cycle(stuck)!r}; "
                         "a computation graph must be acyclic to be evaluated")
    order.reverse()
    return order


@answer("lab2", "toposort")
def _node_on_cycle(stuck):
    """Walk from a stuck node to one of its stuck readers until a node repeats: that node lies on
    a cycle.  (A node is stuck because a reader of it was never taken: that reader is stuck too.)"""
    stuck_reader = {id(node): None for node in stuck}
    for node in stuck:
        for parent in node.parents:
            if id(parent) in stuck_reader:
                stuck_reader[id(parent)] = node
    node, visited = stuck[0], set()
    while id(node) not in visited:
        visited.add(id(node))
        node = stuck_reader[id(node)]
    return node


@answer("lab2", "evaluate")
def evaluate(end_node, inputs=None):
    """Compute every node's value in topological order (L05 slide 14) and return ``end_node``'s.

    Args:
        end_node: the node whose value is wanted.
        inputs: optional ``{input node: value}`` overriding the stored values of input nodes.

    Each operation node is computed by calling its primitive on its arguments, with the parents'
    freshly computed values in the parent positions.  Values are stored on the nodes.
    """
    given = {id(node): value for node, value in (inputs or {}).items()}
    for node in toposort(end_node):
        if node.fun is None:
            if id(node) in given:
                node.value = given[id(node)]
            continue
        node.value = node.fun(*node.arguments([parent.value for parent in node.parents]),
                              **node.kwargs)
    return end_node.value
