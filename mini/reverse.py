"""The reverse pass (L05 slide 27): the one walk back through a graph that both front ends use.

``mini.autodiff`` records a graph of boxes while a program runs; ``mini.framework`` builds a graph
of symbolic nodes before it runs.  Both are graphs of ``mini.graph.Node``, and the reverse pass
reads nothing else of them: each node's primitive, its parents, and what its VJPs are called with
(``Node.vjp_operands``).  So it lives here, below both front ends.  Given arrays, the VJPs compute
the gradients; given framework nodes, the very same VJPs build the backward graph that a Session
runs (slide 26).
"""
from mini.answers import answer
from mini.graph import toposort
from mini.primitives import add, vjp_of


@answer("lab3", "backward_pass")
def backward_pass(g, end_node, only=None):
    """Propagate ``g`` = d(final)/d(end_node) back through the graph (L05 slide 27).

    Nodes are visited in reverse topological order, so when a node is reached every node that reads
    it has already sent back its share.  Its total gradient is passed to each VJP of its primitive,
    and each parent receives the result, added by :func:`add_outgrads` to what it already has.

    ``only``, a set of nodes, asks for their gradients alone: every other node's total is dropped
    once it has been passed on, so the pass holds the gradients still to be passed on and none
    that are done with, as PyTorch keeps ``.grad`` only for the tensors that ask for it.
    ``mini.grad`` asks for its inputs'.  A chain of any length then holds one or two gradients
    at a time, and a training step one array of a layer's size fewer (a memory the next array
    reuses while it is still in the cache).

    Returns:
        dict mapping every node of the graph (with ``only``: every node of ``only`` that
        ``end_node`` depends on) to its gradient (the lecture's x_bar for each x).
    """
    grads = {end_node: g}
    for node in reversed(toposort(end_node)):
        g = grads[node] if only is None or node in only else grads.pop(node)
        if not node.parents:                    # an input: nothing to pass on
            continue
        fun, kwargs = node.fun, node.kwargs
        ans, args = node.vjp_operands()
        for argnum, parent in zip(node.parent_argnums, node.parents):
            parent_grad = vjp_of(fun, argnum)(g, ans, *args, **kwargs)
            grads[parent] = add_outgrads(grads.get(parent), parent_grad)
    return grads


@answer("lab3", "add_outgrads")
def add_outgrads(prev_g, g):
    """Sum the gradient contributions of a node with several outgoing edges (L05 slide 20)."""
    return g if prev_g is None else add(prev_g, g)
