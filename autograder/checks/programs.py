"""Random programs for the checks and the tests: drawing one, running it, listing it.

A program is ``(inputs, steps)``.  ``inputs`` is a list of ``(name, value)``; a step is
``(name, primitive name, operand names, {position: constant}, keyword arguments)`` and calls
mini's primitive of that name on the operands' values, the constants inserted at their positions:
``("v2", "subtract", ["v1"], {0: 2.0}, {})`` is ``v2 = 2.0 - v1``.  Where the framework needs it
a program comes with a kind per input, ``{name: "Placeholder" | "Variable" | "Constant"}``.

One format for every user, and one way to run it (:func:`run_steps` with a ``call``, from the
student half, :mod:`autograder.probes.programs`, where programs are run too): lab 2 makes its
graph nodes from a program, lab 3 traces one with a Box, lab 4 builds one into a framework graph,
and the tests run one with mini and with autograd.  The drawing (:func:`random_program`) computes
every value as it goes, so it knows the shapes (only values that broadcast are combined, only
shapes that fit are multiplied) and keeps the values bounded.
"""
import numpy as np

import mini
from autograder.probes.programs import arguments, call_mini, run_steps  # noqa: F401 (shared)

BOUND = 20.0
"""No drawn step's value reaches it in magnitude: exp, products and sums cannot run away."""

DIVISOR_FLOOR = 0.5
"""A divisor is a value whose every entry is at least this far from zero."""

UNARY = ("tanh", "sigmoid", "negative", "relu", "exp")
BINARY = ("add", "subtract", "multiply", "maximum")


def ancestors(program, name):
    """The names ``name`` depends on, itself included."""
    operands = {step[0]: step[2] for step in program[1]}
    seen, stack = {name}, [name]
    while stack:
        for parent in operands.get(stack.pop(), ()):
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen


def listing(program, kinds=None):
    """The program as indented lines, for a failure message that shows the graph tested: what
    each input is (``x = input of shape (2, 3)``, or its kind), then each step as a call."""
    inputs, steps = program
    lines = [f"{name} = {kinds[name] if kinds else 'input'} of shape {np.shape(value)}"
             for name, value in inputs]
    for name, primitive_name, operands, constants, kwargs in steps:
        args = list(operands)
        for position, constant in sorted(constants.items()):
            args.insert(position, repr(constant))
        args += [f"{key}={value!r}" for key, value in kwargs.items()]
        lines.append(f"{name} = {primitive_name}({', '.join(args)})")
    return "\n    ".join([""] + lines)


# ---------------------------------------------------------------------------------------------
# Drawing
# ---------------------------------------------------------------------------------------------

def random_program(rng, shapes, n_steps, moves, *, prefer_recent=True, chain=False,
                   join_unread=False, bound=BOUND):
    """A random program ``(inputs, steps)`` over inputs named and shaped by ``shapes``
    (``[(name, shape)]``, values drawn standard normal), its steps named ``v1``, ``v2``, ...

    Args:
        n_steps: moves are drawn until the program has this many steps (a move of several steps
            may go past it).
        moves: ``{move name: weight}``, the kinds of program piece to draw (see :data:`MOVES`).
        prefer_recent: a value is read with a chance growing as the square of its position, so
            programs grow deep; otherwise every value alike, so early values fan out more.
        chain: each move extends the latest value, so every drawn step reads the one before it
            (one path, one valid order), and one of them squares it (x * x: one parent read twice).
        join_unread: then every value no step read, inputs included, is added into the end,
            ``end = add(end, mean(value))``, so that each one has a path to the end.  These joins
            are not bounded: each adds less than ``bound`` to the end.
        bound: a drawn step whose value would reach it (or is not finite) becomes tanh of its
            latest operand instead.
    """
    drawing = _Drawing(rng, [(name, rng.standard_normal(shape)) for name, shape in shapes],
                       prefer_recent, bound)
    names, weights = list(moves), np.array(list(moves.values()), dtype=float)
    square_at, squared = (int(rng.integers(n_steps)), False) if chain else (None, True)
    while len(drawing.steps) < n_steps or not squared:
        a = list(drawing.values)[-1] if chain else drawing.pick()
        if not squared and len(drawing.steps) >= square_at:
            _square(drawing, a)
            squared = drawing.steps[-1][1] == "multiply"      # else tanh(a), squared next time
        else:
            MOVES[names[int(rng.choice(len(names), p=weights / weights.sum()))]](drawing, a)
    if join_unread:
        drawing.join_unread()
    return drawing.inputs, drawing.steps


class _Drawing:
    """The program drawn so far, with each value computed and the number of times it was read."""

    def __init__(self, rng, inputs, prefer_recent, bound):
        self.rng, self.inputs, self.prefer_recent, self.bound = rng, inputs, prefer_recent, bound
        self.values = dict(inputs)
        self.reads = dict.fromkeys(self.values, 0)
        self.steps = []

    def choose(self, options):
        """One of ``options``, itself (``rng.choice`` would turn a name into numpy's str_)."""
        return options[int(self.rng.integers(len(options)))]

    def pick(self, fits=lambda value: True):
        """The name of a value that ``fits`` (recent ones more often where so asked), or None."""
        names = [name for name, value in self.values.items() if fits(value)]
        if not names:
            return None
        weights = np.arange(1.0, len(names) + 1) ** 2 if self.prefer_recent else np.ones(len(names))
        return names[int(self.rng.choice(len(names), p=weights / weights.sum()))]

    def step(self, primitive_name, operands, constants=None, kwargs=None, bounded=True):
        """Append a step and compute its value; return its name.  A bounded step whose value
        leaves the bound is tanh of its latest operand instead (which keeps a chain a chain)."""
        constants, kwargs = constants or {}, kwargs or {}
        with np.errstate(all="ignore"):      # an overflow or log(0) is squashed, not reported
            value = call_mini(primitive_name, arguments(operands, constants, self.values), kwargs)
        if bounded and not np.all(np.abs(value) < self.bound):
            latest = max(operands, key=list(self.values).index)
            primitive_name, operands, constants, kwargs = "tanh", [latest], {}, {}
            value = mini.tanh(self.values[latest])
        name = f"v{len(self.steps) + 1}"
        self.steps.append((name, primitive_name, list(operands), constants, kwargs))
        self.values[name], self.reads[name] = value, 0
        for operand in operands:
            self.reads[operand] += 1
        return name

    def join_unread(self):
        """Add every value nobody read into the end, so every node has a path to it."""
        end = self.steps[-1][0]
        for name in [name for name, count in self.reads.items() if count == 0 and name != end]:
            end = self.step("add", [end, self.step("mean", [name])], bounded=False)


def _broadcasts(value, other):
    """Whether an elementwise operation can combine the two values."""
    try:
        np.broadcast_shapes(np.shape(value), np.shape(other))
        return True
    except ValueError:
        return False


# Each move appends one piece of program extending the value ``a`` and returns the name of its
# last step, or None where it does not apply to ``a`` (another move is drawn then).

def _unary(drawing, a):
    """f(a) for an elementwise f."""
    return drawing.step(drawing.choose(UNARY), [a])


def _binary(drawing, a):
    """a and a value that broadcasts with it (a itself, too), in either order."""
    b = drawing.pick(lambda value: _broadcasts(drawing.values[a], value))
    return drawing.step(drawing.choose(BINARY), [a, b] if drawing.rng.random() < 0.5 else [b, a])


def _square(drawing, a):
    """a * a: one node reading the same parent twice, two edges whose gradients add up."""
    return drawing.step("multiply", [a, a])


def _constant(drawing, a):
    """A number written into the operation, on either side (1.5 * x1 in the running example)."""
    number = round(float(drawing.rng.uniform(-2, 2)), 2)
    return drawing.step(drawing.choose(("add", "subtract", "multiply")), [a],
                        {int(drawing.rng.integers(2)): number})


def _reduce(drawing, a):
    """sum or mean over every axis or one (negative too), keeping the axes or not."""
    ndim = np.ndim(drawing.values[a])
    if ndim == 0:
        return None
    axis = None if drawing.rng.random() < 0.3 else int(drawing.rng.integers(-ndim, ndim))
    return drawing.step(drawing.choose(("sum", "mean")), [a],
                        kwargs={"axis": axis, "keepdims": bool(drawing.rng.random() < 0.5)})


def _softmax(drawing, a):
    """softmax, log_softmax or logsumexp (keeping the axis or not) along one axis."""
    ndim = np.ndim(drawing.values[a])
    if ndim == 0:
        return None
    primitive_name = drawing.choose(("softmax", "log_softmax", "logsumexp"))
    kwargs = {"axis": int(drawing.rng.integers(-ndim, ndim))}
    if primitive_name == "logsumexp":
        kwargs["keepdims"] = bool(drawing.rng.random() < 0.5)
    return drawing.step(primitive_name, [a], kwargs=kwargs)


def _matmul(drawing, a):
    """a @ b, a and b vectors or matrices whose inner lengths agree."""
    shape = np.shape(drawing.values[a])
    if len(shape) not in (1, 2):
        return None
    b = drawing.pick(lambda value: np.ndim(value) in (1, 2) and np.shape(value)[0] == shape[-1])
    return drawing.step("matmul", [a, b]) if b is not None else None


def _transpose(drawing, a):
    """a with its axes reversed."""
    return drawing.step("transpose", [a]) if np.ndim(drawing.values[a]) >= 2 else None


def _log1p_square(drawing, a):
    """log(a * a + 1): a parent read twice, a number in an operation, a log that stays defined."""
    base = _one_plus_square(drawing, a)
    return drawing.step("log", [base]) if base else None


def _power(drawing, a):
    """(a * a + 1) ** 1.5: power with a number for exponent, of a base kept positive."""
    base = _one_plus_square(drawing, a)
    return drawing.step("power", [base], {1: 1.5}) if base else None


def _one_plus_square(drawing, a):
    """a * a + 1 where it stays within the bound (a square squashed to tanh(a) would bring the
    base near 0, where log is too steep for central differences), else None."""
    if np.max(np.abs(drawing.values[a])) ** 2 + 1 >= drawing.bound:
        return None
    return drawing.step("add", [_square(drawing, a)], {1: 1.0})


def _divide(drawing, a):
    """a / b, b a value that broadcasts with a and keeps away from zero."""
    b = drawing.pick(lambda value: _broadcasts(drawing.values[a], value)
                     and np.all(np.abs(value) >= DIVISOR_FLOOR))
    return drawing.step("divide", [a, b]) if b is not None else None


MOVES = {"unary": _unary, "binary": _binary, "square": _square, "constant": _constant,
         "reduce": _reduce, "softmax": _softmax, "matmul": _matmul, "transpose": _transpose,
         "log1p_square": _log1p_square, "power": _power, "divide": _divide}
"""The moves :func:`random_program` draws from, by name; each appends one piece of program."""
