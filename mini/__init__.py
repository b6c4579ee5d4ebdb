"""mini: a small deep-learning framework for learning how gradients are computed.

    import mini
    f = lambda x1, x2: x1 + mini.exp(1.5 * x1 + 2.0 * x2)
    mini.grad(f, argnum=0)(3.0, 0.5)          # 1 + 1.5 e^5.5

The pieces, in the order the labs meet them: ``mini.graph`` (nodes, topological order, evaluation),
``mini.primitives`` (the operations and their derivatives; the linear ones in ``mini.linear``, the
table itself in ``mini.table``), ``mini.autodiff`` (reverse mode by tracing, derivatives of
derivatives; ``mini.tracing`` keeps nested traces apart and ``mini.numpy_tracing`` turns numpy
calls into primitives; the reverse pass itself, shared with ``mini.framework``, is in
``mini.reverse``), ``mini.forward`` (forward mode), ``mini.gradcheck`` (central
differences), ``mini.framework`` (a TensorFlow-v1 style static graph over the same table),
``mini.nn`` and ``mini.data`` (a sentiment classifier), ``mini.kernels`` (Numba CPU and CUDA
kernels as a backend) and ``mini.viz`` (pictures).
"""
from mini.autodiff import grad, hessian, hessian_vector_product, jacobian, make_vjp, value_and_grad
from mini.backend import get_backend, set_backend, use_backend
from mini.forward import jvp, make_jvp
from mini.gradcheck import check_grads, diagnose, numerical_grad
from mini.graph import CycleError, Node, evaluate, toposort
from mini.memory import keep_freed_memory
from mini.primitives import (
    add, axis_size, concatenate, conjugate, defjvp, defvjp, defvjp_every_argument, defvjp_zero,
    divide, dot, equal, exp, getitem, greater, greater_equal, jvp_of, jvp_table, less, less_equal,
    log, log_softmax, logsumexp, matmul, maximum, mean, multiply, negative, not_equal, one_hot,
    ones_like, power, primitive, relu, reshape, sigmoid, softmax, sqrt, stack, subtract, sum, take,
    tanh, transpose, vjp_of, vjp_table, where, zeros_like,
)
from mini.reverse import add_outgrads, backward_pass

__all__ = [
    # reverse mode (mini.reverse, mini.autodiff) and forward mode (mini.forward)
    "add_outgrads", "backward_pass", "grad", "hessian", "hessian_vector_product", "jacobian",
    "make_vjp", "value_and_grad", "jvp", "make_jvp",
    # central differences (mini.gradcheck)
    "check_grads", "diagnose", "numerical_grad",
    # graphs (mini.graph)
    "CycleError", "Node", "evaluate", "toposort",
    # backends (mini.backend)
    "get_backend", "set_backend", "use_backend",
    # the primitives and their derivatives (mini.primitives, mini.table)
    "add", "axis_size", "concatenate", "conjugate", "defjvp", "defvjp", "defvjp_every_argument",
    "defvjp_zero", "divide", "dot", "equal", "exp", "getitem", "greater", "greater_equal",
    "jvp_of", "jvp_table", "less", "less_equal", "log", "log_softmax", "logsumexp", "matmul",
    "maximum", "mean", "multiply", "negative", "not_equal", "one_hot", "ones_like", "power",
    "primitive", "relu", "reshape", "sigmoid", "softmax", "sqrt", "stack", "subtract", "sum",
    "take", "tanh", "transpose", "vjp_of", "vjp_table", "where", "zeros_like",
]

keep_freed_memory()     # each training step reuses what the one before freed (mini.memory)
