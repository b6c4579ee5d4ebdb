"""Lab 4's checks of the classifier: classifier_logits, classifier_loss, build_training_step.

The student half calls the student's functions on Variables and Placeholders it builds from a
description and describes the graph they build; here that graph is built again with mini's
primitives, run by mini's Session and trained by mini's GradientDescentOptimizer, against mini's
SentimentClassifier and softmax_cross_entropy.  classifier_logits on plain arrays computes in the
student's process: its result is data.  build_training_step gets a stand-in ``minimize`` that
records how it is called and returns a node of its own: the training step is section 5's, and
what the checks of gradients and sgd_update check.
"""
import numpy as np

from autograder.checks import Case
from autograder.checks.lab4.gradients import classifier_inputs, random_batch
from autograder.checks.lab4.graphs import (built_back, copy_of, description_of, inputs,
                                           values_or_problem)
from autograder.checks.lab4.graphs import student_graph as _student_graph
from mini import framework as fw
from mini import nn

CLASSIFIER_HINT = ("classifier_logits: take the rows of params['embedding'] at ids, then "
                   "x @ W + b with 'hidden', relu, x @ W + b with 'output', then average each "
                   "sentence's word scores with the mask as weights (mask[:, :, None]), divided "
                   "by its number of real words. classifier_loss: -mean over the batch of "
                   "sum(one_hot_like(labels, logits) * log_softmax(logits, axis=-1), axis=-1).")
INPUTS = ("ids", "mask", "labels")


def _model(rng, scale=1.0):
    """``(model, params scaled by scale, three random batches, the sizes in words)``."""
    vocab, embed, hidden = (int(v) for v in rng.integers(3, 9, size=3))
    model = nn.SentimentClassifier(vocab, embed_dim=embed, hidden_dim=hidden)
    params = {name: scale * value for name, value in model.init(rng).items()}
    batches = [random_batch(rng, vocab, int(rng.integers(2, 6)), int(rng.integers(2, 7)))
               for _ in range(3)]
    return model, params, batches, f"vocabulary {vocab}, embedding {embed}, hidden {hidden}"


def _inputs_described(params):
    """``(entries, positions)`` of a Variable per parameter and the Placeholders of a batch."""
    nodes = classifier_inputs(fw.Graph(), params)
    return description_of(list(nodes.values()), nodes)


def _feed(nodes, at, batch):
    return {nodes[at[name]]: value for name, value in zip(INPUTS, batch)}


def _value(graph, node, feed, what):
    """mini's Session on ``node``, or a sentence saying why it gives no value."""
    result = values_or_problem(graph, [node], feed, what)
    return result[0] if isinstance(result, list) else result


def _trained(graph, loss, variables, batches, feed_of, learning_rate):
    """The loss of each step of mini's gradient descent on ``loss``, and the Variables after."""
    if isinstance(loss, str):
        return {"training": loss}
    try:
        train = fw.GradientDescentOptimizer(learning_rate).minimize(loss, list(variables.values()))
        with np.errstate(all="ignore"):
            losses = [fw.Session(graph).run([loss, train], feed_of(batch))[0] for batch in batches]
    except Exception as error:          # the student's graph does not compute or train
        return {"training": f"raised {type(error).__name__}: {str(error)[:300]}"}
    return {"loss of each step": losses,
            **{f"{name} after training": node.value for name, node in sorted(variables.items())}}


def _classifier_case(what, entries, at, params, inputs_, outcome, reference, on_arrays=None):
    """Case: ``outcome(graph, nodes, end)`` for the node the student's classifier builds on the
    described inputs and for ``reference(nodes)``, mini's, on a copy of them; and, with
    ``on_arrays`` (mini's logits on the arrays of ``inputs_``), classifier_logits on arrays."""
    eager = "logits of the first batch (on plain arrays)"

    def expected():
        graph, nodes = copy_of(entries)
        return {**outcome(graph, nodes, reference(nodes)),
                **({eager: on_arrays()} if on_arrays else {})}

    def interpret(observed):
        graph, nodes, (end,) = _student_graph(entries, observed)
        return {**outcome(graph, nodes, end),
                **({eager: observed["on arrays"]} if on_arrays else {})}

    names = {"params": {name: at[name] for name in params}, **{k: at[k] for k in INPUTS}}
    return Case(what=what, probe="classifier_built",
                inputs={"graph": entries, "names": names, **inputs_}, expected=expected,
                interpret=interpret, rtol=1e-8, atol=1e-10, hint=CLASSIFIER_HINT)


def _reference_logits(model, at, params):
    def logits(nodes):
        return model.logits({name: nodes[at[name]] for name in params}, nodes[at["ids"]],
                            nodes[at["mask"]])
    return logits


def classifier_logits_check(rng):
    model, params, batches, sizes = _model(rng)
    # biases that are not zero (init's are): a padding position's scores, relu(b) @ W + b, are
    # not zero then, and an average that lets them in is seen
    params = {**params, **{name: rng.standard_normal(np.shape(params[name]))
                           for name in ("hidden.b", "output.b")}}
    entries, at = _inputs_described(params)
    ids, mask, _ = batches[0]

    def outcome(graph, nodes, logits):
        return {f"logits of batch {i} (a graph of Variables and Placeholders)":
                _value(graph, logits, _feed(nodes, at, batch[:2]), "your logits")
                for i, batch in enumerate(batches, start=1)}

    return _classifier_case(
        f"classifier_logits on three random batches, as a graph of Variables and Placeholders "
        f"run by mini's Session and on plain arrays ({sizes}, biases not zero; padding "
        "positions hold word ids too, which must not count)", entries, at, params,
        {"what": "logits", "arrays": {"params": params, "ids": ids, "mask": mask}}, outcome,
        _reference_logits(model, at, params), on_arrays=lambda: model.logits(params, ids, mask))


def classifier_training_check(rng):
    lr = float(rng.choice([0.1, 0.3, 0.5]))
    model, params, batches, sizes = _model(rng, scale=2.0)
    entries, at = _inputs_described(params)

    def outcome(graph, nodes, loss):
        variables = {name: nodes[at[name]] for name in params}
        return _trained(graph, loss, variables, batches * 2,
                        lambda batch: _feed(nodes, at, batch), lr)

    def reference(nodes):
        return nn.softmax_cross_entropy(_reference_logits(model, at, params)(nodes),
                                        nodes[at["labels"]])

    return _classifier_case(
        f"six steps of mini's GradientDescentOptimizer({lr}) on classifier_loss("
        f"classifier_logits(...), labels), built on Variables and Placeholders, run by mini's "
        f"Session ({sizes})", entries, at, params, {"what": "model"}, outcome, reference)


def classifier_loss_check(rng):
    large = [(scale * rng.standard_normal((n, 2)), rng.integers(0, 2, size=n))
             for n, scale in ((2, 30.0), (3, 300.0), (5, 300.0))]
    nodes = inputs(fw.Graph(), logits=("Placeholder", (None, None)),
                   labels=("Placeholder", ((None,), "int64")))
    entries, at = description_of(list(nodes.values()), nodes)

    def outcome(graph, nodes, loss):
        if isinstance(loss, str):
            return {"classifier_loss(logits, labels)": loss}
        try:
            grad, = fw.gradients(loss, [nodes[at["logits"]]])
        except Exception as error:      # a node mini cannot differentiate
            return {"the gradient of your loss": f"raised {type(error).__name__}: {error}"}
        return {f"loss and its gradient, batch {i}": values_or_problem(
                    graph, [loss, grad], {nodes[at["logits"]]: z, nodes[at["labels"]]: y},
                    "your loss") for i, (z, y) in enumerate(large, start=1)}

    def expected():
        graph, nodes = copy_of(entries)
        return outcome(graph, nodes, nn.softmax_cross_entropy(nodes[at["logits"]],
                                                               nodes[at["labels"]]))

    def interpret(observed):
        graph, nodes, (loss,) = _student_graph(entries, observed)
        return outcome(graph, nodes, loss)

    return Case(what="classifier_loss(logits, labels) and its gradient for logits fed as a "
                     "Placeholder, with entries up to about 1000 (a probability as small as "
                     "e^-1000 is 0 in floating point, and its log is -inf)",
                probe="classifier_loss_built",
                inputs={"graph": entries, "logits": at["logits"], "labels": at["labels"]},
                expected=expected, interpret=interpret, rtol=1e-8, atol=1e-10,
                hint="use mini.log_softmax (it subtracts the row maximum) and "
                     "nn.one_hot_like(labels, logits); average over the batch. " + CLASSIFIER_HINT)


def classifier_training_step_check(rng):
    vocab = int(rng.integers(5, 10))
    model = nn.SentimentClassifier(vocab, embed_dim=3, hidden_dim=4)
    params = model.init(rng)
    batches = [random_batch(rng, vocab, int(rng.integers(2, 5)), int(rng.integers(2, 6)))
               for _ in range(3)]
    lr = float(rng.choice([0.1, 0.3]))

    def outcome(graph, nodes, facts):
        """``nodes``: {"ids", "mask", "labels", "logits", "loss", parameter name: node}."""
        strings = [f"{key}: {node}" for key, node in nodes.items() if isinstance(node, str)]
        if strings:
            return {**facts, "the graph": strings[0]}
        variables = {name: nodes[name] for name in params}
        trained = _trained(graph, nodes["loss"], variables, batches,
                           lambda batch: {nodes[k]: v for k, v in zip(INPUTS, batch)}, lr)
        return {**facts, **trained, "logits after training": _value(
            graph, nodes["logits"], {nodes["ids"]: batches[0][0], nodes["mask"]: batches[0][1]},
            "your logits")}

    facts = {"minimize called once, with the loss node and the learning rate": True,
             "train_op is what minimize returned": True,
             "initial_params left as they were": True, "each parameter is a Variable": True}

    def expected():
        nodes = classifier_inputs(fw.Graph(), params)
        nodes["logits"] = model.logits(nodes, nodes["ids"], nodes["mask"])
        nodes["loss"] = nn.softmax_cross_entropy(nodes["logits"], nodes["labels"])
        return outcome(nodes["ids"].graph, nodes, facts)

    def interpret(observed):
        graph = fw.Graph()
        built = built_back(observed["graph"], (), graph)
        nodes = {key: built[at] if isinstance(at, int) and not isinstance(at, bool) else str(at)
                 for key, at in observed["where"].items()}
        missing = [name for name in params if name not in nodes]
        if missing:
            nodes["params"] = f"has no Variable for {', '.join(missing)}"
        observed_facts = {key: observed[key] for key in facts if key in observed}
        observed_facts[next(iter(facts))] = observed["minimize"] == [[True, lr]]
        return outcome(graph, nodes, observed_facts)

    return Case(what=f"build_training_step(initial_params, {lr}) for a classifier with vocabulary "
                     f"{vocab}, embedding 3, hidden 4 (minimize a stand-in that records its "
                     "call), its graph trained three steps by mini's GradientDescentOptimizer and "
                     "Session", probe="training_step_built",
                inputs={"initial": params, "learning_rate": lr}, expected=expected,
                interpret=interpret, rtol=1e-8, atol=1e-10,
                hint="in a new Graph: one Variable per parameter, Placeholders ids (int64), mask "
                     "and labels (int64), your classifier_logits and classifier_loss on them, and "
                     "train_op = minimize(loss, learning_rate) (section 5). " + CLASSIFIER_HINT)


CHECKS = {
    "the logits of a batch": (1, [classifier_logits_check]),
    "a loss that does not overflow, and its gradient": (1, [classifier_loss_check]),
    "training: minimize, and the training step built": (
        1, [classifier_training_check, classifier_training_step_check]),
}
