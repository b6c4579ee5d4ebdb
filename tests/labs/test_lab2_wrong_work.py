"""Lab 2's checks catch the mistakes students make, and say which.

Each wrong version below replaces one fill-in's answer in the solution notebook.  Each of three
notebooks holds a wrong version of every fill-in, so that every fill-in has three: no check of one
calls another's (``evaluate`` gets its order from a stand-in, the adjoints a graph the grader
evaluated), so each costs its own test cell's points and nothing else.  The pytest path grades all
three notebooks, the nbgrader path the first two.  Among them is an ``evaluate`` that recurses into
the parents instead of following toposort's order, which once scored full marks.  The hidden checks
are also run directly on the two other mistakes that once scored full marks: an ``evaluate`` that
fills the placeholders in the order of ``parents`` instead of at ``parent_argnums``, and a cycle
report that names a node only depending on the cycle; and on correct sorts whose report names
whichever node of the cycle their sets give first, which pass on every seed.
"""
import re
import sys
from collections import deque

import nbformat
import pytest

from autograder.checks import lab2
from autograder.notebooks import source_notebook
from mini.graph import CycleError

from support.wrong_work import (VISIBLE, loses_its_share_on_the_nbgrader_path,
                                loses_its_share_on_the_pytest_path, verdict)

LAB = "lab2_graphs"

SECOND_X1_NODE = """
    inputs = {key: Node(value, name=key) for key, value in
              {"x1": x1, "x2": x2, "w1": w1, "w2": w2}.items()}
    x3 = Node(None, mini.multiply, (None, None), parents=[inputs["w1"], inputs["x1"]],
              parent_argnums=[0, 1], name="x3")
    x4 = Node(None, mini.multiply, (None, None), parents=[inputs["w2"], inputs["x2"]],
              parent_argnums=[0, 1], name="x4")
    x5 = Node(None, mini.add, (None, None), parents=[x3, x4], parent_argnums=[0, 1], name="x5")
    x6 = Node(None, mini.exp, (None,), parents=[x5], parent_argnums=[0], name="x6")
    x7 = Node(None, mini.add, (None, None), parents=[Node(x1, name="x1"), x6],   # a second x1
              parent_argnums=[0, 1], name="x7")
    return {**inputs, "x3": x3, "x4": x4, "x5": x5, "x6": x6, "x7": x7}
"""
ONE_PATH_TO_X1 = """
    v = {key: node.value for key, node in nodes.items()}
    bar = {"x7": 1.0}
    bar["x6"] = bar["x7"]
    bar["x5"] = bar["x6"] * v["x6"]
    bar["x3"] = bar["x5"]
    bar["x4"] = bar["x5"]
    bar["w1"] = bar["x3"] * v["x1"]
    bar["w2"] = bar["x4"] * v["x2"]
    bar["x1"] = bar["x3"] * v["w1"]                # x7 reads x1 too: its share is missing
    bar["x2"] = bar["x4"] * v["w2"]
    return {key: float(value) for key, value in bar.items()}
"""
ONE_STEP_FROM_THE_END = """
    from collections import deque

    nodes, stack = [end_node], [end_node]
    while stack:
        for parent in stack.pop().parents:
            if parent not in nodes:
                nodes.append(parent)
                stack.append(parent)
    waiting = {node: len(node.parents) for node in nodes}
    readers = {node: [] for node in nodes}
    for node in nodes:
        for parent in node.parents:
            readers[parent].append(node)
    queue = deque(node for node in nodes if waiting[node] == 0)
    order = []
    while queue:
        node = queue.popleft()
        order.append(node)
        for reader in readers[node]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                queue.append(reader)
    if len(order) < len(nodes):
        stuck = [node for node in nodes if waiting[node] > 0]      # the end node first
        node = next(parent for parent in stuck[0].parents if waiting[parent] > 0)   # one step
        raise CycleError(f"the graph has a cycle through node {node.name}")
    return order
"""
PLACEHOLDERS_IN_PARENT_ORDER = """
    for node in toposort(end_node):
        if node.fun is None:
            continue
        parents = iter(node.parents)                   # the k-th None gets the k-th parent
        args = [next(parents).value if arg is None else arg for arg in node.args]
        node.value = node.fun(*args, **node.kwargs)
    return end_node.value
"""

# fill-in -> (its solution block, a phrase of the message, the behaviours it gets wrong)
WRONG = {
    "build_running_example": (SECOND_X1_NODE, "a node outside the dict (x1)",
                              ["the running example's nodes, values and edges"]),
    "running_example_adjoints": (ONE_PATH_TO_X1, "the adjoint of x1 misses a path", VISIBLE),
    "toposort": (ONE_STEP_FROM_THE_END, "not on the cycle", ["names a node on the cycle"]),
    "evaluate": (PLACEHOLDERS_IN_PARENT_ORDER,
                 "put each parent's value at the position parent_argnums gives for it", VISIBLE),
    "quiz_graph": ("""
quiz_nodes = 4                                    # the operations only
quiz_edges = 8
quiz_order = ["a", "b", "c", "d", "e", "f"]
""", "the result['quiz_nodes'] is wrong: expected 6, got 4", ["quiz_nodes"]),
    "quiz_values": ("""
quiz_value_e = 30.0
quiz_grad_a = 5.0 * 3.0                           # the path through c only
""", "ADD the two paths", ["quiz_grad_a"]),
}
TABLE_DATA_AS_INPUTS = """
    inputs = {"x1": Node(3.0, name="x1"), "x2": Node(0.5, name="x2"),     # section 2's data
              "w1": Node(w1, name="w1"), "w2": Node(w2, name="w2")}
    x3 = Node(None, mini.multiply, (None, None), parents=[inputs["w1"], inputs["x1"]],
              parent_argnums=[0, 1], name="x3")
    x4 = Node(None, mini.multiply, (None, None), parents=[inputs["w2"], inputs["x2"]],
              parent_argnums=[0, 1], name="x4")
    x5 = Node(None, mini.add, (None, None), parents=[x3, x4], parent_argnums=[0, 1], name="x5")
    x6 = Node(None, mini.exp, (None,), parents=[x5], parent_argnums=[0], name="x6")
    x7 = Node(None, mini.add, (None, None), parents=[inputs["x1"], x6], parent_argnums=[0, 1],
              name="x7")
    return {**inputs, "x3": x3, "x4": x4, "x5": x5, "x6": x6, "x7": x7}
"""
WEIGHTS_INSIDE_THE_OPERATIONS = """
    inputs = {key: Node(value, name=key) for key, value in
              {"x1": x1, "x2": x2, "w1": w1, "w2": w2}.items()}
    x3 = Node(None, mini.multiply, (w1, None), parents=[inputs["x1"]],   # w1 a number, not a node
              parent_argnums=[1], name="x3")
    x4 = Node(None, mini.multiply, (w2, None), parents=[inputs["x2"]], parent_argnums=[1],
              name="x4")
    x5 = Node(None, mini.add, (None, None), parents=[x3, x4], parent_argnums=[0, 1], name="x5")
    x6 = Node(None, mini.exp, (None,), parents=[x5], parent_argnums=[0], name="x6")
    x7 = Node(None, mini.add, (None, None), parents=[inputs["x1"], x6], parent_argnums=[0, 1],
              name="x7")
    return {**inputs, "x3": x3, "x4": x4, "x5": x5, "x6": x6, "x7": x7}
"""
EXP_DERIVATIVE_ITS_INPUT = """
    v = {key: node.value for key, node in nodes.items()}
    bar = {"x7": 1.0}
    bar["x6"] = bar["x7"]
    bar["x5"] = bar["x6"] * v["x5"]                # d exp(x5) / d x5 taken as x5
    bar["x3"] = bar["x5"]
    bar["x4"] = bar["x5"]
    bar["w1"] = bar["x3"] * v["x1"]
    bar["w2"] = bar["x4"] * v["x2"]
    bar["x1"] = bar["x3"] * v["w1"] + bar["x7"]
    bar["x2"] = bar["x4"] * v["w2"]
    return {key: float(value) for key, value in bar.items()}
"""
THE_FIRST_POINTS_NUMBERS = """
    e = np.exp(5.5)                                # x5 = 5.5 at the first point
    return {"x7": 1.0, "x6": 1.0, "x5": e, "x3": e, "x4": e, "w1": 3.0 * e, "w2": 0.5 * e,
            "x1": 1.0 + 1.5 * e, "x2": 2.0 * e}
"""
RECURSION_LIMIT_RAISED = """
    import sys
    sys.setrecursionlimit(3500)                    # enough for a chain of 3,000

    order, done, visiting = [], set(), set()

    def visit(node):
        if node in done:
            return
        if node in visiting:
            raise CycleError(f"the graph has a cycle through node {node.name}")
        visiting.add(node)
        for parent in node.parents:
            visit(parent)
        visiting.discard(node)
        done.add(node)
        order.append(node)

    visit(end_node)
    return order
"""
NO_CYCLE_CHECK = """
    from collections import deque

    nodes, stack = {end_node: None}, [end_node]
    while stack:
        for parent in stack.pop().parents:
            if parent not in nodes:
                nodes[parent] = None
                stack.append(parent)
    waiting = {node: len(node.parents) for node in nodes}
    readers = {node: [] for node in nodes}
    for node in nodes:
        for parent in node.parents:
            readers[parent].append(node)
    queue = deque(node for node in nodes if waiting[node] == 0)
    order = []
    while queue:
        node = queue.popleft()
        order.append(node)
        for reader in readers[node]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                queue.append(reader)
    return order                                   # the nodes left over are dropped
"""
ONLY_NODES_WITHOUT_A_VALUE = """
    for node in toposort(end_node):
        if node.fun is None or node.value is not None:     # computed already
            continue
        args = list(node.args)
        for position, parent in zip(node.parent_argnums, node.parents):
            args[position] = parent.value
        node.value = node.fun(*args, **node.kwargs)
    return end_node.value
"""
NO_KEYWORD_ARGUMENTS = """
    for node in toposort(end_node):
        if node.fun is None:
            continue
        args = list(node.args)
        for position, parent in zip(node.parent_argnums, node.parents):
            args[position] = parent.value
        node.value = node.fun(*args)                   # node.kwargs left out
    return end_node.value
"""
RECURSIVE_EVALUATE = """
    if end_node.fun is None:
        return end_node.value
    args = list(end_node.args)
    for position, parent in zip(end_node.parent_argnums, end_node.parents):
        args[position] = evaluate(parent)          # each parent again, along every path
    end_node.value = end_node.fun(*args, **end_node.kwargs)
    return end_node.value
"""

WRONG_TWO = {
    "build_running_example": (TABLE_DATA_AS_INPUTS, "the running example's nodes",
                              ["the running example's nodes, values and edges"]),
    "running_example_adjoints": (EXP_DERIVATIVE_ITS_INPUT, "the adjoint of x5 disagrees",
                                 VISIBLE),
    "toposort": (RECURSION_LIMIT_RAISED, "raised RecursionError",
                 ["sorts a chain too long for recursion"]),
    "evaluate": (ONLY_NODES_WITHOUT_A_VALUE, "recompute every operation node", VISIBLE),
    "quiz_graph": ("""
quiz_nodes = 6
quiz_edges = 7                                    # the arrow from b to f missed
quiz_order = ["a", "b", "c", "d", "e", "f"]
""", "the result['quiz_edges'] is wrong: expected 8, got 7", ["quiz_edges"]),
    "quiz_values": ("""
quiz_value_e = 30.0 + 3.0                         # f's value, e + b
quiz_grad_a = 21.0
""", "the result['quiz_value_e'] is wrong", ["quiz_value_e"]),
}
WRONG_THREE = {
    "build_running_example": (WEIGHTS_INSIDE_THE_OPERATIONS, "the weights are nodes now",
                              VISIBLE),
    "running_example_adjoints": (THE_FIRST_POINTS_NUMBERS,
                                 "read the values from the nodes instead of writing the numbers",
                                 VISIBLE),
    "toposort": (NO_CYCLE_CHECK, "toposort should raise CycleError on a graph with a cycle",
                 VISIBLE),
    "evaluate": (RECURSIVE_EVALUATE, "maximum recursion depth exceeded",
                 ["evaluates a chain too long for recursion"]),
    "quiz_graph": ("""
quiz_nodes = 6
quiz_edges = 8
quiz_order = ["f", "e", "d", "c", "b", "a"]       # from the output back, as the adjoints go
""", "should be 'once, after all of its parents', got str 'before its parent",
                   ["quiz_order"]),
    "quiz_values": ("""
quiz_value_e = 30.0
quiz_grad_a = (5.0 * 3.0) * (6.0 * 1.0)           # the two paths multiplied
""", "ADD the two paths", ["quiz_grad_a"]),
}


def _solution_with(wrong):
    """The solution notebook with the solution blocks of ``wrong``'s fill-ins replaced."""
    nb = nbformat.read(source_notebook(LAB), as_version=4)
    for cell in nb.cells:
        block = wrong.get(cell.metadata.get("nbgrader", {}).get("grade_id"), (None,))[0]
        if block:
            cell.source, replaced = re.subn(
                r"(?<=### BEGIN SOLUTION\n).*?(?=\s*### END SOLUTION)",
                lambda match: block.strip("\n"), cell.source, flags=re.S)
            assert replaced == 1, "one solution block per fill-in"
    return nb


@pytest.mark.parametrize("wrong", [WRONG, WRONG_TWO, WRONG_THREE], ids=["one", "two", "three"])
def test_each_mistake_costs_its_behaviours_share_with_a_message_naming_it(wrong, tmp_path):
    loses_its_share_on_the_pytest_path(LAB, wrong, _solution_with(wrong), tmp_path)


@pytest.mark.parametrize("wrong", [WRONG, WRONG_TWO], ids=["one", "two"])
def test_the_nbgrader_path_takes_the_same_points_with_the_same_messages(wrong, tmp_path,
                                                                        monkeypatch):
    loses_its_share_on_the_nbgrader_path(LAB, wrong, _solution_with(wrong), tmp_path, monkeypatch)


def _namespace(name, block):
    """A notebook's namespace in which the fill-in ``name`` has ``block`` as its body."""
    header = next(cell.source.partition("    ### BEGIN SOLUTION")[0]
                  for cell in nbformat.read(source_notebook(LAB), as_version=4).cells
                  if cell.metadata.get("nbgrader", {}).get("grade_id") == name)
    namespace = {"CycleError": CycleError}
    exec(header + block, namespace)
    return namespace


def test_the_hidden_checks_catch_placeholders_filled_in_the_order_of_parents():
    namespace = _namespace("evaluate", PLACEHOLDERS_IN_PARENT_ORDER)
    for check in (lab2.check_evaluate_random_dag, lab2.check_evaluate_recomputes):
        verdict(LAB, "evaluate", check, namespace)          # parents listed in argument order
    with pytest.raises(AssertionError, match=r"every node with two parents lists them last "
                                             r"argument first .*parent_argnums \[1, 0\]\): "
                                             r"the result"):
        verdict(LAB, "evaluate", lab2.check_evaluate_parents_out_of_argument_order, namespace)


def test_a_recursion_whose_limit_was_raised_fails_the_long_chain_on_every_seed():
    """The long chain is always as long as the contract allows: it was drawn between 3,000 and
    5,000 nodes, and a sort that raised the limit to 3,500 passed on the shorter draws."""
    limit = sys.getrecursionlimit()
    try:
        namespace = _namespace("toposort", RECURSION_LIMIT_RAISED)
        for seed in range(10):
            with pytest.raises(AssertionError, match="raised RecursionError"):
                verdict(LAB, "toposort", lab2.check_toposort_long_chain, namespace, seed)
    finally:
        sys.setrecursionlimit(limit)


CYCLE_CHECKS = (lab2.check_toposort_cycle_named, lab2.check_toposort_self_loop_named)


@pytest.mark.parametrize("seed", range(5))
def test_the_hidden_checks_catch_a_cycle_report_naming_a_node_after_the_cycle(seed):
    namespace = _namespace("toposort", ONE_STEP_FROM_THE_END)
    for check in CYCLE_CHECKS:
        with pytest.raises(AssertionError, match=r"naming v\d+, not on the cycle \(v"):
            verdict(LAB, "toposort", check, namespace, seed)


def _sorted_and_left_over(end_node):
    """The queue procedure on a set of nodes: the order, and the nodes left over."""
    nodes, stack = {end_node}, [end_node]
    while stack:
        for parent in stack.pop().parents:
            if parent not in nodes:
                nodes.add(parent)
                stack.append(parent)
    waiting = {node: len(node.parents) for node in nodes}
    readers = {node: [] for node in nodes}
    for node in nodes:
        for parent in node.parents:
            readers[parent].append(node)
    queue, order = deque(node for node in nodes if not node.parents), []
    while queue:
        order.append(queue.popleft())
        for reader in readers[order[-1]]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                queue.append(reader)
    return order, {node for node in nodes if waiting[node] > 0}


def _walk(left_over, node):
    """The nodes visited from ``node`` along left-over parents until one repeats, and that one."""
    path = []
    while node not in path:
        path.append(node)
        node = next(parent for parent in node.parents if parent in left_over)
    return path, node


def _repeated_node(end_node):
    order, left_over = _sorted_and_left_over(end_node)
    if left_over:
        _, node = _walk(left_over, next(iter(left_over)))     # whichever the set gives first
        raise CycleError(f"the graph has a cycle through {node!r}")
    return order


def _whole_cycle(end_node):
    order, left_over = _sorted_and_left_over(end_node)
    if left_over:
        path, node = _walk(left_over, max(left_over, key=id))      # the one last in memory
        cycle = path[path.index(node):]
        raise CycleError(f"these nodes form a cycle: {' <- '.join(n.name for n in cycle)}; "
                         f"{len(left_over) - len(cycle)} more depend on it")
    return order


@pytest.mark.parametrize("sort", [_repeated_node, _whole_cycle])
def test_any_node_on_the_cycle_passes_on_every_seed(sort):
    for seed in range(100):
        for check in CYCLE_CHECKS:
            verdict(LAB, "toposort", check, {"toposort": sort}, seed)


def test_a_name_in_a_cycle_report_is_read_as_a_whole_word():
    names = ["x1", "v1", "v2", "v12"]
    raised = {"raised": "CycleError", "message": "the graph has a cycle through node v12"}
    assert lab2.cycle_report(raised, ["v1", "v2"], names) == \
        "raised CycleError naming v12, not on the cycle (v1, v2)"
    raised["message"] = "the graph has a cycle through <Node v2>"
    assert lab2.cycle_report(raised, ["v1", "v2"], names) == lab2.RAISED_AS_ASKED
