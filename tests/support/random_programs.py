"""Random programs of autograder.checks.programs as a hypothesis strategy, and each as a loss run
with mini or, step by step, with autograd.numpy (mini's primitives written with it)."""
import autograd.numpy as anp
import numpy as np
from hypothesis import strategies as st

from autograder.checks.programs import MOVES, call_mini, random_program, run_steps


def a_logsumexp(x, axis=None, keepdims=False):
    """logsumexp in autograd.numpy (its scipy wrapper would pull in scipy)."""
    m = anp.max(x, axis=axis, keepdims=True)
    out = m + anp.log(anp.sum(anp.exp(x - m), axis=axis, keepdims=True))
    return out if keepdims else anp.squeeze(out, axis=axis)


AUTOGRAD = {   # mini's primitives, by name, written with autograd.numpy
    "add": anp.add, "subtract": anp.subtract, "multiply": anp.multiply, "divide": anp.divide,
    "power": anp.power, "maximum": anp.maximum, "negative": anp.negative, "exp": anp.exp,
    "log": anp.log, "tanh": anp.tanh, "sum": anp.sum, "mean": anp.mean, "matmul": anp.matmul,
    "transpose": anp.transpose, "logsumexp": a_logsumexp,
    "sigmoid": lambda x: 0.5 * (anp.tanh(0.5 * x) + 1),
    "relu": lambda x: anp.maximum(x, 0.0),
    "log_softmax": lambda x, axis=-1: x - a_logsumexp(x, axis=axis, keepdims=True),
    "softmax": lambda x, axis=-1: anp.exp(x - a_logsumexp(x, axis=axis, keepdims=True)),
}


def autograd_call(primitive_name, args, kwargs):
    """Run a program's step with autograd.numpy instead of mini (see programs.run_steps)."""
    return AUTOGRAD[primitive_name](*args, **kwargs)


@st.composite
def programs(draw, shapes=st.lists(st.integers(1, 4), min_size=1, max_size=3)):
    """A random program over an input x of a drawn shape and c, broadcasting against it, with
    every move; operands drawn from every value so far, so values fan out, and every value joined
    into the end.  Hypothesis draws the shape, the length and the seed, and shrinks them."""
    shape = tuple(draw(shapes))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return random_program(rng, [("x", shape), ("c", shape[-1:])], draw(st.integers(1, 8)),
                          dict.fromkeys(MOVES, 1), prefer_recent=False, join_unread=True)


def loss_of(program, call=call_mini):
    """The program as a function of its input x (c fixed): sum(end * end), each step run with
    ``call``."""
    inputs, steps = program

    def loss(x):
        end = run_steps(steps, {**dict(inputs), "x": x}, call)[steps[-1][0]]
        return call("sum", [call("multiply", [end, end], {})], {})
    return loss
