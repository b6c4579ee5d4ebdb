"""Running a program of the checks: the format both halves read (``autograder.checks.programs``
draws them).

A program is ``(inputs, steps)``.  ``inputs`` is a list of ``(name, value)``; a step is
``(name, primitive name, operand names, {position: constant}, keyword arguments)`` and calls
mini's primitive of that name on the operands' values, the constants inserted at their positions:
``("v2", "subtract", ["v1"], {0: 2.0}, {})`` is ``v2 = 2.0 - v1``.  A program is plain data, so
it crosses to the student half as it is; each half runs it with the mini it has.
"""
import mini


def call_mini(primitive_name, args, kwargs):
    """mini's primitive of that name: on arrays it computes, on traced values it records, on
    framework nodes it builds a node; so one program runs on all three."""
    return getattr(mini, primitive_name)(*args, **kwargs)


def run_steps(steps, values, call=call_mini):
    """``{name: value}`` of ``values`` (the inputs: arrays, traced values, nodes, ...) and of every
    step, each computed as ``call(primitive name, args, kwargs)``; a ``call`` of autograd's runs
    the same program with ``autograd.numpy``."""
    values = dict(values)
    for name, primitive_name, operands, constants, kwargs in steps:
        values[name] = call(primitive_name, arguments(operands, constants, values), kwargs)
    return values


def arguments(operands, constants, values):
    """A step's positional arguments: the operands' values, the constants at their positions."""
    args = [values[operand] for operand in operands]
    for position, constant in sorted(constants.items()):
        args.insert(position, constant)
    return args
