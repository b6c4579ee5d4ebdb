"""Lab 3's checks catch the mistakes students make, and say which.

Each wrong version below changes one fill-in's answer in the solution notebook. Three tables
(WRONG, WRONG_TWO, WRONG_THREE) each make one notebook holding a wrong version of every fill-in,
three different mistakes per fill-in in all: no check of one fill-in runs another's (each gets
stand-ins: pre-traced graphs, tables of local derivatives, answers the grader computes), so each
costs the share of its own test cell's points that the behaviours it gets wrong are worth (all of
them when a visible test catches it) and nothing else, on the pytest path (all three tables) and
the nbgrader path (WRONG and WRONG_TWO). Some of them only the hidden checks see (a reflected
operator recording its operands the wrong way round, a - b recorded as a + (-b), VJPs of add and
broadcast_to that leave their gradient broadcast, a log_softmax VJP without axis's default, a
recursive topological sort, a vjp that scales one gradient by g, a grad that keeps its first
trace, a jacobian_forward or jvp that fails on a number or a constant, one wrong JVP). The hidden
checks are also run directly on the four mistakes that once scored full marks: a numerical_grad
that never puts x[i] back, a make_vjp that traces fun again on every vjp(g), a jacobian_reverse
that traces once per row, and a grad that traces fun at the first x only and reuses that trace at
every other x (WRONG_THREE's).
"""

import nbformat
import numpy as np
import pytest

from autograder import probes
from autograder.checks import answer, case_for, checks_of, lab3
from autograder.checks.lab3 import reverse
from autograder.notebooks import source_notebook

from support.wrong_work import (VISIBLE, loses_its_share_on_the_nbgrader_path,
                                loses_its_share_on_the_pytest_path, namespace_through,
                                solution_with, verdict)

LAB = "lab3_autodiff"

# fill-in -> ([(code in its solution, its replacement)], a phrase of the message, or phrases,
# the behaviours it gets wrong)
WRONG = {
    "tracer": ([("    def __radd__(self, other):\n        return mini.add(other, self)",
                 "    def __radd__(self, other):\n        return mini.add(self, other)")],
               "['graph']['node 8 (add)']['parent_argnums'] is wrong",
               ["reflected operators (2.0 - x, 1.0 / x)"]),
    "add_outgrads": ([("    return prev_g + g", "    prev_g += g\n    return prev_g")],
                     "add_outgrads changed its arguments", VISIBLE),
    "unbroadcast": ([("    for axis, length in enumerate(shape):\n"            # leading axes only
                      "        if length == 1 and g.shape[axis] != 1:\n"
                      "            g = g.sum(axis=axis, keepdims=True)\n", "")],
                    "returned shape (3, 4): the result must have the argument's shape (3, 1)",
                    VISIBLE),
    "elementwise_vjps": ([("1: lambda g, ans, x, y: _like_x(g * x, y)}",
                           "1: lambda g, ans, x, y: g * x}")],            # not unbroadcast
                         ("vjps[mini.multiply][1] on 9 argument shapes", "expected shape ("),
                         ["the VJPs of mini.multiply"]),
    "shape_vjps": ([("    np.add.at(x_bar, index, g)", "    x_bar[index] = g")],
                   "vjps[getitem][0](g, ans, (4,), (4,)) with g of shape (4,) is wrong", VISIBLE),
    "log_softmax_vjp": ([("np.sum(g, axis=axis, keepdims=True)", "np.sum(g, axis=axis)")],
                        "operands could not be broadcast together", VISIBLE),
    "backward_pass": ([("grads[parent] = add_outgrads(grads.get(parent), share)",
                        "grads[parent] = share")],
                      "x1 feeds both x3 and x7", VISIBLE),
    "make_vjp": ([("    def vjp(g):\n        return backward_pass(g, end)[start]",
                   "    def vjp(g):\n        again = Box(x, name=\"x\")\n"
                   "        return backward_pass(g, fun(again))[again]")],
                 "fun ran 3 times: make_vjp should trace fun once", VISIBLE),
    "grad": ([("return vjp(1.0)", "return vjp(np.ones_like(x))")],
             "shaped like the OUTPUT", VISIBLE),
    "numerical_grad": ([("        x[i] = original\n", "")],
                       "x[0] was not put back before x[1] was shifted", VISIBLE),
    "forward_mode": ([("1: lambda t, ans, x, y: -t * ans / y}",
                       "1: lambda t, ans, x, y: t * ans / y}")],
                     "the result['jvps[mini.divide][1](t, ans,", ["the JVPs of the primitives"]),
}

# Three more tables, each with one more wrong version of every fill-in: a mistake the tables
# before it do not make, and where the fill-in has several behaviours, one that breaks others.
WRONG_TWO = {
    "tracer": ([("    def __sub__(self, other):\n        return mini.subtract(self, other)",
                 "    def __sub__(self, other):\n        return mini.add(self, -other)")],
               "the result['graph'] should be a dict with keys",      # a - b as a + (-b)
               ["every operator", "reflected operators (2.0 - x, 1.0 / x)"]),
    "add_outgrads": ([("    if prev_g is None:\n        return g",
                       "    if prev_g is None:\n        return 0.0")],        # nothing yet: 0
                     "nothing has arrived yet, so the total is g", VISIBLE),
    "unbroadcast": ([("    for axis, length in enumerate(shape):\n"     # one axis of length 1
                      "        if length == 1 and g.shape[axis] != 1:\n"
                      "            g = g.sum(axis=axis, keepdims=True)\n",
                      "    if 1 in shape:\n"
                      "        axis = shape.index(1)\n"
                      "        g = g.sum(axis=axis, keepdims=True)\n")],
                    "'unbroadcast(g of shape (3, 4), (1, 1))'] has shape (1, 4), expected shape "
                    "(1, 1)", ["every broadcast undone"]),
    "elementwise_vjps": ([("vjps[mini.add] = {0: lambda g, ans, x, y: _like_x(g, x), "
                           "1: lambda g, ans, x, y: _like_x(g, y)}",
                           "vjps[mini.add] = {0: lambda g, ans, x, y: g, "
                           "1: lambda g, ans, x, y: g}")],                 # not unbroadcast
                         "an array of shape (2, 1), an array of shape (2,)) with g of shape "
                         "(2, 2)'] has shape (2, 2)", ["the VJPs of mini.add"]),
    "shape_vjps": ([("vjps[broadcast_to] = {0: lambda g, ans, x, shape: "
                     "unbroadcast(g, np.shape(x))}",
                     "vjps[broadcast_to] = {0: lambda g, ans, x, shape: g}")],
                   "vjps[broadcast_to][0](g, ans, an array of shape (2, 1), (2, 2)) with g of "
                   "shape (2, 2)'] has shape (2, 2), expected shape (2, 1)",
                   ["the VJPs of mini.broadcast_to"]),
    "log_softmax_vjp": ([("def log_softmax_vjp(g, ans, x, axis=-1):",
                          "def log_softmax_vjp(g, ans, x, axis):")],        # no default axis
                        "missing 1 required positional argument: 'axis'",
                        ["the VJP of mini.log_softmax"]),
    "backward_pass": ([("    for node in reversed(toposort(end_node)):",   # a recursive sort
                        "    order, seen = [], set()\n\n"
                        "    def visit(node):\n"
                        "        if node not in seen:\n"
                        "            seen.add(node)\n"
                        "            for parent in node.parents:\n"
                        "                visit(parent)\n"
                        "            order.append(node)\n"
                        "    visit(end_node)\n"
                        "    for node in reversed(order):")],
                      "raised RecursionError", ["a chain too long for recursion"]),
    "make_vjp": ([("        return backward_pass(g, end)[start]",          # g times the gradient
                   "        return g * backward_pass(np.ones_like(end.value), end)[start]")],
                 "then vjp(g1), vjp(g2) and vjp(g3), different g of shape (3, 3) on the same "
                 "trace raised", ["a function of a matrix, vjp called again"]),
    "grad": ([("        vjp, _ = make_vjp(fun, x)\n        return vjp(1.0)",
               "        vjp, value = make_vjp(fun, x)\n        return vjp(value)")],
             "grad(f)(3.0) should be", VISIBLE),
    "numerical_grad": ([("    x = np.array(x, dtype=np.float64)", "    x = np.array(x)")],
                       "inaccurate on a float32 x", VISIBLE),               # x's own dtype
    "forward_mode": ([("        columns.append(np.ravel(jvp(fun, x, direction)[1]))",
                       "        columns.append(jvp(fun, x, direction)[1])")],   # not raveled
                     "for the wide f(x) = sum(tanh(x * w)), x of shape (5,), one output raised "
                     "AxisError", ["jacobian_forward"]),
}

WRONG_THREE = {
    "tracer": ([("    def __rmul__(self, other):\n        return mini.multiply(other, self)",
                 "    def __rmul__(self, other):\n        return mini.multiply(self, other)")],
               "Hint: __rmul__ receives the left operand", VISIBLE),
    "add_outgrads": ([("    return prev_g + g", "    return g")],            # the last share wins
                     "x1's two shares", VISIBLE),
    "unbroadcast": ([("g = g.sum(axis=axis, keepdims=True)", "g = g.sum(axis=axis)")],
                    "the result must have the argument's shape", VISIBLE),
    "elementwise_vjps": ([("1: lambda g, ans, x, y: _like_x(-g * ans / y, y)}",
                           "1: lambda g, ans, x, y: _like_x(-g * ans / y, x)}")],  # x's shape
                         "vjps[mini.divide][1](g, ans, an array of shape (4, 1), an array of "
                         "shape (3,)) with g of shape (4, 3)'] has shape (4, 1), expected shape "
                         "(3,)", ["the VJPs of mini.divide"]),
    "shape_vjps": ([("    return np.transpose(g, np.argsort(axes))",
                     "    return np.transpose(g, axes)")],          # not the inverse permutation
                   "vjps[transpose][0](g, ans, (2, 3, 4), axes=(2, 0, 1))", VISIBLE),
    "log_softmax_vjp": ([("    softmax = np.exp(ans)", "    softmax = np.exp(x)")],
                        "the VJP of log_softmax at x = (0, 0) with g = (1, 0)", VISIBLE),
    "backward_pass": ([("vjps[node.fun][argnum](node_g, node.value, *node.args, **node.kwargs)",
                        "vjps[node.fun][argnum](node_g, node.value, *node.args)")],
                      "call each VJP with the node's keyword arguments too", VISIBLE),
    "make_vjp": ([("    return vjp, end.value", "    return vjp, end")],
                 "make_vjp returned the output node itself as its value", VISIBLE),
    "grad": ([("    def gradfun(x):\n        vjp, _ = make_vjp(fun, x)\n        return vjp(1.0)",
               "    traced = []                 # make_vjp traces once: keep its vjp\n\n"
               "    def gradfun(x):\n"
               "        if not traced:\n"
               "            traced.append(make_vjp(fun, x)[0])\n"
               "        return traced[0](1.0)")],
             "the result['gradfun(x2)'] is wrong", ["functions of vectors and matrices"]),
    "numerical_grad": ([("        x[i] = original - h\n        f_minus = float(f(x))\n"
                         "        x[i] = original\n"
                         "        gradient[i] = (f_plus - f_minus) / (2 * h)",
                         "        x[i] = original\n"
                         "        gradient[i] = (f_plus - float(f(x))) / h")],   # one-sided
                       "the one-sided difference (f(x + h) - f(x)) / h would give 12.61", VISIBLE),
    "forward_mode": ([("    if not isinstance(end, Dual):\n"
                       "        return end, np.zeros(np.shape(end))\n", "")],  # no constant case
                     "raised AttributeError: 'numpy.ndarray' object has no attribute 'value'",
                     ["jvp of a function that ignores its input"]),
}

RETRACING_JACOBIAN = ("""    vjp, value = make_vjp(fun, np.asarray(x, dtype=float))
    m = np.size(value)
    rows = []
    for i in range(m):
""", """    m = np.size(fun(np.asarray(x, dtype=float)))
    rows = []
    for i in range(m):
        vjp, value = make_vjp(fun, np.asarray(x, dtype=float))
""")


def _solution_with(wrong):
    """The solution notebook with the replacements of ``wrong`` made in its fill-ins."""
    return solution_with(LAB, wrong)


TABLES = {"WRONG": WRONG, "WRONG_TWO": WRONG_TWO, "WRONG_THREE": WRONG_THREE}


@pytest.mark.parametrize("table", list(TABLES))
def test_each_mistake_costs_its_behaviours_share_with_a_message_naming_it(tmp_path, table):
    loses_its_share_on_the_pytest_path(LAB, TABLES[table], _solution_with(TABLES[table]), tmp_path)


@pytest.mark.parametrize("table", ["WRONG", "WRONG_TWO"])
def test_the_nbgrader_path_takes_the_same_points_with_the_same_messages(tmp_path, monkeypatch,
                                                                         table):
    loses_its_share_on_the_nbgrader_path(LAB, TABLES[table], _solution_with(TABLES[table]),
                                         tmp_path, monkeypatch)


@pytest.mark.parametrize("seed", range(3))
def test_the_hidden_checks_catch_a_numerical_grad_that_never_puts_x_back(seed):
    namespace = namespace_through(LAB, "numerical_grad", WRONG["numerical_grad"][0])
    for check in (lab3.check_numerical_step, lab3.check_numerical_puts_entries_back):
        with pytest.raises(AssertionError, match=r"\(a \. x\) \*\* 3.*is wrong at index"):
            verdict(LAB, "numerical_grad", check, namespace, seed)


@pytest.mark.parametrize("seed", range(3))
def test_the_hidden_checks_catch_a_make_vjp_that_traces_on_every_vjp(seed):
    namespace = namespace_through(LAB, "make_vjp", WRONG["make_vjp"][0])
    with pytest.raises(AssertionError, match=r"the result\['fun ran'\] should be 'once', got str "
                                             r"'4 times'"):
        verdict(LAB, "make_vjp", lab3.check_make_vjp_matrix, namespace, seed)


@pytest.mark.parametrize("seed", range(3))
def test_the_hidden_checks_catch_a_jacobian_reverse_that_traces_once_per_row(seed):
    namespace = namespace_through(LAB, "forward_mode", [RETRACING_JACOBIAN])
    for check in [check for check in checks_of(LAB)["forward_mode"]
                  if check.__name__.startswith("check_jacobian_reverse")]:
        with pytest.raises(AssertionError, match=r"the result\['fun ran'\] should be 'once', got "
                                                 r"str '\d+ times'"):
            verdict(LAB, "forward_mode", check, namespace, seed)


@pytest.mark.parametrize("seed", range(3))
def test_the_hidden_checks_catch_a_grad_that_keeps_its_first_trace(seed):
    namespace = namespace_through(LAB, "grad", WRONG_THREE["grad"][0])
    with pytest.raises(AssertionError, match=r"the result\['gradfun\(x2\)'\] is wrong"):
        verdict(LAB, "grad", reverse.check_grad_at_two_points, namespace, seed)
    verdict(LAB, "grad", reverse.check_grad_at_two_points, namespace_through(LAB, "grad", []),
            seed)


def test_a_wrong_jvp_and_a_wrong_dual_are_told_apart():
    """With the grader's JVPs standing in, a wrong entry of the table fails the table's checks
    only, and Dual.apply that keeps the last share fails the jvp checks only."""
    wrong_entry = namespace_through(LAB, "forward_mode", WRONG["forward_mode"][0])
    last_share = namespace_through(LAB, "forward_mode", [("tangent = tangent + jvps[prim][argnum]",
                                              "tangent = jvps[prim][argnum]")])
    with pytest.raises(AssertionError, match=r"jvps\[mini.divide\]\[1\]"):
        verdict(LAB, "forward_mode", lab3.JVP_TABLE_CHECKS[3], wrong_entry)
    for check in (lab3.check_jvp_layer, lab3.check_jvp_fan_out):
        verdict(LAB, "forward_mode", check, wrong_entry)
        with pytest.raises(AssertionError, match=r"the result\['tangent'\] is wrong"):
            verdict(LAB, "forward_mode", check, last_share)
    for check in lab3.JVP_TABLE_CHECKS:
        verdict(LAB, "forward_mode", check, last_share)


def _asked(fill_in, check, stand_in, *args, seed=11):
    """What the grader answers when a probe of ``check``'s case asks ``stand_in`` for ``args``."""
    case = case_for(check, seed, fill_in, checks_of(LAB)[fill_in].index(check))
    return answer(case, {"stand_in": stand_in, "args": probes.to_plain(list(args))})


def test_a_stand_in_answers_only_the_questions_of_its_own_case():
    """mini's JVP of an elementwise primitive is the formula of its VJP, and the grader's
    unbroadcast is the answer of a fill-in: asked at arguments that are not those of their own
    case (another check's, harvested by a submission that runs its test cells out of order), they
    refuse."""
    x, y = np.full((2, 3), 2.0), np.full((2, 3), 3.0)
    refused = _asked("forward_mode", lab3.check_jvp_layer, "jvp", "multiply", 0, x, x * y,
                     [x, y], {})
    assert "does not call it" in refused["refused"]
    elementwise = lab3.ELEMENTWISE_CHECKS[0]
    assert "refused" in _asked("elementwise_vjps", elementwise, "unbroadcast", np.ones((7, 5)),
                               (7, 1))


def test_a_make_vjp_that_asks_for_a_traced_value_passes_every_check():
    """make_vjp may tell the traced output from a plain one by Box or by Traced: both tests see the
    stand-ins for Box (the visible test's and the hidden checks') as the student's Box."""
    namespace = namespace_through(LAB, "make_vjp", [("isinstance(end, Box)",
                                                     "isinstance(end, Traced)")])
    test = next(cell.source for cell in nbformat.read(source_notebook(LAB), as_version=4).cells
                if cell.metadata.get("nbgrader", {}).get("grade_id") == "test_make_vjp")
    exec(test.split("### BEGIN HIDDEN TESTS")[0], namespace)
    for check in checks_of(LAB)["make_vjp"]:
        verdict(LAB, "make_vjp", check, namespace)
