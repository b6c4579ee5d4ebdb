"""Lab 3's checks of numerical_grad, against mini.grad (the analytic gradient) and
mini.numerical_grad (the formula itself, for a large step h)."""
import numpy as np

import mini
from autograder.checks import Case
from autograder.checks.lab3.shared import _dims, _shape
from autograder.probes.lab3 import program_function

# ---------------------------------------------------------------------------------------------
# numerical_grad, against mini.grad (analytic) and mini.numerical_grad (the formula itself)
# ---------------------------------------------------------------------------------------------

NUMERICAL_HINT = ("entry i of the result is slide 30's central difference along entry i alone, "
                  "with the other entries of x as they were, computed in float64; the result has "
                  "x's shape.")


def _numerical_case(what, steps, x, expected, hint=NUMERICAL_HINT, h=None, report_x=False):
    def expected_value():
        gradient = expected()
        return {"gradient": gradient, "x after the call": x} if report_x else gradient

    return Case(what=what, probe="numerical_gradient",
                inputs={"steps": steps, "x": x, "h": h, "report_x": report_x},
                expected=expected_value, rtol=1e-5, atol=1e-6, hint=hint)


def _analytic(steps, x):
    return lambda: mini.grad(program_function(steps))(np.asarray(x, dtype=np.float64))


def check_numerical_vector(rng):
    m, n = _dims(rng, 2, high=6)
    A, b, c, d = (rng.standard_normal((m, n)), rng.standard_normal(m), rng.standard_normal(m),
                  rng.uniform(0.5, 2.0, size=n))
    steps = [("u", "matmul", ["x"], {0: A}, {}), ("z", "add", ["u"], {1: b}, {}),
             ("t", "tanh", ["z"], {}, {}), ("ct", "multiply", ["t"], {0: c}, {}),
             ("s1", "sum", ["ct"], {}, {}), ("xx", "multiply", ["x", "x"], {}, {}),
             ("dxx", "multiply", ["xx"], {0: 0.5 * d}, {}), ("s2", "sum", ["dxx"], {}, {}),
             ("f", "add", ["s1", "s2"], {}, {})]
    x = rng.standard_normal(n)
    return _numerical_case(f"numerical_grad(f, x) for f(x) = sum(c * tanh(A @ x + b)) + "
                           f"0.5 sum(d * x * x), x of shape {x.shape}, against the analytic "
                           "gradient", steps, x, _analytic(steps, x))


def check_numerical_matrix(rng):
    shape = _shape(rng, ndims=(2,), low=2)
    C, D = rng.standard_normal(shape), rng.standard_normal(shape)
    steps = [("xx", "multiply", ["x", "x"], {}, {}), ("p", "add", ["xx"], {0: 1.0}, {}),
             ("l", "log", ["p"], {}, {}), ("lc", "multiply", ["l"], {1: C}, {}),
             ("s1", "sum", ["lc"], {}, {}), ("x3", "multiply", ["x"], {0: 0.3}, {}),
             ("e", "exp", ["x3"], {}, {}), ("ed", "multiply", ["e"], {1: D}, {}),
             ("s2", "sum", ["ed"], {}, {}), ("f", "add", ["s1", "s2"], {}, {})]
    X = rng.standard_normal(shape)
    return _numerical_case(f"numerical_grad(f, X) for f(X) = sum(log(1 + X^2) * C) + "
                           f"sum(exp(0.3 X) * D), X of shape {shape}, and X after the call",
                           steps, X, _analytic(steps, X), report_x=True,
                           hint=NUMERICAL_HINT + " The caller's x must be unchanged afterwards "
                           "(np.asarray returns x itself when it is already float64).")


def check_numerical_scalar(rng):
    a, b = float(rng.uniform(-1, 1)), float(rng.uniform(-1, 1))
    steps = [("ax", "multiply", ["x"], {0: a}, {}), ("e", "exp", ["ax"], {}, {}),
             ("t", "tanh", ["x"], {}, {}), ("et", "multiply", ["e", "t"], {}, {}),
             ("xx", "multiply", ["x", "x"], {}, {}), ("bxx", "multiply", ["xx"], {0: b}, {}),
             ("f", "add", ["et", "bxx"], {}, {})]
    x = float(rng.uniform(-2, 2))
    return _numerical_case(f"numerical_grad(f, x) for f(x) = exp({a:.3g} x) tanh(x) + {b:.3g} x^2 "
                           f"at the Python float x = {x:.4g}", steps, x, _analytic(steps, x),
                           hint=NUMERICAL_HINT + " A Python float is x of shape (), with one "
                           "entry: the result is then an array of shape ().")


def check_numerical_float32(rng):
    n = int(rng.integers(2, 6))
    A, b = rng.standard_normal((n, n)), rng.standard_normal(n)
    steps = [("u", "matmul", ["x"], {0: A}, {}), ("z", "add", ["u"], {1: b}, {}),
             ("t", "tanh", ["z"], {}, {}), ("f", "sum", ["t"], {}, {})]
    x32 = rng.standard_normal(n).astype(np.float32)
    return _numerical_case(f"numerical_grad(f, x) for f(x) = sum(tanh(A @ x + b)) with x a float32 "
                           f"array of shape ({n},)", steps, x32, _analytic(steps, x32),
                           hint="compute in float64 whatever dtype x has (L05 slide 30): in "
                           "float32, x + 1e-6 is x rounded to about 7 digits, so the difference "
                           "quotient is mostly rounding error.")


def _cubic(rng, n):
    """Steps of f(x) = sum(x ** 3) + (a . x) ** 3: its central differences are exact up to the
    h^2 terms, and through a . x every entry's depends on all the others."""
    a = rng.uniform(0.5, 1.5, size=n) * rng.choice([-1.0, 1.0], size=n)
    steps = [("xx", "multiply", ["x", "x"], {}, {}), ("x3", "multiply", ["xx", "x"], {}, {}),
             ("s", "sum", ["x3"], {}, {}), ("ax", "matmul", ["x"], {0: a}, {}),
             ("ax2", "multiply", ["ax", "ax"], {}, {}), ("ax3", "multiply", ["ax2", "ax"], {}, {}),
             ("f", "add", ["s", "ax3"], {}, {})]
    return steps


def check_numerical_step(rng):
    x = rng.uniform(-2, 2, size=int(rng.integers(2, 6)))
    h = float(rng.choice([0.5, 0.25, 0.1]))
    steps = _cubic(rng, x.size)
    return _numerical_case(f"numerical_grad(f, x, h={h}) for f(x) = sum(x ** 3) + (a . x) ** 3, x "
                           f"of shape {x.shape}: with this large h the central difference is "
                           "far from the derivative, and exactly what it must be",
                           steps, x, lambda: mini.numerical_grad(program_function(steps), x, h=h),
                           h=h, hint="use the h you are given, and the CENTRAL difference "
                                     "(f(x + h e_i) - f(x - h e_i)) / (2h): the one-sided "
                                     "(f(x + h e_i) - f(x)) / h differs from it by about h f''/2.")


def check_numerical_puts_entries_back(rng):
    x = rng.uniform(-2, 2, size=int(rng.integers(3, 7)))
    h = float(rng.choice([0.5, 0.25]))
    steps = _cubic(rng, x.size)
    return _numerical_case(f"numerical_grad(f, x, h={h}) for f(x) = sum(x ** 3) + (a . x) ** 3, x "
                           f"of shape {x.shape}, and x after the call: every entry of f's "
                           "gradient depends on all of x, so each difference must be taken with "
                           "the other entries as they were", steps, x,
                           lambda: mini.numerical_grad(program_function(steps), x, h=h), h=h,
                           report_x=True,
                           hint="after the two shifted evaluations of entry i, put x[i] back "
                                "before you shift the next entry; and shift a copy, so that the "
                                "caller's x is unchanged.")


CHECKS = {
    "vectors, matrices and numbers": (4, [check_numerical_vector, check_numerical_matrix,
                                          check_numerical_scalar]),
    "float32 inputs": (1, [check_numerical_float32]),
    "the step h it is given": (1, [check_numerical_step]),
    "every entry put back after its differences": (2, [check_numerical_puts_entries_back]),
}
