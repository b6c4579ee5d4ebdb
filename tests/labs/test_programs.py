"""The random programs of autograder.checks.programs: valid, bounded, reproducible, and as varied
as each check that draws them promises."""
import numpy as np
import pytest

import mini
from autograder.checks import lab2, lab3
from autograder.checks.lab4 import graphs as lab4_graphs
from autograder.checks.programs import (
    BOUND, MOVES, ancestors, listing, random_program, run_steps,
)
from mini import framework as fw

SEEDS = range(40)
SHAPES = [("x", (2, 3)), ("c", (3,)), ("W", (3, 3)), ("s", ())]


def every_move(seed, **options):
    return random_program(np.random.default_rng(seed), SHAPES, 12, dict.fromkeys(MOVES, 1),
                          **options)


def features(programs):
    """What a set of programs exercises, in the words of the checks' descriptions."""
    found = set()
    for inputs, steps in programs:
        values = run_steps(steps, dict(inputs))
        reads = {}
        for name, primitive_name, operands, constants, kwargs in steps:
            found.add(primitive_name)
            found |= {"a number in an operation"} if constants else set()
            found |= {f"keepdims={kwargs['keepdims']}"} if "keepdims" in kwargs else set()
            shapes = {np.shape(values[operand]) for operand in operands}
            if primitive_name != "matmul" and len(shapes) > 1:
                found.add("broadcasting")
            if len(operands) == 2 and operands[0] == operands[1]:
                found.add("x * x")
            for operand in operands:
                reads[operand] = reads.get(operand, 0) + 1
        found |= {"fan-out"} if max(reads.values()) > 1 else set()
    return found


def test_the_same_seed_gives_the_same_program():
    for seed in SEEDS:
        (inputs, steps), (again, steps_again) = every_move(seed), every_move(seed)
        assert steps == steps_again and listing((inputs, steps)) == listing((again, steps_again))
        assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(inputs, again))


def test_every_drawn_value_is_bounded_and_every_shape_fits():
    for seed in SEEDS:
        for prefer_recent in (True, False):
            inputs, steps = every_move(seed, prefer_recent=prefer_recent)
            values = run_steps(steps, dict(inputs))           # raises if a shape did not fit
            for name, *_ in steps:
                assert np.all(np.abs(values[name]) < BOUND), (name, listing((inputs, steps)))


def test_joined_programs_have_every_value_on_a_path_to_the_end():
    for seed in SEEDS:
        inputs, steps = program = every_move(seed, join_unread=True)
        values = run_steps(steps, dict(inputs))
        assert ancestors(program, steps[-1][0]) == set(values), listing(program)
        assert all(np.all(np.isfinite(value)) for value in values.values())


def test_a_chain_reads_the_step_before_at_every_step_and_squares_it_once_at_least():
    for seed in SEEDS:
        program = lab2.random_graph(np.random.default_rng(seed), 1, 8, chain=True)
        previous = program[0][0][0]
        for name, _, operands, _, _ in program[1]:
            assert previous in operands, listing(program)
            previous = name
        assert any(primitive_name == "multiply" and operands == [operands[0]] * 2
                   for _, primitive_name, operands, _, _ in program[1]), listing(program)


def test_every_move_is_drawn():
    drawn = features(every_move(seed) for seed in SEEDS)
    assert {"exp", "sigmoid", "relu", "maximum", "matmul", "transpose", "log", "power", "divide",
            "softmax", "log_softmax", "logsumexp", "sum", "mean"} <= drawn


def test_one_program_runs_on_arrays_traced_values_and_framework_nodes_alike():
    inputs, steps = every_move(3, join_unread=True)
    end = steps[-1][0]
    plain = run_steps(steps, dict(inputs))[end]
    traced = run_steps(steps, {name: mini.autodiff.Box(value) for name, value in inputs})[end]
    with fw.Graph().as_default() as graph:
        nodes = run_steps(steps, {name: fw.Variable(value, name) for name, value in inputs})
    np.testing.assert_array_equal(traced.value, plain)
    np.testing.assert_array_equal(fw.Session(graph).run(nodes[end]), plain)


def test_the_listing_shows_each_input_kind_and_each_step_as_a_call():
    program = ([("x", np.zeros((2, 3)))],
               [("v1", "subtract", ["x"], {0: 2.0}, {}), ("v2", "sum", ["v1"], {}, {"axis": 0})])
    assert listing(program) == ("\n    x = input of shape (2, 3)\n    v1 = subtract(2.0, x)"
                                "\n    v2 = sum(v1, axis=0)")
    assert "x = Placeholder of shape (2, 3)" in listing(program, {"x": "Placeholder"})


# --- the checks' programs keep every kind their descriptions and hints promise -----------------

@pytest.mark.parametrize("options", [{}, {"vectors": True}])
def test_lab2_graphs_hold_every_kind_of_node(options):
    graphs = [lab2.random_graph(np.random.default_rng(seed), 3, 20, **options) for seed in SEEDS]
    assert {"tanh", "sigmoid", "negative", "relu", "add", "subtract", "multiply", "maximum",
            "sum", "mean", "a number in an operation", "keepdims=True", "x * x",
            "fan-out"} <= features(graphs)
    for program in graphs:
        values = run_steps(program[1], dict(program[0]))
        assert all(np.all(np.abs(values[name]) < BOUND) for name, *_ in program[1])


def test_lab3_programs_have_broadcasting_fan_out_products_and_reductions():
    programs = [lab3._random_program(np.random.default_rng(seed), 10) for seed in SEEDS]
    assert {"broadcasting", "fan-out", "x * x", "matmul", "transpose", "sum", "log",
            "a number in an operation", "keepdims=True", "keepdims=False"} <= features(programs)
    for program in programs:
        assert ancestors(program, program[1][-1][0]) == {name for name, _ in program[0]} | {
            step[0] for step in program[1]}


def test_lab4_programs_have_every_kind_of_input_and_operation():
    drawn = [lab4_graphs.random_program(np.random.default_rng(seed), 8) for seed in SEEDS]
    assert {"broadcasting", "fan-out", "x * x", "matmul", "a number in an operation",
            "keepdims=True", "keepdims=False"} <= features(program for program, _, _ in drawn)
    for (inputs, steps), kinds, fetches in drawn:
        assert [kinds[name] for name, _ in inputs[:3]] == ["Placeholder", "Variable", "Constant"]
        assert kinds["W"] == "Variable" and len(set(fetches)) == 4
