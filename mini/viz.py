"""Pictures: a computation graph with its values and gradients, and training curves.

``draw_graph`` draws what L05 slides 13-19 draw by hand: one box per node, an arrow from each input
to the operation that reads it, the forward value in each box and, after a reverse pass, the
gradient x_bar = d(output)/dx next to it::

    x1, x2 = mini.autodiff.Box(3.0, name="x1"), mini.autodiff.Box(0.5, name="x2")
    f = x1 + mini.exp(1.5 * x1 + 2.0 * x2)
    draw_graph(f, grads=mini.backward_pass(1.0, f)).savefig("graph.png")

Both functions return a matplotlib ``Figure`` and never call ``plt.show``: in a notebook the figure
displays itself, in a script save it.  They work without a display (the Agg backend).
"""
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from mini.graph import Node, toposort


def _display_in_notebooks():
    """Figures made without pyplot have no display hook in Jupyter until pyplot has drawn once;
    register one, so that a returned figure shows as a picture in a fresh kernel too."""
    try:
        from IPython import get_ipython
        from IPython.core.pylabtools import print_figure
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(
            Figure, lambda figure: print_figure(figure, "png", bbox_inches="tight"))


_display_in_notebooks()

FONT_SIZE = 8
CHAR_WIDTH = 0.6 * FONT_SIZE / 72     # inches per character of the monospace font
LINE_HEIGHT = 1.25 * FONT_SIZE / 72   # inches per line of text
GAP = 0.9                             # inches between columns, room for the arrows
SHOWN_ENTRIES = 3                     # numbers printed from an array


def layers(end_node):
    """Each node's layer: 0 for inputs, else 1 + the largest layer among its inputs.

    The layer is the length of the longest path from an input, so every arrow points from a lower
    layer to a higher one.  Computed in one pass over :func:`mini.graph.toposort`'s order.
    """
    layer = {}
    for node in toposort(end_node):
        layer[node] = 1 + max((layer[p] for p in node.parents), default=-1)
    return layer


def draw_graph(end_node, grads=None, title=None):
    """Draw the graph ``end_node`` depends on, inputs on the left, ``end_node`` on the right.

    Args:
        end_node: a :class:`mini.graph.Node` (an eager ``Box``, a framework node or a plain Node).
        grads: optional ``{node: gradient}``, e.g. what ``mini.backward_pass`` returns; each box
            then shows its node's gradient as ``grad``.
        title: optional figure title.

    Each box holds the node's label (its name, else its primitive), its value (arrays as shape and
    the first few entries) and its gradient.  An arrow that skips layers bends through reserved
    slots of the layers between, so no arrow crosses a box.  Returns the matplotlib Figure.
    """
    layer = layers(end_node)
    texts = {node: node_text(node, grads) for node in layer}
    columns, route = _layout(layer)

    widths = [max((max(map(len, texts[n].split("\n"))) for n in col if isinstance(n, Node)),
                  default=0) * CHAR_WIDTH + GAP for col in columns]
    lines = max(t.count("\n") + 1 for t in texts.values())
    row_height = lines * LINE_HEIGHT + 0.45
    rows = max(len(column) for column in columns)
    width, height = sum(widths), rows * row_height + (0.4 if title else 0)
    figure = Figure(figsize=(width, height))
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, width)
    axes.set_ylim(0, height)
    axes.set_axis_off()
    if title:
        axes.set_title(title, y=1 - 0.3 / height, va="top")

    position, boxes = {}, {}
    for x, (column, column_width) in enumerate(zip(columns, widths)):
        centre_x = sum(widths[:x]) + column_width / 2
        top = (rows + len(column)) / 2 * row_height
        for i, item in enumerate(column):
            position[item] = (centre_x, top - (i + 0.5) * row_height)
    for node in layer:
        boxes[node] = axes.text(*position[node], texts[node], ha="center", va="center",
                                family="monospace", fontsize=FONT_SIZE, zorder=3,
                                bbox=dict(boxstyle="round,pad=0.4", facecolor=_colour(node),
                                          edgecolor="0.3"))
    for (parent, node), waypoints in route.items():
        points = [position[parent]] + [position[w] for w in waypoints]
        if waypoints:    # under the boxes, whose opaque faces hide the part inside the parent's
            axes.plot(*zip(*points), color="0.35", linewidth=1, zorder=2)
        # drawn after the boxes (higher zorder), so their outlines are in place to clip against
        axes.add_patch(FancyArrowPatch(
            points[-1], position[node], arrowstyle="-|>", mutation_scale=12, color="0.35",
            zorder=4, shrinkA=0 if waypoints else 2, shrinkB=2,
            patchA=None if waypoints else boxes[parent], patchB=boxes[node]))
    return figure


def node_text(node, grads=None):
    """The text of a node's box: label, value and (if ``grads`` has it) gradient.

    A named operation also shows its primitive: ``x3 (multiply)``.
    """
    primitive = getattr(node.fun, "__name__", None)
    named = node.name is not None and primitive and not node.name.startswith(primitive)
    lines = [f"{node.label} ({primitive})" if named else node.label]
    if node.value is not None:
        lines.append(_describe(node.value))
    if grads is not None and node in grads:
        g = grads[node]
        lines.append("grad " + (_describe(g.value) if isinstance(g, Node) and g.value is not None
                                else g.label if isinstance(g, Node) else _describe(g)))
    return "\n".join(lines)


def _describe(value):
    """``3.0`` -> ``= 3``; an array -> its shape and first entries."""
    array = np.asarray(value)
    if array.ndim == 0:
        return f"= {array.item():.6g}"
    shown = ", ".join(f"{v:.3g}" for v in array.ravel()[:SHOWN_ENTRIES])
    more = ", ..." if array.size > SHOWN_ENTRIES else ""
    return f"{array.shape} [{shown}{more}]"


class _Waypoint:
    """A slot an arrow passes through in a layer it skips (the long-edge dummy node of layered
    graph drawing)."""


def _layout(layer):
    """Columns of nodes and waypoints, ordered to reduce crossings, and each edge's waypoints.

    Every edge that skips layers gets one waypoint per skipped layer.  Each column is then sorted
    by the mean row of its items' neighbours, sweeping right, left and right again (the barycentre
    heuristic of layered graph drawing).
    """
    columns = [[] for _ in range(max(layer.values()) + 1)]
    before, after, route = {}, {}, {}
    for node in layer:                                   # toposort order: reproducible
        columns[layer[node]].append(node)
        before.setdefault(node, [])
        for parent in node.parents:
            if (parent, node) in route:                  # x * x: one arrow is enough
                continue
            chain = [parent]
            for skipped in range(layer[parent] + 1, layer[node]):
                waypoint = _Waypoint()
                columns[skipped].append(waypoint)
                chain.append(waypoint)
            chain.append(node)
            for a, b in zip(chain, chain[1:]):
                after.setdefault(a, []).append(b)
                before.setdefault(b, []).append(a)
            route[parent, node] = chain[1:-1]

    row = {item: i for column in columns for i, item in enumerate(column)}
    for neighbours, sweep in ((before, columns[1:]), (after, columns[-2::-1]),
                              (before, columns[1:])):
        for column in sweep:
            column.sort(key=lambda item: np.mean([row[n] for n in neighbours[item]])
                        if neighbours.get(item) else row[item])
            row.update((item, i) for i, item in enumerate(column))
    return columns, route


def _colour(node):
    if node.fun is None:
        return "#dbe9f6"                                 # inputs: variables, parameters, data
    return "#fdebd0"                                     # operations


def plot_history(history, title=None, xlabel="epoch"):
    """Training curves: losses on the left axes, accuracies (names containing "acc") on the right.

    Args:
        history: ``{name: list of floats}``, e.g. ``{"train loss": [...], "validation accuracy":
            [...]}``.  Series may have different lengths (a loss per step, an accuracy per epoch):
            every series is spread over the same span, measured in units of the shortest series,
            so with one per-epoch series the x-axis counts epochs and the steps fall in between.
        title: optional figure title.
        xlabel: what one unit of the x-axis is (the length of the shortest series).

    Returns the matplotlib Figure.
    """
    if not history:
        raise ValueError("plot_history: history is empty; pass {name: list of floats}")
    empty = [name for name, values in history.items() if len(values) == 0]
    if empty:
        raise ValueError(f"plot_history: series {empty} have no values")
    accuracies = [name for name in history if "acc" in name.lower()]
    losses = [name for name in history if name not in accuracies]
    groups = [(names, kind) for names, kind in ((losses, "loss"), (accuracies, "accuracy"))
              if names]
    unit = min(len(values) for values in history.values())

    figure = Figure(figsize=(5 * len(groups), 3.6), layout="constrained")
    for i, (names, kind) in enumerate(groups, start=1):
        axes = figure.add_subplot(1, len(groups), i)
        for name in names:
            values = np.asarray(history[name], dtype=float)
            steps = np.arange(1, len(values) + 1) * unit / len(values)
            few = len(values) <= 50                      # long series: thin, so they stay legible
            axes.plot(steps, values, marker="o" if few else None, linewidth=1.5 if few else 0.7,
                      alpha=1 if few else 0.6, label=name)
        axes.set_xlabel(xlabel)
        axes.set_ylabel(kind)
        axes.grid(alpha=0.3)
        axes.legend()
    if title:
        figure.suptitle(title)
    return figure
