"""Switching off mini's references while a lab is graded (``autograder.guard``).

Lab 3 asks for ``backward_pass``, ``numerical_grad`` and others that mini ships: while its checks
run, every way a submission can hold mini's versions must raise ReferenceDisabled (the function's
code is swapped, so a name, an alias, a default argument, a closure, a list, a dict, an instance,
a partial, a bound method or a subclass all reach the stub); afterwards all of it works again.
The checks' own stand-ins are detached copies that keep working.  The pytest path's worker
switches the references off for good before student code runs.
"""
import functools
import re
import subprocess
import sys
import types

import nbformat
import numpy as np
import pytest

import mini
import mini.framework as fw
from autograder import guard, runner
from autograder.checks import checks_of, lab3
from autograder.hidden import grade

LAB = "lab3_autodiff"


def _notebook(source):
    namespace = {"__name__": "__main__"}
    exec(source, namespace)
    return namespace


HOLDS = (   # each defines hold(): a way to reach mini.numerical_grad, kept before any check runs
    "from mini import numerical_grad as hold\n",
    "import mini.gradcheck\ndef hold(f, x, _ng=mini.gradcheck.numerical_grad):\n    return _ng(f, x)\n",
    "import mini\ndef hold(f, x, *, ng=mini.numerical_grad):\n    return ng(f, x)\n",
    "import mini\ndef keep(ng):\n    return lambda f, x: ng(f, x)\nhold = keep(mini.numerical_grad)\n",
    "import mini\nclass Stash:\n    ng = mini.numerical_grad\nhold = Stash.ng\n",
    "import mini\n_kept = [mini.numerical_grad]\ndef hold(f, x):\n    return _kept[0](f, x)\n",
    "import mini\n_kept = {'ng': mini.numerical_grad}\ndef hold(f, x):\n    return _kept['ng'](f, x)\n",
    "import mini\ndef hold(f, x, _k=(mini.numerical_grad,)):\n    return _k[0](f, x)\n",
    "import mini, types\n_k = types.SimpleNamespace(ng=mini.numerical_grad)\nhold = lambda f, x: _k.ng(f, x)\n",
    "import mini, functools\nhold = functools.partial(mini.numerical_grad)\n",
    "import mini, builtins\nbuiltins._kept_ng = mini.numerical_grad\nhold = lambda f, x: builtins._kept_ng(f, x)\n",
)
HOLD_IDS = ["alias", "default", "keyword-only default", "closure", "class attribute", "list",
            "dict", "tuple default", "instance attribute", "partial", "builtins"]


@pytest.mark.parametrize("source", HOLDS, ids=HOLD_IDS)
def test_every_hold_on_a_reference_raises_while_it_is_off_and_works_after(source):
    namespace = _notebook(source)
    x = np.array([0.3, -1.2])
    code = mini.numerical_grad.__code__
    with guard.reference_disabled(LAB):
        with pytest.raises(guard.ReferenceDisabled, match=r"^mini\.numerical_grad is mini's "
                                                          "reference for what lab3_autodiff asks "
                                                          "you to write"):
            namespace["hold"](lambda v: np.sum(v ** 2), x)
        with pytest.raises(guard.ReferenceDisabled, match=r"^mini\.backward_pass is mini's"):
            mini.autodiff.backward_pass(1.0, None)
    assert mini.numerical_grad.__code__ is code
    assert np.allclose(namespace["hold"](lambda v: np.sum(v ** 2), x), 2 * x)


@pytest.mark.parametrize("source", HOLDS, ids=HOLD_IDS)
def test_the_hidden_checks_fail_a_numerical_grad_built_on_a_kept_reference(source):
    namespace = _notebook(source + "def numerical_grad(f, x, *args, **kwargs):\n"
                                   "    return hold(f, x)\n")
    with pytest.raises(AssertionError, match="raised ReferenceDisabled: mini.numerical_grad is "
                                             "mini's reference"):
        grade(LAB, "numerical_grad", namespace, seed=4)
    x = np.array([0.3, -1.2])                  # and the notebook works again afterwards
    assert np.allclose(namespace["numerical_grad"](lambda v: np.sum(v ** 2), x), 2 * x)


def test_a_copy_of_the_code_is_the_students_own_a_hold_on_the_function_is_not():
    """What the guard can and cannot tell apart: the same code, detached from mini (what a
    student who wrote it has), passes; calling mini's function object loses the points."""
    alias = _notebook("from mini import backward_pass as bp\n"
                      "def backward_pass(g, end_node):\n    return bp(g, end_node)\n")
    with pytest.raises(AssertionError, match="raised ReferenceDisabled: mini.backward_pass is "
                                             "mini's reference"):
        grade(LAB, "backward_pass", alias, seed=5)
    reference = mini.autodiff.backward_pass         # its code, among names of the student's own
    names = vars(guard.detached("mini.autodiff")[0])
    own = types.FunctionType(reference.__code__, names, "backward_pass", reference.__defaults__)
    grade(LAB, "backward_pass", {"__name__": "__main__", "backward_pass": own}, seed=5)


def test_detached_copies_keep_working_while_the_originals_are_off():
    ref, = guard.detached("mini.autodiff")
    f = lambda x: mini.sum(mini.tanh(x) * x)          # noqa: E731
    x = np.array([0.5, -1.0, 2.0])
    expected = mini.grad(f)(x)
    with guard.reference_disabled(LAB):
        with pytest.raises(guard.ReferenceDisabled):
            mini.grad(f)(x)
        np.testing.assert_array_equal(ref.grad(f)(x), expected)       # grad -> make_vjp ->
        np.testing.assert_array_equal(ref.make_vjp(f, x)[0](1.0), expected)  # backward_pass ->
    assert ref.grad is not mini.grad and ref.backward_pass is not mini.backward_pass  # vjp_of


def test_copies_detached_while_a_reference_is_off_run_its_own_code():
    with guard.reference_disabled(LAB):
        ref, = guard.detached("mini.autodiff")
        np.testing.assert_allclose(ref.grad(lambda x: x * x)(3.0), 6.0)


def test_a_method_switched_off_reaches_bound_methods_subclasses_and_lists():
    class Mine(fw.Session):
        pass

    with fw.Graph().as_default() as graph:
        x = fw.Placeholder((), "x")
        y = x * 2.0
    session = fw.Session(graph)
    holds = [session.run, Mine(graph).run, [fw.Session.run][0].__get__(session)]
    message = "fw.Session.run is off for this test"
    with guard.switched_off({fw.Session.__dict__["run"]: message}):
        for run in holds:
            with pytest.raises(guard.ReferenceDisabled, match=message):
                run(y, {x: 1.5})
    assert [run(y, {x: 1.5}) for run in holds] == [3.0, 3.0, 3.0]


def test_a_primitive_is_switched_off_through_its_function():
    kept = [mini.softmax]
    u = np.array([[1.0, 2.0, 0.5]])
    expected = mini.softmax(u, axis=-1)
    with guard.reference_disabled("lab1_learning"):
        with pytest.raises(guard.ReferenceDisabled, match="mini.softmax is mini's reference for "
                                                          "what lab1_learning asks"):
            kept[0](u, axis=-1)
        with pytest.raises(guard.ReferenceDisabled):
            mini.grad(lambda v: mini.sum(v))(u)
    np.testing.assert_array_equal(kept[0](u, axis=-1), expected)


def test_switches_nest_and_leave_each_function_as_they_found_it():
    code = mini.backward_pass.__code__
    outer = guard.switch_off(LAB)
    with guard.reference_disabled(LAB):
        assert mini.backward_pass.__code__ is not code
    assert mini.backward_pass.__code__ is not code          # still off: the outer switch holds it
    with outer.back():
        assert mini.backward_pass.__code__ is code
    assert mini.backward_pass.__code__ is not code
    outer.on()
    assert mini.backward_pass.__code__ is code


def test_a_function_with_free_variables_can_be_switched_off():
    def make(scale):
        return lambda v: scale * v
    triple = make(3.0)
    kept = [triple]
    with guard.switched_off({triple: "triple is off"}):
        with pytest.raises(guard.ReferenceDisabled, match="triple is off"):
            kept[0](2.0)
    assert kept[0](2.0) == 6.0


def test_only_python_functions_can_be_switched_off():
    with pytest.raises(TypeError, match="cannot switch off <ufunc 'exp'>: not a Python function"):
        guard.Switch({np.exp: "no"})


def _lab3_namespace(up_to):
    """The lab 3 solution's names, as a student's kernel has them once the fill-in ``up_to`` ran."""
    path = runner.REPO / "solutions" / LAB / f"{LAB}.ipynb"
    cells = nbformat.read(path, as_version=4).cells
    namespace = {"__name__": "__main__"}
    for index, source, fill_in in runner.cells_to_run(path, LAB):
        if fill_in is None:                     # not a test cell
            exec(compile(source, f"<cell {index}>", "exec"), namespace)
        if cells[index].metadata.get("nbgrader", {}).get("grade_id") == up_to:
            return namespace
    raise LookupError(up_to)


def test_a_vjp_of_minis_table_kept_in_a_list_is_off_while_the_table_is_checked():
    namespace = _lab3_namespace("elementwise_vjps")
    grade(LAB, "elementwise_vjps", namespace, seed=2)        # the solution's own table passes
    exec("import mini\n_kept = [mini.vjp_of(mini.exp, 0)]\n"
         "vjps[mini.exp] = {0: lambda g, ans, x: _kept[0](g, ans, x)}\n", namespace)
    with pytest.raises(AssertionError, match=r"raised ReferenceDisabled: in vjps\[mini.exp\]"
                                              r"\[0\].*: mini's VJP of exp \(0\), from "
                                              "mini.vjp_table, is mini's reference"):
        grade(LAB, "elementwise_vjps", namespace, seed=2)


@pytest.mark.parametrize("source", [
    "import mini.autodiff\nclass Box(mini.autodiff.Box):\n    pass\n",
    "import mini\nBox = next(c for c in mini.Node.__subclasses__() if c.__name__ == 'Box')\n",
    "import mini, mini.tracing\nclass Box(mini.Node, mini.tracing.TracedValue):\n"
    "    __slots__ = ('trace',)\n"
    "    def record(self, prim, kwargs, values, traced, argnums, outer):\n"
    "        return type(self)(prim.fun(*values, **kwargs), prim, tuple(values), kwargs, traced,"
    " argnums)\n",
], ids=["subclass of mini's Box", "mini's Box itself", "mini's traced value"])
def test_a_box_with_minis_apply_or_operators_gets_no_tracer_points(source):
    with pytest.raises(AssertionError, match=r"Box\.(apply|__add__) is mini\.[\w.]+, mini's own: "
                                             "write apply and the operators in your Box"):
        grade(LAB, "tracer", _notebook(source), seed=1)


def test_the_pytest_path_worker_switches_the_references_off_for_good():
    script = (f"import sys; sys.path.insert(0, {str(runner.REPO)!r})\n"
              "import mini\nfrom autograder import guard\nfrom autograder.checks import lab3\n"
              "kept = [mini.backward_pass, mini.make_jvp]\n"
              "switch = guard.switch_off('lab3_autodiff')\n"
              "for function in kept:\n"
              "    try:\n        function(1.0, None)\n"
              "    except guard.ReferenceDisabled as error:\n        print(error)\n"
              "with switch.back():\n"
              "    print(mini.grad(lambda x: x * x)(3.0))\n"
              "try:\n    mini.grad(lambda x: x * x)(3.0)\n"
              "except guard.ReferenceDisabled as error:\n    print(error)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [re.match(r"(mini\.\w+) is mini's reference for what lab3_autodiff asks you to write",
                     line)[1] for line in (lines[0], lines[1], lines[3])] == [
        "mini.backward_pass", "mini.make_jvp", "mini.grad"], lines
    assert lines[2] == "6.0"


def test_every_reference_of_every_lab_is_a_function_that_can_be_switched_off():
    for lab in ("lab1_learning", "lab2_graphs", "lab3_autodiff", "lab4_framework", "lab5_kernels"):
        checks_of(lab)
        switch = guard.switch_off(lab)
        switch.on()
    assert checks_of(LAB) is lab3.CHECKS
