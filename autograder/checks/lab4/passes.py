"""Lab 4's checks of phase two: prune, fold_constants, signature,
eliminate_common_subexpressions, optimize and place.

The student half runs the student's pass on the graph described to it and describes what the
pass returned: the nodes it made, and ``["original", i]`` for the nodes of the graph it kept.
Here the result is built again on a copy of the graph and run by mini's Session (twice, the
Variables assigned new values in between), its nodes counted, and compared with mini's pass on
another copy.  A pass after the first gets the earlier ones as stand-ins the grader answers:
``prune`` orders the structure it is sent, ``fold_constants`` folds the graph it is sent and
sends back the new nodes.  ``place`` is judged by the devices it set on the nodes, reported as
data: no backend is registered or swapped for it.
"""
import numpy as np

import mini
from autograder.checks import Case
from autograder.checks.lab4.graphs import (CaseGraph, ancestors, asked_fold, asked_prune, copy_of,
                                           description_of, homed, inputs, names_of, order_report,
                                           parents_of, program_nodes, prune_order,
                                           random_constant_program, random_program, student_graph,
                                           values_or_problem)
from autograder.checks.programs import listing
from autograder.probes.lab4 import signature_pairs, stateful_counter
from autograder.probes.lab4_graphs import NOT_MINIS
from mini import framework as fw

PASS_HINT = ("Walk prune(fetches) in order with a dict {node: stand-in}; a node's stand-in is "
             "rebuilt(node, [stand-ins of its parents]) unless the pass replaces it; return "
             "[stand-in of each fetch]. Never change a node in place.")
PASSES = {"fold_constants": fw.fold_constants,
          "eliminate_common_subexpressions": fw.eliminate_common_subexpressions}
STAND_INS = {"prune": asked_prune, "fold_constants": asked_fold}


def _stand_ins_of(pass_name):
    """The notebook's functions a pass uses that belong to an earlier fill-in."""
    return {"fold_constants": (), "eliminate_common_subexpressions": ("prune",),
            "optimize": ("prune", "fold_constants")}[pass_name]


def _pass_case(what, entries, ends, pass_name, outcome, reference, extra=None, hint=PASS_HINT):
    """Case: ``outcome(graph, nodes, stand-ins, observed or None, primitives)`` for what the
    student's pass returns for the described graph's ``ends`` (positions) and for
    ``reference(fetches, graph)``, mini's, on a copy of it; ``extra()`` makes the primitives a
    copy needs that are not mini's (``primitives``)."""
    def expected():
        primitives = extra() if extra else None
        graph, nodes = copy_of(entries, primitives)
        return outcome(graph, nodes, reference([nodes[i] for i in ends], graph), None, primitives)

    def interpret(observed):
        primitives = extra() if extra else None
        graph, nodes, stand_ins = student_graph(entries, observed, primitives)
        return outcome(graph, nodes, stand_ins, observed, primitives)

    stand_ins, known = _stand_ins_of(pass_name), CaseGraph(entries)
    return Case(what=what, probe="pass_result",
                inputs={"graph": entries, "fetches": ends, "pass_name": pass_name,
                        "stand_ins": list(stand_ins)},
                expected=expected, interpret=interpret,
                stand_ins={name: STAND_INS[name](known) for name in stand_ins},
                rtol=1e-9, atol=1e-12, hint=hint)


def _mini_pass(pass_name):
    def reference(fetches, graph):
        return homed(PASSES[pass_name](fetches), graph)
    return reference


def _random_pass_case(what, rng, n_steps, pass_name, twice, hint):
    """The pass on a random program whose inputs are mostly Constants (built twice on the same
    inputs if ``twice``): its result run twice, the Variables assigned new values in between,
    and its nodes counted."""
    program, kinds, fetches = random_constant_program(rng, n_steps)
    nodes = program_nodes(program, kinds, fw.Graph(), twice=twice)
    entries, at = description_of(list(nodes.values()), nodes)
    ends = [at[name] for name in fetches] + ([at[f"{name}_again"] for name in fetches[:2]]
                                             if twice else [])
    shapes = {at[name]: np.shape(value) for name, value in program[0]}
    feeds = [{at[name]: rng.standard_normal(shapes[at[name]]) for name in kinds
              if kinds[name] == "Placeholder"} for _ in range(2)]
    assigned = {at[name]: rng.standard_normal(shapes[at[name]]) for name in kinds
                if kinds[name] == "Variable"}

    def outcome(graph, nodes, stand_ins, observed, primitives):
        if len(stand_ins) != len(ends):
            return {"the pass returns": f"{len(stand_ins)} stand-ins for {len(ends)} fetches"}
        values = []
        for feed in feeds:
            fed = {nodes[i]: value for i, value in feed.items()}
            values.append(values_or_problem(graph, stand_ins, fed, "the stand-ins"))
            for i, value in assigned.items():
                nodes[i].assign(value)
        return {"values of the stand-ins, first run": values[0],
                "values after the Variables were assigned new values": values[1],
                "nodes the fetches need after the pass": _count(stand_ins),
                "the original graph is unchanged":
                    observed["graph unchanged"] if observed else True}

    repeated = ", and the first two again, built a second time" if twice else ""
    return _pass_case(f"{what}{listing(program, kinds)}\n(fetches: {', '.join(fetches)}"
                      f"{repeated})", entries, ends, pass_name, outcome, _mini_pass(pass_name),
                      hint=hint)


def _count(stand_ins):
    nodes = [node for node in stand_ins if not isinstance(node, str)]
    return len(fw.prune(nodes)) if len(nodes) == len(stand_ins) else "not every stand-in is a node"


# ---------------------------------------------------------------------------------------------
# prune and fold_constants
# ---------------------------------------------------------------------------------------------

def fold_prune_check(rng):
    program, kinds, fetches = random_program(rng, 10)
    nodes = program_nodes(program, kinds, fw.Graph())
    entries, at = description_of(list(nodes.values()), nodes)
    ends = [at[name] for name in fetches] + [at[fetches[0]]]
    parents, names = parents_of(entries), names_of(entries)
    return Case(what=f"prune(fetches) on the random graph below{listing(program, kinds)}\n"
                     f"(fetches: {', '.join(fetches)}, {fetches[0]} again)", probe="pruned",
                inputs={"graph": entries, "fetches": ends},
                interpret=lambda listed: order_report(listed, parents, ends, names),
                expected=lambda: order_report(prune_order(parents, ends), parents, ends, names),
                hint="every node each fetch depends on, once, in an order where each node comes "
                     "after its inputs (toposort of each fetch, skipping nodes already listed), "
                     "and no other node")


def fold_prune_long_chain_check(rng):
    length = 1500
    n = inputs(fw.Graph(), x=("Placeholder", ()), c=("Constant", float(rng.standard_normal())))
    v = n["x"]
    for i in range(length):
        v = mini.tanh(v) * float(rng.uniform(0.5, 1.5)) + n["c"]
        if i == length // 2:
            n["middle"] = v
    n["end"] = v
    entries, at = description_of([v], n)
    ends = [at["end"], at["middle"]]
    parents, names = parents_of(entries), names_of(entries)
    return Case(what=f"prune([end, middle]) on a chain of {len(entries)} nodes, v_i = "
                     f"tanh(v_(i-1)) * a_i + c with v_0 = x, middle = v_{length // 2 + 1}",
                probe="pruned", inputs={"graph": entries, "fetches": ends},
                interpret=lambda listed: order_report(listed, parents, ends, names),
                expected=lambda: order_report(prune_order(parents, ends), parents, ends, names),
                hint="a function that calls itself once per node stops at Python's recursion "
                     "limit (about 1000 deep): loop over what toposort(fetch) returns for each "
                     "fetch, skipping nodes already listed")


def _fold_check(n_steps):
    def check(rng):
        return _random_pass_case(
            "fold_constants(fetches) on the random graph below, whose inputs are mostly "
            "Constants; its result run twice by mini's Session, the Variables assigned new "
            "values in between", rng, n_steps, "fold_constants", False,
            "fold an Operation exactly when the stand-ins of ALL its parents are Constants (a "
            "Variable changes when training assigns it, a Placeholder with every feed); compute "
            "it from their values with node.forward and put a Constant in its place. " + PASS_HINT)
    check.__name__ = f"fold_random_graph_{n_steps}_check"
    return check


def _stateful_case(rng, pass_name):
    value = float(rng.standard_normal())
    c = inputs(fw.Graph(), c=("Constant", value))["c"]
    side_effect = stateful_counter([])
    end = side_effect(c * 2.0) + side_effect(c * 2.0)
    entries, at = description_of([end], {"c": c, "a_plus_b": end})
    counter = f"{NOT_MINIS}stateful_counter"

    def outcome(graph, nodes, stand_ins, observed, primitives):
        calls = primitives[counter].calls
        during = observed["stateful calls"] if observed else len(calls)
        before = len(calls)
        result = values_or_problem(graph, stand_ins, {}, "the stand-in")
        return {f"calls of the stateful primitive while {pass_name} ran": during,
                "its calls in one run of the result": len(calls) - before, "the value": result}

    return _pass_case(f"{pass_name} on a + b, where a and b are two calls of a primitive marked "
                      "stateful (a side effect, like the optimizer's update) on 2 * c, c a "
                      "Constant", entries, [at["a_plus_b"]], pass_name, outcome,
                      _mini_pass(pass_name), extra=lambda: {counter: stateful_counter([])},
                      hint="an Operation whose primitive has stateful = True is never folded or "
                           "merged (getattr(node.fun, 'stateful', False)): running it at "
                           "optimisation time, or once instead of twice, changes what the program "
                           "does. " + PASS_HINT)


def fold_stateful_check(rng):
    return _stateful_case(rng, "fold_constants")


# ---------------------------------------------------------------------------------------------
# signature, eliminate_common_subexpressions and optimize
# ---------------------------------------------------------------------------------------------

def signature_check(rng):
    m = int(rng.integers(2, 5))
    number = round(float(rng.uniform(0.5, 2.0)), 2)

    def expected():
        return {label: bool(fw.signature(p) == fw.signature(q))
                for label, p, q in signature_pairs(number, m)}

    return Case(what=f"signature on pairs of Operations over Placeholders x, y of shape "
                     f"({m}, {m}), t = tanh(x): equal exactly when they compute the same thing",
                probe="signatures", inputs={"number": number, "m": m}, expected=expected,
                hint="combine node.fun, for every position of node.args either ('node', "
                     "id(parent)) or ('value', value_key(arg)), the keyword arguments as sorted "
                     "(key, value_key(value)) pairs, and node.device, in one tuple; for a "
                     "primitive in COMMUTATIVE, put the arguments in a fixed order first.")


def _cse_check(n_steps):
    def check(rng):
        return _random_pass_case(
            "eliminate_common_subexpressions(fetches) on the random graph below, built twice on "
            "the same inputs so that every operation has a repeat; its result run twice by "
            "mini's Session", rng, n_steps, "eliminate_common_subexpressions", True,
            "look up each node's signature AFTER its parents were replaced by their stand-ins "
            "(that is how the repeat of a whole subgraph is found, bottom-up), keep the first "
            "node of each signature and the first Constant of each value "
            "(value_key(node.value)). " + PASS_HINT)
    check.__name__ = f"cse_random_graph_{n_steps}_check"
    return check


def cse_stateful_check(rng):
    return _stateful_case(rng, "eliminate_common_subexpressions")


def optimize_check(rng):
    program, kinds, fetches = random_constant_program(rng, 10)
    nodes = program_nodes(program, kinds, fw.Graph(), twice=True)
    entries, at = description_of(list(nodes.values()), nodes)
    ends = [at[name] for name in fetches] + [at[f"{fetches[0]}_again"]]
    feed = {at[name]: value for name, value in program[0] if kinds[name] == "Placeholder"}

    def reference(fetches_, graph):
        folded_ = homed(fw.fold_constants(fetches_), graph)
        stand_ins = homed(fw.eliminate_common_subexpressions(folded_), graph)
        return stand_ins, {"needed": len(fw.prune(fetches_)), "folded": len(fw.prune(folded_)),
                           "merged": len(fw.prune(stand_ins))}

    def outcome(graph, nodes, result, observed, primitives):
        stand_ins, counts = (result if observed is None else
                             (result, {str(k): v for k, v in (observed["counts"] or {}).items()}))
        return {"counts": counts, "values of the stand-ins": values_or_problem(
            graph, stand_ins, {nodes[i]: value for i, value in feed.items()}, "the stand-ins")}

    return _pass_case(f"optimize(fetches) on the random graph below, its first fetch built twice"
                      f"{listing(program, kinds)}\n(fetches: {', '.join(fetches)}, {fetches[0]} "
                      "again)", entries, ends, "optimize", outcome, reference,
                      hint="count len(prune(...)) of the fetches, of what fold_constants returns, "
                           "and of what eliminate_common_subexpressions returns for THAT; return "
                           "the last stand-ins and the dict {'needed': ..., 'folded': ..., "
                           "'merged': ...}.")


# ---------------------------------------------------------------------------------------------
# place: the devices it sets
# ---------------------------------------------------------------------------------------------

def _place_case(what, rng, by_hand, hint):
    first, second, third = (str(name) for name in rng.permutation(["numpy", "cpu", "cuda"]))
    rule = {"matmul": first, str(rng.choice(["tanh", "exp"])): first}
    default = None if by_hand else second
    m, k = (int(v) for v in rng.integers(2, 5, size=2))
    n = inputs(fw.Graph(), X=("Placeholder", (None, k)),
               W=("Variable", rng.standard_normal((k, k))))
    product = n["X"] @ n["W"]
    if not by_hand:
        n["product"] = product      # a name that is not its primitive's: the rule goes by node.fun
    h = mini.tanh(product)
    if by_hand:
        doubled = h * 2.0
        h = doubled + 1.0
        doubled.device = h.device = third
    n["loss"] = mini.sum(mini.exp(-h) * h)
    n["grad_W"], = fw.gradients(n["loss"], [n["W"]])
    n["unrelated"] = mini.tanh(n["X"]) + 1.0
    entries, at = description_of([n["loss"], n["grad_W"], n["unrelated"]], n)
    ends = [at["loss"], at["grad_W"]]
    needed = {i for i in ancestors(parents_of(entries), ends) if entries[i][0] == "Operation"}
    labels = _labels(entries)

    def report(counts, devices, unchanged):
        return {"place(...) returns": ({str(key): value for key, value in counts.items()}
                                       if isinstance(counts, dict) else counts),
                "devices of the Operations the fetches need":
                    {labels[i]: devices[i] for i in sorted(needed)},
                "devices of the other nodes": {labels[i]: devices[i] for i in range(len(entries))
                                               if i not in needed},
                "the graph is otherwise unchanged": unchanged}

    def expected():
        _, nodes = copy_of(entries)
        counts = fw.place([nodes[i] for i in ends], rule, default)
        return report(counts, [node.device for node in nodes], True)

    return Case(what=f"{what}: place([loss, grad_W], {rule}, {default!r}) for loss = "
                     "sum(exp(-h) * h), h = tanh(X @ W), grad_W = gradients(loss, [W]), with "
                     "unrelated = tanh(X) + 1 in the graph too", probe="placed",
                inputs={"graph": entries, "fetches": ends, "devices": rule, "default": default},
                expected=expected,
                interpret=lambda observed: report(observed["returned"], observed["devices"],
                                                  observed["graph otherwise unchanged"]),
                stand_ins={"prune": asked_prune(CaseGraph(entries))}, hint=hint)


def _labels(entries):
    """A name for each node, its position added where two share one."""
    names = [str(entry[1]) for entry in entries]
    return [name if names.count(name) == 1 else f"{name} (node {i})"
            for i, name in enumerate(names)]


PLACE_HINT = ("for every node of prune(fetches) whose fun is not None: if node.device is None, "
              "set it to devices.get(node.fun.__name__, default); count every such Operation "
              "under its device (None included) in the dict you return. Leave inputs and nodes no "
              "fetch needs alone.")


def place_rule_check(rng):
    return _place_case("placement by rule", rng, False, PLACE_HINT)


def place_by_hand_check(rng):
    return _place_case("placement by rule, with no default device, after two operations were "
                       "placed by hand", rng, True,
                       "an Operation that already has a device keeps it, and is counted under "
                       "it; one left without a device is counted under None. " + PLACE_HINT)


CHECKS = {
    "fold_constants": {
        "prune: only what the fetches need": (1, [fold_prune_check, fold_prune_long_chain_check]),
        "constant subgraphs folded, the results unchanged": (2, [_fold_check(8), _fold_check(16)]),
        "stateful operations never folded": (1, [fold_stateful_check])},
    "eliminate_common_subexpressions": {
        "signature: equal exactly for the same computation": (3, [signature_check]),
        "repeats merged, the results unchanged": (6, [_cse_check(8), _cse_check(14)]),
        "stateful operations never merged": (2, [cse_stateful_check]),
        "optimize: pruned, folded and merged": (2, [optimize_check])},
    "place": {"placement by rule": (1, [place_rule_check]),
              "operations placed by hand keep their device": (1, [place_by_hand_check])},
}
