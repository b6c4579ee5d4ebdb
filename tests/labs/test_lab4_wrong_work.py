"""Lab 4's checks catch the mistakes students make, and say which.

Each wrong version below changes one fill-in's answer in the solution notebook; each fill-in has
three, one in each table (WRONG, WRONG_TWO, WRONG_THREE). One notebook holds the wrong versions of
one table, one per fill-in: no check of one fill-in runs another's (the hidden checks get graphs
described as data, gradient values and orders the grader computes; the visible tests run graphs
with the student's session_run only once its own tests passed), so each costs the share of its own
test cell's points that the behaviours it gets wrong are worth (all of them when a visible test
catches it) and nothing else: every table on the pytest path, WRONG and WRONG_TWO on the nbgrader
path too. The hidden checks are also run directly on mistakes the visible tests may not see, the
first of them one that once scored full marks: a session_run that stores its values on the nodes.
"""

import pytest

from autograder.checks import checks_of

from support.wrong_work import (VISIBLE, loses_its_share_on_the_nbgrader_path,
                                loses_its_share_on_the_pytest_path, namespace_through,
                                solution_with, verdict)

LAB = "lab4_framework"

# fill-in -> ([(code in its solution, its replacement)], a phrase of the message, the behaviours
# it gets wrong)
WRONG = {
    "session_run": ([("values[node] = feed_dict[node]",
                      "values[node] = node.value = feed_dict[node]")],
                    "left values on the nodes", VISIBLE),
    "operation": ([("return np.logaddexp(0.0, z) - y * z", "return np.log(1 + np.exp(z)) - y * z")],
                  "overflowed", VISIBLE),
    "gradients": ([("grads[parent] = share if parent not in grads else grads[parent] + share",
                    "grads[parent] = share")],
                  "the result['gradient with respect to x1'] is wrong",
                  ["the gradients of a graph, contributions added up"]),
    "sgd_update": ([("variable.assign(variable.value - learning_rate * grad)",
                     "variable.value -= learning_rate * grad")],
                   "changed a's old array in place", VISIBLE),
    "minimize": ([("isinstance(node, Variable)]", "isinstance(node, (Variable, Placeholder))]")],
                 "the loss's Variables are a and b", VISIBLE),
    "gradient_check": ([("        variable.assign(original)\n", "")],
                       "should hold the values they held before", VISIBLE),
    "classifier": ([("return mini.sum(scores * weights, axis=1) / "
                      "mini.sum(mask[:, :, None], axis=1)", "return mini.mean(scores, axis=1)")],
                   "The average is over the REAL words", VISIBLE),
    "fold_constants": ([("all(isinstance(parent, Constant) for parent in parents)",
                         "all(isinstance(parent, (Constant, Variable)) for parent in parents)")],
                       "folded something that reads a Variable", VISIBLE),
    "eliminate_common_subexpressions": ([("first.setdefault(signature(candidate), candidate)",
                                          "first.setdefault(signature(node), candidate)")],
                                        "repeats are found bottom-up", VISIBLE),
    "place": ([("        if node.device is None:\n            node.device = devices.get(",
                "        if True:\n            node.device = devices.get(")],
              "placed on 'numpy' by hand and must stay there", VISIBLE),
}

# WRONG: the forward's e^z overflowing; a Placeholder trained as if it were a parameter; the
# Variables left moved after the check.
# WRONG_TWO: y's VJP with the wrong sign; no error for a loss without Variables; forward
# differences; a recursive walk; the VJPs called without the node's keyword arguments; the gradient
# values scaled in place (grad *= learning_rate); the padding's word vectors masked instead of its
# scores (the biases still reach the average); the stateful rule forgotten in folding; a signature
# without the device; placement by the node's name instead of its primitive's
WRONG_TWO = {
    "session_run": ([("    for fetch in nodes:\n        for node in toposort(fetch):\n"
                      "            if node in values:\n                continue\n",
                      "    def evaluate(node):\n        for parent in node.parents:\n"
                      "            if parent not in values:\n                evaluate(parent)\n"
                      "        if True:\n"),
                     ("    results = [values[node] for node in nodes]",
                      "    for fetch in nodes:\n        if fetch not in values:\n"
                      "            evaluate(fetch)\n"
                      "    results = [values[node] for node in nodes]")],
                    "raised RecursionError", ["a chain too long for recursion"]),
    "operation": ([("lambda g, ans, z, y: -(g * z),", "lambda g, ans, z, y: g * z,")],
                  "the VJP for y", VISIBLE),
    "gradients": ([("(g, node, *node.args, **node.kwargs)", "(g, node, *node.args)")],
                  "VJPs that depend on the keyword arguments",
                  ["the gradients of a graph, contributions added up",
                   "the classifier's gradients"]),
    "sgd_update": ([("            variable.assign(variable.value - learning_rate * grad)",
                     "            grad *= learning_rate\n"
                     "            variable.assign(variable.value - grad)")],
                   "left the gradient values it was handed as they were",
                   ["new arrays: the ones read before are left as they were"]),
    "minimize": ([("    if not trained:\n        raise ValueError(",
                   "    if False:\n        raise ValueError(")],
                 "should raise a ValueError naming the loss node", VISIBLE),
    "gradient_check": ([("variable.assign(original - step)", "variable.assign(original)"),
                        ("(above - below) / (2 * h)", "(above - below) / h")],
                       "the worked example gives [6, -2]", VISIBLE),
    "classifier": ([("vectors = mini.take(params[\"embedding\"], ids, axis=0)",
                     "vectors = mini.take(params[\"embedding\"], ids, axis=0) * mask[:, :, None]"),
                    ("return mini.sum(scores * weights, axis=1)",
                     "return mini.sum(scores, axis=1)")],
                   "biases not zero", ["the logits of a batch",
                                       "training: minimize, and the training step built"]),
    "fold_constants": ([('foldable = node.fun is not None and not getattr(node.fun, "stateful", '
                         'False)', "foldable = node.fun is not None")],
                       "calls of the stateful primitive while fold_constants ran",
                       ["stateful operations never folded"]),
    "eliminate_common_subexpressions": ([("return node.fun, args, kwargs, node.device",
                                          "return node.fun, args, kwargs")],
                                        "tanh(x) on no device, tanh(x) on 'numpy'",
                                        ["signature: equal exactly for the same computation"]),
    "place": ([("devices.get(node.fun.__name__, default)", "devices.get(node.name, default)")],
              "the result['place(...) returns']", ["placement by rule"]),
}

# WRONG_THREE: y's gradient not summed back to its shape; only the loss's own inputs trained;
# every entry of a Variable moved at once; a node computed again for every fetch that needs it;
# zeros shaped like the loss
# for a variable it does not read; the update's lambdas bound late (every one steps the last
# Variable); the training graph's logits built on the initial arrays instead of the Variables; a
# recursive prune; optimize merging the original fetches instead of the folded ones; Operations
# left without a device not counted under None
WRONG_THREE = {
    "session_run": ([("            if node in values:\n                continue\n", "")],
                    "computed the shared node", VISIBLE),
    "gradients": ([("else mini.zeros_like(v) for v in variables]",
                    "else mini.zeros_like(loss) for v in variables]")],
                  "the result['gradient with respect to unused']",
                  ["zeros for a Variable the loss does not read"]),
    "operation": ([("            broadcasting=True)", "            broadcasting=False)")],
                  "should be one number", VISIBLE),
    "sgd_update": ([("    def apply_step(*grad_values):\n"
                     "        for variable, grad in zip(variables, grad_values):\n"
                     "            variable.assign(variable.value - learning_rate * grad)\n",
                     "    steps = [lambda grad: variable.assign(variable.value - "
                     "learning_rate * grad)\n             for variable in variables]\n\n"
                     "    def apply_step(*grad_values):\n"
                     "        for step, grad in zip(steps, grad_values):\n"
                     "            step(grad)\n")],
                   "after one step with the worked example's gradients", VISIBLE),
    "minimize": ([("for node in reachable(loss) if", "for node in loss.parents if")],
                 "test_minimize failed: ValueError", VISIBLE),
    "gradient_check": ([("step[index] = h", "step[...] = h")],
                       "the worked example gives [6, -2]", VISIBLE),
    "classifier": ([("logits = classifier_logits(params, ids, mask)",
                     "logits = classifier_logits(initial_params, ids, mask)")],
                   "build_training_step(initial_params",
                   ["training: minimize, and the training step built"]),
    "fold_constants": ([("    order, seen = [], set()\n    for fetch in fetches:\n"
                         "        for node in toposort(fetch):\n            if node not in seen:\n"
                         "                seen.add(node)\n                order.append(node)\n",
                         "    order, seen = [], set()\n\n    def visit(node):\n"
                         "        if node in seen:\n            return\n        seen.add(node)\n"
                         "        for parent in node.parents:\n            visit(parent)\n"
                         "        order.append(node)\n\n    for fetch in fetches:\n"
                         "        visit(fetch)\n")],
                       "raised RecursionError", ["prune: only what the fetches need"]),
    "eliminate_common_subexpressions": ([("merged = eliminate_common_subexpressions(folded)",
                                          "merged = eliminate_common_subexpressions(fetches)")],
                                        "the result['counts']['merged'] is wrong",
                                        ["optimize: pruned, folded and merged"]),
    "place": ([("        counts[node.device] = counts.get(node.device, 0) + 1",
                "        if node.device is not None:\n"
                "            counts[node.device] = counts.get(node.device, 0) + 1")],
              "the result['place(...) returns']",
              ["operations placed by hand keep their device"]),
}


def _solution_with(wrong):
    """The solution notebook with the replacements of ``wrong`` made in its fill-ins."""
    return solution_with(LAB, wrong)


TABLES = {"WRONG": WRONG, "WRONG_TWO": WRONG_TWO, "WRONG_THREE": WRONG_THREE}


@pytest.mark.parametrize("table", list(TABLES))
def test_each_mistake_costs_its_behaviours_share_with_a_message_naming_it(table, tmp_path):
    loses_its_share_on_the_pytest_path(LAB, TABLES[table], _solution_with(TABLES[table]), tmp_path)


@pytest.mark.parametrize("table", ["WRONG", "WRONG_TWO"])
def test_the_nbgrader_path_takes_the_same_points_with_the_same_messages(table, tmp_path,
                                                                        monkeypatch):
    loses_its_share_on_the_nbgrader_path(LAB, TABLES[table], _solution_with(TABLES[table]),
                                         tmp_path, monkeypatch)


# -- the hidden checks alone ----------------------------------------------------------------------

HIDDEN = [  # (fill-in, replacements, the name of a check of it, a pattern of its message)
    ("session_run", [("    results = [values[node] for node in nodes]",
                      "    for node, value in values.items():\n        node.value = value\n"
                      "    results = [values[node] for node in nodes]")],
     "session_drives_training_check_stored", r"hold values \(node.value\)'"),
    ("session_run", [("            if node in values:\n                continue\n", "")],
     "session_once_check_computed", r"got str 'computed s 3 times, a 2 times, b 2 times'"),
    ("session_run", [("raise ValueError(f\"Placeholder '{node.name}' was not fed: put its value "
                      "in \"\n" + " " * 37 + "f\"feed_dict, e.g. {{{node.name}: ...}}\")",
                      "raise ValueError(\"a Placeholder was not fed\")")],
     "session_feeds_check_values", r"raised ValueError without naming 'labels_\d+'"),
    ("session_run", [("if node.device is None:", "if True:")],
     "session_devices_check_values", r"\['backend calls, by device'\] should be a dict"),
    ("gradients", WRONG["gradients"][0], "gradients_random_graph_14_check",
     r"\['gradient with respect to \w+'\] is wrong"),
    ("sgd_update", WRONG["sgd_update"][0], "sgd_not_in_place_check",
     r"\[\"step 1 left the Variables' old arrays as they were\"\] should be True"),
    ("operation", WRONG["operation"][0], "operation_large_logits_check",
     r"\['forward'\] is wrong"),
    ("sgd_update", [("    update.stateful = True\n", "")], "sgd_stateful_check",
     r"\[\"the update's primitive is marked stateful\"\] should be True"),
    ("minimize", WRONG_THREE["minimize"][0], "minimize_shared_check",
     r"\['the variables handed to gradients'\]"),
    ("gradient_check", WRONG["gradient_check"][0], "numerical_restores_check",
     r"\['Variables as they were'\] should be True"),
    ("gradient_check", WRONG_TWO["gradient_check"][0], "numerical_regression_check",
     r"\['estimates'\]\[0\] is wrong"),
    ("classifier", [("mini.log_softmax(logits, axis=-1)",
                     "mini.log(mini.softmax(logits, axis=-1))")],
     "classifier_loss_check", r"\['loss and its gradient, batch \d'\]\[0\] is wrong: "
                                       r"expected \d+\.\d+, got inf"),
    ("classifier", WRONG["classifier"][0], "classifier_logits_check",
     r"\['logits of batch 1 \(a graph of Variables and Placeholders\)'\] is wrong"),
    ("fold_constants", WRONG["fold_constants"][0], "fold_random_graph_16_check",
     r"\['values after the Variables were assigned new values'\]"),
    ("fold_constants", [('foldable = node.fun is not None and not getattr(node.fun, "stateful", '
                         'False)', "foldable = node.fun is not None")],
     "fold_stateful_check", r"\['calls of the stateful primitive while fold_constants ran'\] "
                                 r"is wrong: expected 0, got 2"),
    ("eliminate_common_subexpressions", [("elif node.fun is not None and not getattr(node.fun, "
                                          "\"stateful\", False):", "elif node.fun is not None:")],
     "cse_stateful_check", r"\['its calls in one run of the result'\] is wrong: expected 2, "
                                r"got 1"),
    ("eliminate_common_subexpressions", [("return node.fun, args, kwargs, node.device",
                                          "return node.fun, args, kwargs")],
     "signature_check",
     r"\[\"tanh\(x\) on no device, tanh\(x\) on 'numpy'\"\] should be False"),
    ("eliminate_common_subexpressions", WRONG["eliminate_common_subexpressions"][0],
     "cse_random_graph_8_check",
     r"\['nodes the fetches need after the pass'\] is wrong"),
    ("place", WRONG["place"][0], "place_by_hand_check",
     r"\['place\(\.\.\.\) returns'\]"),
]


@pytest.mark.parametrize("fill_in, replacements, check, message", HIDDEN,
                         ids=[f"{fill_in}-{n}" for n, (fill_in, *_) in enumerate(HIDDEN)])
def test_the_hidden_checks_catch_the_mistake_and_name_it(fill_in, replacements, check, message):
    namespace = namespace_through(LAB, fill_in, replacements)
    check, = [c for c in checks_of(LAB)[fill_in] if c.__name__ == check]
    with pytest.raises(AssertionError, match=message):
        verdict(LAB, fill_in, check, namespace)


def test_the_solution_passes_every_hidden_check_on_several_seeds():
    namespace = namespace_through(LAB, "place", [])
    for fill_in, checks in checks_of(LAB).items():
        for check in checks:
            for seed in (3, 4):
                verdict(LAB, fill_in, check, namespace, seed)


@pytest.mark.parametrize("seed", [31, 41])
def test_a_copy_named_in_the_same_graph_is_still_the_copy_of_its_node(seed):
    """Seeds whose random graph makes the pass's copy in the graph that holds the original: the
    copy is named ``v9_1`` beside ``v9``, and is still a copy (it once failed a correct pass)."""
    namespace = namespace_through(LAB, "eliminate_common_subexpressions", [])
    for check in checks_of(LAB)["eliminate_common_subexpressions"]:
        verdict(LAB, "eliminate_common_subexpressions", check, namespace, seed)
