"""Hidden checks of lab4_framework, the grader half: session_run, the student's own Operation,
gradients, sgd_update, minimize, numerical_gradients, the classifier, the two optimisation
passes (fold_constants with prune, and eliminate_common_subexpressions with signature and
optimize) and place.

A graph crosses to the student half as a description, plain data (:mod:`autograder.probes.lab4`
builds it there with :mod:`autograder.probes.lab4_graphs`, calls the student's function, and
describes what that function built); here it is built again with mini's primitives, run by mini's Session,
differentiated by mini's gradients, against mini's own version of the fill-in on another copy.  A
check of one fill-in gets the others as data or as calls answered here, for that case only: the
backward graph session_run runs is described, sgd_update's forward is fed gradient values computed
here, the optimizer's update in session_run's training run asks here for each step,
build_training_step gets a ``minimize`` that only records its call (and minimize gets such
``gradients`` and ``sgd_update``), numerical_gradients gets a ``session_run`` answered here, and the
passes after the first get ``prune`` and ``fold_constants`` answered here.  Devices are read from
what ``place`` set on the nodes, and session_run's backends record in the student's process only.

One module per group of fill-ins (:mod:`.session`, :mod:`.gradients` with sgd_update,
:mod:`.extensions` with the Operation, minimize and numerical_gradients, :mod:`.classifier`,
:mod:`.passes`); the graphs they draw, describe and build again in
:mod:`.graphs`.  Every function here is a function of its arguments, safe in several threads at
once.
"""
from autograder.checks.lab4 import classifier, extensions, gradients, passes, session

CHECKS = {
    "session_run": session.CHECKS,
    "operation": extensions.CHECKS["operation"],
    **gradients.CHECKS,
    "minimize": extensions.CHECKS["minimize"],
    "gradient_check": extensions.CHECKS["gradient_check"],
    "classifier": classifier.CHECKS,
    **passes.CHECKS,
}
