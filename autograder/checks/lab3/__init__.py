"""Hidden checks of lab3_autodiff (the tracer, add_outgrads, the student's VJP table: unbroadcast,
elementwise, shape-moving and log_softmax VJPs; backward_pass, make_vjp, grad, numerical_grad and
forward mode): the grader half.

Programs are drawn from the seed as plain data; the student half (:mod:`autograder.probes.lab3`)
runs them with the student's functions and answers with numbers and node names.  Expected values
come from mini's reference (its tracer, VJP and JVP tables, ``backward_pass``, ``make_vjp``,
``grad``, ``jacobian``, ``make_jvp``, ``numerical_grad``) run here on the same programs; no
expected number is written here but what a contract itself fixes (zeros for a function that
ignores x; one trace).  A check of one fill-in hands the student's code stand-ins for
the fill-ins it builds on, so one mistake costs only its own points, and none of them computes an
answer where the student's code runs:

* the tracer: the probe describes the graph the student's Box recorded (node by node, in lab 2's
  topological order); here it is rebuilt with mini's Box and compared with mini's own trace,
  gradients included;
* the VJP table: each entry is called directly, on every broadcasting, axis and keepdims
  variant, with ``unbroadcast`` answered here;
* backward_pass: a graph pre-traced from the program in the student's process, its nodes' funs
  keys of a table whose VJPs apply each node's local Jacobians (data computed here, never a
  gradient the check compares); mini's toposort (lab 2 is revealed); add_outgrads adds shares
  here;
* make_vjp: a Box that only makes the start node, a fun that returns a graph pre-traced from data
  hanging off it, and a backward_pass answered here; grad and jacobian_reverse: a make_vjp whose
  value is data and whose vjp(g) is answered here;
* forward mode: the JVP table alone; Dual, jvp and jacobian_forward with JVPs answered here.

The probes count how often the functions they hand out run: make_vjp traces once however often
its vjp is called, and each Jacobian traces as often as its mode needs.

One module per group of fill-ins: :mod:`.tracing` (the tracer, add_outgrads), :mod:`.vjps` (the
VJP table: unbroadcast, elementwise_vjps, shape_vjps, log_softmax_vjp), :mod:`.reverse`
(backward_pass, make_vjp, grad), :mod:`.numerical` (numerical_grad) and :mod:`.forward`
(forward_mode: the JVP table, jvp, jacobian_forward and jacobian_reverse); the helpers several of
them use in :mod:`.shared`.
"""
from autograder.checks.lab3 import forward, numerical, reverse, tracing, vjps
from autograder.checks.lab3.forward import (JVP_TABLE_CHECKS, check_jvp_fan_out, check_jvp_layer)
from autograder.checks.lab3.numerical import (check_numerical_puts_entries_back,
                                              check_numerical_step)
from autograder.checks.lab3.reverse import _random_program, check_make_vjp_matrix
from autograder.checks.lab3.vjps import ELEMENTWISE_CHECKS, check_getitem_vjp

__all__ = ["CHECKS", "ELEMENTWISE_CHECKS", "JVP_TABLE_CHECKS", "_random_program",
           "check_getitem_vjp", "check_jvp_fan_out", "check_jvp_layer", "check_make_vjp_matrix",
           "check_numerical_puts_entries_back", "check_numerical_step"]

CHECKS = {
    **tracing.CHECKS,
    **vjps.CHECKS,
    **reverse.CHECKS,
    "numerical_grad": numerical.CHECKS,
    "forward_mode": forward.CHECKS,
}
