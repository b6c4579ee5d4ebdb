"""Switching off mini's references while a lab is graded (``autograder.guard``).

Lab 3 asks for ``backward_pass``, ``numerical_grad`` and others that mini ships: while its checks
run, every way a submission can reach mini's versions must raise ReferenceDisabled, in mini's
submodules (``mini.autodiff.backward_pass``, not only ``mini.backward_pass``), under the
notebook's own aliases, and through what the notebook's functions captured; afterwards all of it
is back.  The pytest path's worker switches them off for good before student code runs.
"""
import importlib
import re
import subprocess
import sys
import types

import numpy as np
import pytest

import mini
import mini.gradcheck
from autograder import guard, runner
from autograder.checks import checks_of, lab3
from autograder.hidden import grade

LAB = "lab3_autodiff"


def _references():
    """``{dotted name: the function}`` of every reference lab 3 switches off."""
    checks_of(LAB)
    return {dotted: getattr(importlib.import_module(dotted.rsplit(".", 1)[0]),
                            dotted.rsplit(".", 1)[1]) for dotted in lab3.REFERENCE}


def _notebook(source):
    namespace = {"__name__": "__main__"}
    exec(source, namespace)
    return namespace


def _mini_globals():
    return {(key, name): value for key, module in list(sys.modules.items())
            if key.split(".")[0] == "mini" for name, value in vars(module).items()}


def test_every_mini_module_and_notebook_alias_is_stubbed_then_restored():
    references = _references()
    originals = {id(function) for function in references.values()}
    before = _mini_globals()
    namespace = _notebook("from mini import backward_pass as bp\n"
                          "from mini.autodiff import backward_pass\n"
                          "from mini.gradcheck import numerical_grad as ng\n")
    kept = dict(namespace)
    with guard.reference_disabled(LAB, namespace):
        left = [place for place, value in _mini_globals().items() if id(value) in originals]
        assert left == [], f"still the reference while lab 3 is graded: {left}"
        for call in (mini.autodiff.backward_pass, mini.backward_pass, namespace["bp"],
                     namespace["backward_pass"]):
            with pytest.raises(guard.ReferenceDisabled, match=r"^mini\.(autodiff\.)?backward_pass "
                                                              "is mini's reference for what "
                                                              "lab3_autodiff asks you to write"):
                call(1.0, None)
        with pytest.raises(guard.ReferenceDisabled, match="numerical_grad is mini's reference"):
            namespace["ng"](np.sin, np.zeros(2))
    assert _mini_globals() == before
    assert namespace == kept


@pytest.mark.parametrize("source", [
    "import mini.gradcheck\n"
    "def numerical_grad(f, x, *a, _ng=mini.gradcheck.numerical_grad, **k):\n"
    "    return _ng(f, x, *a, **k)\n",
    "import mini.gradcheck\n"
    "def numerical_grad(f, x, *a, ng=mini.gradcheck.numerical_grad, **k):\n"
    "    return ng(f, x, *a, **k)\n",
    "import mini\n"
    "def numerical_grad(f, x, *a, _ng=mini.numerical_grad, **k):\n"
    "    return _ng(f, x, *a, **k)\n",
    "def keep(ng):\n"
    "    def numerical_grad(f, x, *a, **k):\n"
    "        return ng(f, x, *a, **k)\n"
    "    return numerical_grad\n"
    "import mini\nnumerical_grad = keep(mini.numerical_grad)\ndel keep\n",
    "import mini\nclass Stash:\n    ng = mini.numerical_grad\n"
    "def numerical_grad(f, x, *a, **k):\n    return Stash.ng(f, x, *a, **k)\n",
], ids=["keyword default", "keyword-only default", "top-level name", "closure", "class attribute"])
def test_a_reference_captured_before_the_hidden_checks_is_switched_off_too(source):
    namespace = _notebook(source)
    with pytest.raises(AssertionError, match="raised ReferenceDisabled: mini.(gradcheck.)?"
                                             "numerical_grad is mini's reference"):
        grade(LAB, "numerical_grad", namespace, seed=4)
    x = np.array([0.3, -1.2])                  # and the notebook works again afterwards
    assert np.allclose(namespace["numerical_grad"](lambda v: np.sum(v ** 2), x), 2 * x)


def test_the_hidden_checks_fail_an_alias_and_pass_a_copy_of_the_reference():
    """The nbgrader path: ``from mini import backward_pass as bp`` then calling bp loses the
    points; the same code, detached from mini (what a student who wrote it has), passes."""
    alias = _notebook("from mini import backward_pass as bp\n"
                      "def backward_pass(g, end_node):\n    return bp(g, end_node)\n")
    with pytest.raises(AssertionError, match="raised ReferenceDisabled: mini.backward_pass is "
                                             "mini's reference"):
        grade(LAB, "backward_pass", alias, seed=5)
    reference = mini.autodiff.backward_pass
    own = types.FunctionType(reference.__code__, dict(vars(sys.modules[reference.__module__])),
                             "backward_pass", reference.__defaults__)
    grade(LAB, "backward_pass", {"__name__": "__main__", "backward_pass": own}, seed=5)


def test_the_pytest_path_worker_switches_the_references_off_in_every_mini_module():
    script = (f"import sys; sys.path.insert(0, {str(runner.REPO)!r})\n"
              "import importlib, mini, mini.autodiff, mini.gradcheck\n"
              "from autograder import guard\nfrom autograder.checks import lab3\n"
              "originals = {id(getattr(importlib.import_module(d.rsplit('.', 1)[0]),"
              " d.rsplit('.', 1)[1])) for d in lab3.REFERENCE}\n"
              "guard.disable_reference('lab3_autodiff')\n"
              "left = [(k, n) for k, m in list(sys.modules.items()) if k.split('.')[0] == 'mini'"
              " for n, v in vars(m).items() if id(v) in originals]\n"
              "assert left == [], left\n"
              "try:\n    mini.autodiff.backward_pass(1.0, None)\n"
              "except guard.ReferenceDisabled as error:\n    print(error)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.match(r"mini\.(autodiff\.)?backward_pass is mini's reference for what "
                    "lab3_autodiff asks you to write", done.stdout), done.stdout
