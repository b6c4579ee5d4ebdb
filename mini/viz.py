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


def layers(end_node, order=None):
    """Each node's layer: 0 for inputs, else 1 + the largest layer among its inputs.

    The layer is the length of the longest path from an input, so every arrow points from a lower
    layer to a higher one.  Computed in one pass over a topological order: ``order`` where the
    caller gives one (lab 2 draws with the student's own toposort, before mini's is revealed),
    else :func:`mini.graph.toposort`'s.  Raises ValueError, naming the node, if ``order`` lists a
    node before one of its inputs or leaves an input out.
    """
    layer = {}
    for node in toposort(end_node) if order is None else order:
        for parent in node.parents:
            if parent not in layer:
                raise ValueError(f"draw_graph: {parent.label}, an input of {node.label}, does not "
                                 "come before it in the order, so the order is not topological")
        layer[node] = 1 + max((layer[p] for p in node.parents), default=-1)
    return layer


def draw_graph(end_node, grads=None, title=None, backward=(), order=None):
    """Draw the graph ``end_node`` depends on, inputs on the left, ``end_node`` on the right.

    Args:
        end_node: a :class:`mini.graph.Node` (an eager ``Box``, a framework node or a plain Node),
            or a list of them: the graph they depend on together.
        grads: optional ``{node: gradient}``, e.g. what ``mini.backward_pass`` returns; each box
            then shows its node's gradient as ``grad``.
        title: optional figure title.
        backward: nodes to colour as the backward graph (see :func:`draw_backward_graph`).
        order: optional list of the nodes to draw, each after its inputs, e.g. your own
            ``toposort(end_node)``: the picture is laid out from it instead of from
            :func:`mini.graph.toposort` (see :func:`layers`).

    Each box holds the node's label (its name, else its primitive), its value (arrays as shape and
    the first few entries) and its gradient.  An arrow that skips layers bends through reserved
    slots of the layers between, so no arrow crosses a box.  Returns the matplotlib Figure.
    """
    layer = {}
    for end in end_node if isinstance(end_node, (list, tuple)) else [end_node]:
        layer.update((node, depth) for node, depth in layers(end, order).items()
                     if node not in layer)
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
                                bbox=dict(boxstyle="round,pad=0.4", facecolor=_colour(node, backward),
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


SHAPE_ONLY = ("sum_to_like", "broadcast_to_like", "broadcast_like")   # identities at equal shapes


def draw_backward_graph(end_node, gradients, values=None, title=None):
    """The forward graph and the backward graph built from it, side by side (L05 slide 26).

    Args:
        end_node: the forward graph's output (a framework node).
        gradients: the nodes ``gradients(end_node, ...)`` returned.
        values: optional ``{node: value}`` of one run; boxes then show values, and a node that only
            fixes shapes (``sum_to_like`` and its kin) is left out where its input already has the
            output's shape, as the slide leaves out identities.
        title: optional figure title.

    Backward nodes are coloured; numbers written into an operation (the 1.5 of ``1.5 * x1``) are
    shown in its box.  Returns the matplotlib Figure.
    """
    forward, stand_in = set(toposort(end_node)), {}
    for end in [end_node, *gradients]:
        for node in toposort(end):
            if node not in stand_in:
                stand_in[node] = _drawn(node, stand_in, values)
    return draw_graph([stand_in[end_node]] + [stand_in[g] for g in gradients], title=title,
                      backward={stand_in[n] for n in stand_in if n not in forward})


def _drawn(node, stand_in, values):
    """The node that stands for ``node`` in the picture (``stand_in`` holds its parents'): its
    parent's, for a node that only fixes a shape already right; else a copy labelled with the
    numbers written into it."""
    name = getattr(node.fun, "__name__", None)
    if values is not None and name in SHAPE_ONLY and node in values and \
            np.shape(values[node]) == np.shape(values.get(node.parents[0])):
        return stand_in[node.parents[0]]
    numbers = [f"{arg:g}" for i, arg in enumerate(node.args) if i not in node.parent_argnums
               and isinstance(arg, (int, float, np.number))]
    label = node.label + (f" [{', '.join(numbers)}]" if numbers else "")
    return Node((values or {}).get(node), node.fun, node.args, node.kwargs,
                [stand_in[parent] for parent in node.parents], node.parent_argnums, label)


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


def _colour(node, backward=()):
    if node in backward:
        return "#d5f0d5"                                 # the backward graph (slide 26)
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


def queue_trace(order):
    """The steps of L05 slide 15's queue procedure that produce ``order``, one per node.

    At every step the unprocessed queue holds the nodes not yet placed; the ones with no incoming
    edge from an unprocessed node are *ready*, and one of them leaves for the processed queue.
    Returns ``[(leaving, ready, unprocessed)]``: the node that leaves, the ready nodes (``leaving``
    among them) and the unprocessed ones, both in the order of the first step's queue (nodes
    sorted by label).  Raises ValueError, naming the node, if ``order`` is no topological order of
    the nodes it lists: a node twice, a node before its parent, a parent left out.
    """
    listed = list(order)
    placed = {}
    for position, node in enumerate(listed):
        if node in placed:
            raise ValueError(f"queue_trace: node {node.label} is listed twice (at {placed[node]} "
                             f"and {position})")
        placed[node] = position
    for node in listed:
        for parent in node.parents:
            if parent not in placed:
                raise ValueError(f"queue_trace: {parent.label}, a parent of {node.label}, is not "
                                 "in the order")
            if placed[parent] > placed[node]:
                raise ValueError(f"queue_trace: {node.label} comes before its parent "
                                 f"{parent.label}, so it was not ready when it left the queue")
    unprocessed = sorted(listed, key=lambda node: _natural_key(node.label))
    steps = []
    for leaving in listed:
        ready = [node for node in unprocessed if all(p not in unprocessed for p in node.parents)]
        steps.append((leaving, ready, list(unprocessed)))
        unprocessed.remove(leaving)
    return steps


def draw_queue_trace(order, title=None):
    """Draw :func:`queue_trace`: one row per step, the unprocessed queue on the left and the
    processed queue on the right.

    In each row the node that leaves is orange, the other ready nodes green and the nodes still
    waiting for an input white; the processed queue grows by one node per row.  Every node keeps
    its place in the unprocessed queue, so the gaps show what has left.  Returns the Figure.
    """
    steps = queue_trace(order)
    everyone = steps[0][2] if steps else []
    slot = max((len(node.label) for node in everyone), default=1) * CHAR_WIDTH + 0.35
    left = 0.9                                           # room for "step k"
    middle = left + len(everyone) * slot + 0.6           # where the processed queue starts
    legend = left + sum(0.65 + len(meaning) * CHAR_WIDTH for _, meaning in LEGEND)
    width, row_height = max(middle + len(everyone) * slot + 0.2, legend), 0.36
    top = 0.75 if title else 0.45
    height = top + (len(steps) + 1) * row_height + 0.4     # and a legend at the bottom
    figure = Figure(figsize=(width, height))
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, width)
    axes.set_ylim(0, height)
    axes.set_axis_off()
    if title:
        axes.text(width / 2, height - 0.2, title, ha="center", va="top", fontsize=FONT_SIZE + 2)
    heading = height - top + 0.12
    axes.text(left + len(everyone) * slot / 2, heading, "unprocessed queue", ha="center",
              fontsize=FONT_SIZE)
    axes.text(middle + len(everyone) * slot / 2, heading, "processed queue", ha="center",
              fontsize=FONT_SIZE)

    def box(x, y, node, colour, bold=False):
        axes.text(x, y, node.label, ha="center", va="center", family="monospace",
                  fontsize=FONT_SIZE, weight="bold" if bold else "normal",
                  bbox=dict(boxstyle="round,pad=0.25", facecolor=colour,
                            edgecolor="0.1" if bold else "0.5", linewidth=1.5 if bold else 0.8))

    processed = []
    for k, (leaving, ready, unprocessed) in enumerate(steps + [(None, [], [])]):
        y = height - top - (k + 0.5) * row_height
        axes.text(0.1, y, f"step {k + 1}" if leaving is not None else "done", va="center",
                  fontsize=FONT_SIZE)
        for i, node in enumerate(everyone):
            if node in unprocessed:
                colour = ("#f5a65b" if node is leaving else "#cdeac0" if node in ready
                          else "white")
                box(left + (i + 0.5) * slot, y, node, colour, bold=node is leaving)
        for i, node in enumerate(processed):
            box(middle + (i + 0.5) * slot, y, node, "#dbe9f6")
        if leaving is not None:
            axes.text(middle - 0.3, y, f"{leaving.label} \u2192", ha="center", va="center",
                      family="monospace", fontsize=FONT_SIZE, color="#b35900")
            processed.append(leaving)
    x = left
    for colour, meaning in LEGEND:
        axes.text(x, 0.2, "  ", va="center", fontsize=FONT_SIZE,
                  bbox=dict(boxstyle="round,pad=0.25", facecolor=colour, edgecolor="0.5"))
        axes.text(x + 0.25, 0.2, meaning, va="center", family="monospace", fontsize=FONT_SIZE)
        x += 0.65 + len(meaning) * CHAR_WIDTH
    return figure


LEGEND = (("#f5a65b", "leaves the queue now"), ("#cdeac0", "ready: all its inputs processed"),
          ("white", "waits for an input"), ("#dbe9f6", "processed"))


def _natural_key(label):
    """``x2`` before ``x10``: each run of digits compares as a number."""
    key, digits = [], ""
    for character in str(label) + " ":
        if character.isdigit():
            digits += character
            continue
        if digits:
            key.append((1, int(digits), ""))
            digits = ""
        key.append((0, 0, character))
    return key


def draw_backprop_chain(Zs, Ws, grads=None, title=None):
    """Draw an L-layer network as a chain: the forward pass along the top, the backward pass
    along the bottom (the picture of the DLSys lecture 3 notes, "Backpropagation in General").

    Args:
        Zs: the L + 1 activations ``[Z_1, ..., Z_L, Z_{L+1}]``: each layer's input (``Z_1 = X``)
            and the logits, e.g. ``cache["Z"] + [logits]``; arrays or shapes.
        Ws: the L weight matrices (arrays or shapes), ``W_i`` of shape ``(n_i, n_{i+1})``.
        grads: optional L weight gradients; each then shows its shape and size (Frobenius norm).
        title: optional figure title.

    Forward, ``Z_{i+1} = sigma_i(Z_i W_i)`` and the logits go into the loss.  Backward, the
    upstream gradient ``G_{i+1}`` (shaped like ``Z_{i+1}``) travels right to left; at layer i it
    meets the cached ``Z_i`` and ``A_i`` and gives both ``grad W_i`` and ``G_i``.  Returns the
    matplotlib Figure.
    """
    shapes = [tuple(np.shape(z)) if not _is_shape(z) else tuple(z) for z in Zs]
    w_shapes = [tuple(np.shape(w)) if not _is_shape(w) else tuple(w) for w in Ws]
    L = len(w_shapes)
    if L == 0 or len(shapes) != L + 1:
        raise ValueError(f"draw_backprop_chain: {L} weight matrices need {L + 1} activations "
                         f"(the layer inputs and the logits), got {len(shapes)}")
    for i, (z, w, out) in enumerate(zip(shapes, w_shapes, shapes[1:]), start=1):
        if len(z) != 2 or len(w) != 2 or z[1] != w[0] or out != (z[0], w[1]):
            raise ValueError(f"draw_backprop_chain: layer {i} maps Z_{i} of shape {z} with W_{i} "
                             f"of shape {w} to Z_{i + 1} of shape {out}; expected Z_{i} (B, n), "
                             f"W_{i} (n, m) and Z_{i + 1} (B, m)")
    if grads is not None and len(grads) != L:
        raise ValueError(f"draw_backprop_chain: expected {L} weight gradients, got {len(grads)}")

    step = 1.9                                           # inches between activations
    width, height = (L + 1) * step + 1.4, 4.0 + (0.35 if title else 0)
    figure = Figure(figsize=(width, height))
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, width)
    axes.set_ylim(0, height)
    axes.set_axis_off()
    if title:
        axes.text(width / 2, height - 0.15, title, ha="center", va="top", fontsize=FONT_SIZE + 2)
    x = [0.8 + i * step for i in range(L + 2)]           # Z_1 .. Z_{L+1}, then the loss
    rows = {"W": 3.55, "forward": 2.65, "backward": 1.45, "grad": 0.4}
    forward, backward = "#dbe9f6", "#f8d0c8"

    def box(x_, y_, text, colour):
        return axes.text(x_, y_, text, ha="center", va="center", fontsize=FONT_SIZE + 1, zorder=3,
                         bbox=dict(boxstyle="round,pad=0.35", facecolor=colour, edgecolor="0.3"))

    def arrow(start, end, patch_a, patch_b, colour, label=None, below=False, dashed=False):
        axes.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=11,
                                       color=colour, linestyle="--" if dashed else "-", zorder=4,
                                       patchA=patch_a, patchB=patch_b, shrinkA=3, shrinkB=3))
        if label:
            middle = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + (-0.2 if below else 0.2))
            axes.text(*middle, label, ha="center", va="center", fontsize=FONT_SIZE, color=colour)

    z_boxes, g_boxes = [], []
    for i, shape in enumerate(shapes, start=1):
        name = "$Z_{1} = X$" if i == 1 else f"$Z_{{{i}}}$" + (" logits" if i == L + 1 else "")
        z_boxes.append(box(x[i - 1], rows["forward"], f"{name}\n{shape}", forward))
        g_boxes.append(box(x[i - 1], rows["backward"], f"$G_{{{i}}}$\n{shape}", backward))
    loss = box(x[L + 1], (rows["forward"] + rows["backward"]) / 2, r"loss $\ell$", "#fdebd0")
    centre = (x[L + 1], (rows["forward"] + rows["backward"]) / 2)
    arrow((x[L], rows["forward"]), centre, z_boxes[L], loss, "0.3")
    arrow(centre, (x[L], rows["backward"]), loss, g_boxes[L], "#b03a2e", r"$(S - I_y)/B$",
          below=True)
    for i in range(1, L + 1):
        middle = (x[i - 1] + x[i]) / 2
        activation = r"$\sigma_{%d}(Z_{%d} W_{%d})$" % (i, i, i) if i < L else r"$Z_{%d} W_{%d}$" % (i, i)
        arrow((x[i - 1], rows["forward"]), (x[i], rows["forward"]), z_boxes[i - 1], z_boxes[i],
              "0.3", activation, below=True)
        w = box(middle, rows["W"], f"$W_{{{i}}}$ {w_shapes[i - 1]}", "#e8e8e8")
        arrow((middle, rows["W"]), (middle, rows["forward"] + 0.05), w, None, "0.5")
        arrow((x[i], rows["backward"]), (x[i - 1], rows["backward"]), g_boxes[i], g_boxes[i - 1],
              "#b03a2e")
        text = f"$\\nabla W_{{{i}}}$ {w_shapes[i - 1]}"
        if grads is not None:
            size = np.linalg.norm(np.asarray(grads[i - 1], dtype=float))
            text += f"\n$\\|\\nabla W_{{{i}}}\\| = {size:.3g}$"
        g = box(middle, rows["grad"], text, backward)
        arrow((middle, rows["backward"] - 0.05), (middle, rows["grad"]), None, g, "#b03a2e")
        arrow((x[i - 1], rows["forward"]), (middle, rows["backward"] + 0.05), z_boxes[i - 1],
              None, "0.6", dashed=True)
    axes.text(0.1, rows["forward"] + 0.5, "forward", fontsize=FONT_SIZE, color="0.3")
    axes.text(0.1, rows["backward"] - 0.5, "backward", fontsize=FONT_SIZE, color="#b03a2e")
    axes.text(x[0] + 0.15, (rows["forward"] + rows["backward"]) / 2, "cache", fontsize=FONT_SIZE,
              color="0.5", ha="left")
    return figure


def _is_shape(value):
    return isinstance(value, tuple) and all(isinstance(n, (int, np.integer)) for n in value)
