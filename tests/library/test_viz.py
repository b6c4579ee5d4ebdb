"""mini.viz: graph pictures with values and gradients, and training curves, drawn headless."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg

import mini
from mini import framework as fw
from mini.autodiff import Box
from mini.graph import Node
from mini.viz import draw_backward_graph, draw_graph, layers, plot_history

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def running_example():
    """f = x1 + exp(1.5 x1 + 2.0 x2) at x1 = 3, x2 = 0.5, split into x3..x7 as on L05 slide 13."""
    x1, x2 = Box(3.0, name="x1"), Box(0.5, name="x2")
    x3 = 1.5 * x1
    x4 = 2.0 * x2
    x5 = x3 + x4
    x6 = mini.exp(x5)
    x7 = x1 + x6
    for name, node in (("x3", x3), ("x4", x4), ("x5", x5), ("x6", x6), ("x7", x7)):
        node.name = name
    return x1, x2, x7, mini.backward_pass(1.0, x7)


def labelled_texts(figure):
    return [t for axes in figure.axes for t in axes.texts if t.get_text()]


def box_extents(figure):
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    return [t.get_bbox_patch().get_window_extent(renderer) for t in labelled_texts(figure)]


def test_running_example_has_one_box_per_node_with_values_and_gradients(tmp_path):
    x1, x2, f, grads = running_example()
    figure = draw_graph(f, grads=grads, title="f = x1 + exp(1.5 x1 + 2.0 x2)")
    path = tmp_path / "running_example.png"
    figure.savefig(path)
    assert path.read_bytes().startswith(PNG_MAGIC)

    nodes = mini.toposort(f)
    texts = [t.get_text() for t in labelled_texts(figure)]
    assert len(nodes) == 7 and len(texts) == len(nodes)          # x1 .. x7, one box each
    for node in nodes:
        matches = [t for t in texts if t.split()[0] == node.label]
        assert len(matches) == 1, f"node {node.label}: expected one box, found {matches}"
        assert f"= {node.value:.6g}\ngrad = {grads[node]:.6g}" in matches[0], matches[0]
    e = np.exp(5.5)                                              # the analytic values
    for node, value, gradient in ((x1, 3.0, 1 + 1.5 * e), (x2, 0.5, 2 * e), (f, 3.0 + e, 1.0)):
        box = next(t for t in texts if t.split()[0] == node.label)
        assert f"= {value:.6g}" in box and f"grad = {gradient:.6g}" in box, box
    assert next(t for t in texts if t.split()[0] == "x3").startswith("x3 (multiply)\n")


def test_boxes_do_not_overlap():
    rng = np.random.default_rng(0)
    W, x, b = (Box(rng.standard_normal(s), name=n) for n, s in
               (("W", (3, 4)), ("x", (5, 3)), ("b", (4,))))
    h = mini.relu(x @ W + b)
    y = mini.sum(h * h) + mini.sum(mini.tanh(h)) + mini.sum(x)
    extents = box_extents(draw_graph(y, grads=mini.backward_pass(1.0, y)))
    assert len(extents) == len(mini.toposort(y))
    for a, c in itertools.combinations(extents, 2):
        assert not a.overlaps(c), f"boxes at {a} and {c} overlap"


def test_layer_is_the_longest_path_from_an_input():
    x1, x2, f, _ = running_example()
    layer = layers(f)
    assert layer[x1] == layer[x2] == 0
    assert layer[f] == 4                       # x1 -> x3 -> x5 -> x6 -> x7, not the short x1 -> x7
    assert all(layer[p] < layer[n] for n in layer for p in n.parents)


def test_arrays_show_shape_and_first_entries():
    x = Box(np.arange(6.0).reshape(2, 3), name="x")
    y = mini.sum(x * x)
    texts = [t.get_text() for t in labelled_texts(draw_graph(y, grads=mini.backward_pass(1.0, y)))]
    box = next(t for t in texts if t.startswith("x\n"))
    assert "(2, 3) [0, 1, 2, ...]" in box and "grad (2, 3) [0, 2, 4, ...]" in box
    assert len(texts) == 3                     # x * x is one multiply node with a double edge


def test_framework_graph_and_plain_nodes_draw():
    graph = fw.Graph()
    with graph.as_default():
        a, x = fw.Variable(2.0, "a"), fw.Placeholder((), "x")
        y = a * x + fw.Constant(1.0, "b")
    texts = [t.get_text() for t in labelled_texts(draw_graph(y))]
    assert sorted(texts) == sorted(["a\n= 2", "x", "b\n= 1", "multiply", "add"])

    single = Node(np.float64(1.5), name="alone")
    assert [t.get_text() for t in labelled_texts(draw_graph(single))] == ["alone\n= 1.5"]


def test_backward_graph_beside_the_forward_one_coloured_without_identities():
    """Slide 26: f's graph and the graph of its gradient, identities left out, numbers shown."""
    with fw.Graph().as_default():
        x1, x2 = fw.Placeholder((), "x1"), fw.Placeholder((), "x2")
        f = x1 + mini.exp(1.5 * x1 + 2.0 * x2)
        grads = fw.gradients(f, [x1, x2])
    nodes = list(dict.fromkeys(node for end in [f, *grads] for node in mini.toposort(end)))
    values = dict(zip(nodes, fw.Session(f.graph).run(nodes, {x1: 3.0, x2: 0.5})))
    figure = draw_backward_graph(f, grads, values)
    texts = {t.get_text().split("\n")[0]: t for t in labelled_texts(figure)}
    backward = [n for n in nodes if n not in set(mini.toposort(f))]
    shape_only = [n for n in backward if n.fun.__name__ == "sum_to_like"]
    assert shape_only and len(texts) == len(nodes) - len(shape_only)
    assert not any("sum_to_like" in label for label in texts)
    assert "multiply [1.5]" in texts and "x1" in texts
    green = [label for label, t in texts.items() if t.get_bbox_patch().get_facecolor()[:3]
             == pytest.approx((0xd5 / 255, 0xf0 / 255, 0xd5 / 255))]
    assert len(green) == len(backward) - len(shape_only)
    e = np.exp(5.5)
    assert any(f"= {1 + 1.5 * e:.6g}" in t.get_text() for t in texts.values())


def test_plot_history_puts_losses_and_accuracies_on_separate_axes(tmp_path):
    history = {"train loss": list(np.linspace(1, 0.2, 300)), "validation loss": [0.7, 0.5, 0.4],
               "validation accuracy": [0.7, 0.8, 0.9]}
    figure = plot_history(history, title="training")
    path = tmp_path / "history.png"
    figure.savefig(path)
    assert path.read_bytes().startswith(PNG_MAGIC)
    loss_axes, accuracy_axes = figure.axes
    assert [line.get_label() for line in loss_axes.lines] == ["train loss", "validation loss"]
    assert [line.get_label() for line in accuracy_axes.lines] == ["validation accuracy"]
    # the per-step series spans the same epochs as the per-epoch ones
    assert loss_axes.lines[0].get_xdata()[-1] == pytest.approx(3.0)
    assert list(accuracy_axes.lines[0].get_xdata()) == [1.0, 2.0, 3.0]


def test_plot_history_rejects_empty_input():
    with pytest.raises(ValueError, match="empty"):
        plot_history({})
    with pytest.raises(ValueError, match="'validation accuracy'"):
        plot_history({"train loss": [1.0], "validation accuracy": []})


# ---------------------------------------------------------------------------------------------
# The queue procedure's trace (L05 slide 15) and the backpropagation chain (DLSys lecture 3)
# ---------------------------------------------------------------------------------------------

def small_graph():
    """y = 2a + b as plain Nodes: a, b inputs, t = 2a, y = t + b."""
    a, b = Node(2.0, name="a"), Node(5.0, name="b")
    t = Node(None, mini.multiply, (2.0, None), parents=[a], parent_argnums=[1], name="t")
    y = Node(None, mini.add, (None, None), parents=[t, b], parent_argnums=[0, 1], name="y")
    return a, b, t, y


def boxed_extents(figure):
    """The window extents of the texts drawn in a box (labels without one are left out)."""
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    return [t.get_bbox_patch().get_window_extent(renderer) for t in labelled_texts(figure)
            if t.get_bbox_patch() is not None]


def test_queue_trace_lists_the_ready_nodes_of_every_step():
    from mini.viz import queue_trace
    a, b, t, y = small_graph()
    steps = queue_trace([a, t, b, y])
    assert [leaving for leaving, _, _ in steps] == [a, t, b, y]
    # worked by hand: t is ready once a is processed, y once t and b are
    assert [ready for _, ready, _ in steps] == [[a, b], [b, t], [b], [y]]
    assert [unprocessed for _, _, unprocessed in steps] == [[a, b, t, y], [b, t, y], [b, y], [y]]


def random_order(seed, size):
    rng = np.random.default_rng(seed)
    nodes = [Node(1.0, name=f"n{i}") for i in range(int(rng.integers(1, 4)))]
    for i in range(len(nodes), size):
        parents = [nodes[int(j)] for j in rng.integers(0, len(nodes), size=int(rng.integers(1, 3)))]
        nodes.append(Node(None, mini.add, (None,) * len(parents), parents=parents,
                          parent_argnums=range(len(parents)), name=f"n{i}"))
    return mini.toposort(nodes[-1])


@given(seed=st.integers(0, 2 ** 16), size=st.integers(1, 40))
@settings(max_examples=40, deadline=None)
def test_queue_trace_of_any_topological_order_takes_one_ready_node_per_step(seed, size):
    from mini.viz import queue_trace
    order = random_order(seed, size)
    steps = queue_trace(order)
    processed = set()
    for leaving, ready, unprocessed in steps:
        assert set(unprocessed) == set(order) - processed
        assert set(ready) == {n for n in unprocessed if set(n.parents) <= processed}
        assert leaving in ready
        processed.add(leaving)
    assert processed == set(order)


def test_queue_trace_names_the_node_of_a_wrong_order():
    from mini.viz import queue_trace
    a, b, t, y = small_graph()
    with pytest.raises(ValueError, match="t comes before its parent a"):
        queue_trace([t, a, b, y])
    with pytest.raises(ValueError, match="node b is listed twice"):
        queue_trace([a, b, b, t, y])
    with pytest.raises(ValueError, match="b, a parent of y, is not in the order"):
        queue_trace([a, t, y])


def test_draw_queue_trace_draws_each_step_with_the_leaving_node_marked(tmp_path):
    from mini.viz import draw_queue_trace
    a, b, t, y = small_graph()
    figure = draw_queue_trace([a, b, t, y], title="y = 2a + b")
    figure.savefig(tmp_path / "trace.png")
    assert (tmp_path / "trace.png").read_bytes().startswith(PNG_MAGIC)
    boxes = [text for text in figure.axes[0].texts if text.get_bbox_patch() is not None
             and text.get_text() in {"a", "b", "t", "y"}]
    # unprocessed queue: 4 + 3 + 2 + 1 boxes; processed queue: 0 + 1 + 2 + 3 + 4 (the last row)
    assert len(boxes) == 10 + 10
    bold = [text.get_text() for text in boxes if text.get_weight() == "bold"]
    assert bold == ["a", "b", "t", "y"]                  # one leaving node per step, in order
    assert not any(p.overlaps(q) for p, q in itertools.combinations(boxed_extents(figure), 2))


def test_draw_backprop_chain_shows_shapes_and_gradient_sizes():
    from mini.viz import draw_backprop_chain
    rng = np.random.default_rng(0)
    sizes = [3, 5, 4, 2]
    Ws = [rng.standard_normal((m, n)) for m, n in zip(sizes, sizes[1:])]
    Zs = [np.zeros((6, n)) for n in sizes]
    grads = [rng.standard_normal(W.shape) for W in Ws]
    texts = [t.get_text() for t in labelled_texts(draw_backprop_chain(Zs, Ws, grads=grads))]
    for i, n in enumerate(sizes, start=1):
        assert sum(f"(6, {n})" in t and f"Z_{{{i}}}" in t for t in texts) == 1, texts
        assert sum(f"(6, {n})" in t and f"G_{{{i}}}" in t for t in texts) == 1, texts
    for i, g in enumerate(grads, start=1):
        box, = [t for t in texts if f"nabla W_{{{i}}}$" in t]
        assert f"= {np.linalg.norm(g):.3g}$" in box and str(Ws[i - 1].shape) in box, box
    assert not any(p.overlaps(q) for p, q in
                   itertools.combinations(boxed_extents(draw_backprop_chain(Zs, Ws)), 2))


def test_draw_backprop_chain_rejects_shapes_that_do_not_chain():
    from mini.viz import draw_backprop_chain
    with pytest.raises(ValueError, match="2 weight matrices need 3 activations"):
        draw_backprop_chain([(4, 3), (4, 5)], [(3, 5), (5, 2)])
    with pytest.raises(ValueError, match=r"layer 2 maps Z_2 of shape \(4, 5\) with W_2 of shape \(6, 2\)"):
        draw_backprop_chain([(4, 3), (4, 5), (4, 2)], [(3, 5), (6, 2)])
