"""mini.graph: the running example of L05 slides 13-19, topological order, cycles, long chains."""
import math

import pytest

import mini
from mini.graph import CycleError, Node, evaluate, toposort


def running_example(x1=3.0, x2=0.5):
    """f = x1 + exp(1.5 x1 + 2.0 x2) split into x3..x7 as on the slides, with mini.grad's tracer."""
    n1, n2 = mini.autodiff.Box(x1, name="x1"), mini.autodiff.Box(x2, name="x2")
    n3 = 1.5 * n1
    n4 = 2.0 * n2
    n5 = n3 + n4
    n6 = mini.exp(n5)
    n7 = n1 + n6
    return n1, n2, n3, n4, n5, n6, n7


def test_running_example_values_and_gradients_match_the_analytic_ones():
    x1, x2, x3, x4, x5, x6, x7 = running_example()
    assert [x3.value, x4.value, x5.value] == [4.5, 1.0, 5.5]
    assert abs(x6.value - math.exp(5.5)) < 1e-12 * math.exp(5.5)
    assert abs(x7.value - (3 + math.exp(5.5))) < 1e-12 * x7.value

    grads = mini.backward_pass(1.0, x7)
    e = math.exp(5.5)
    expected = {x7: 1.0, x6: 1.0, x5: e, x4: e, x3: e, x2: 2 * e, x1: 1 + 1.5 * e}
    for node, want in expected.items():
        assert abs(grads[node] - want) <= 1e-12 * abs(want), (node, grads[node], want)


def test_grad_of_the_running_example():
    f = lambda x1, x2: x1 + mini.exp(1.5 * x1 + 2.0 * x2)
    e = math.exp(5.5)
    assert abs(mini.grad(f, 0)(3.0, 0.5) - (1 + 1.5 * e)) <= 1e-12 * e
    assert abs(mini.grad(f, 1)(3.0, 0.5) - 2 * e) <= 1e-12 * e


def test_toposort_puts_every_node_after_its_inputs_once():
    nodes = running_example()
    order = toposort(nodes[-1])
    assert sorted(map(id, order)) == sorted(map(id, nodes))
    position = {id(node): i for i, node in enumerate(order)}
    for node in order:
        for parent in node.parents:
            assert position[id(parent)] < position[id(node)]
    assert order[-1] is nodes[-1]


def test_toposort_only_visits_what_the_end_node_needs():
    *_, x5, x6, x7 = running_example()
    assert all(node is not x7 for node in toposort(x6))     # by identity: `==` compares values
    assert len(toposort(x5)) == 5


def test_evaluate_recomputes_values_from_new_inputs():
    x1, x2, *_, x7 = running_example()
    assert evaluate(x7, {x1: 1.0, x2: 2.0}) == pytest.approx(1.0 + math.exp(1.5 + 4.0), rel=1e-12)


def test_plain_nodes_wired_by_hand_evaluate():
    a, b = Node(2.0, name="a"), Node(5.0, name="b")
    product = Node(None, mini.multiply.fun, (None, None), parents=(a, b), parent_argnums=(0, 1))
    total = Node(None, mini.add.fun, (None, 1.0), parents=(product,), parent_argnums=(0,))
    assert evaluate(total) == 11.0
    assert evaluate(total, {a: 3.0}) == 16.0


def test_a_cycle_is_reported_with_a_node_on_it():
    a, b, c = Node(name="a"), Node(name="b"), Node(name="c")
    start = Node(1.0, name="start")
    a.parents, b.parents, c.parents = (start, c), (a,), (b,)
    end = Node(name="end", parents=(c,))
    with pytest.raises(CycleError, match=r"cycle through node <Node [abc]>"):
        toposort(end)


def test_a_100000_node_chain_sorts_and_differentiates_without_recursion():
    def chain(x):
        for _ in range(100_000):
            x = x * 1.0 + 0.0
        return x
    assert mini.grad(chain)(2.0) == 1.0
    value, gradient = mini.value_and_grad(lambda x: chain(x) * 3.0)(2.0)
    assert (value, gradient) == (6.0, 3.0)
