"""Student editions of mini: every marked answer of a withheld lab is left out, and nothing else.

The edit is checked on small modules made for it (each kind of mark, each shape of function),
and on mini itself: for every lab, the edition its graders and its students get holds no working
answer of a lab it withholds (by AST: each marked body is one call that raises), no line of such
an answer from solutions/, imports, and says which lab asks for what is missing.
"""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mini
import mini.framework  # noqa: F401 (every module that marks answers, imported)
import mini.kernels.sparse  # noqa: F401
import mini.nn  # noqa: F401
from autograder import edition
from autograder.labs import ALSO_WITHHOLDS, LABS, needs, short_name, withheld_marks
from mini.answers import ANSWERS, AnswerWithheld
from support import ROOT
from support.answer_search import code_passages, solution_passages, working_answers


def _run(text, call, withheld=("lab3",), also=None):
    """Execute the edited ``text`` and return what ``call`` (an expression) gives or raises."""
    edited = edition.stubbed(textwrap.dedent(text), set(withheld), "mini/example.py", also)
    namespace = {}
    exec(compile(edited, "<edition>", "exec"), namespace)
    try:
        return eval(call, namespace)
    except AnswerWithheld as error:
        return error


MODULE = '''
    """A module of mini."""
    from mini.answers import answer, answers

    def given(x):
        return x + 1

    @answer("lab3", "backward_pass")
    def backward_pass(g, end):
        """Its docstring says how: it goes."""
        # how it is done: these comments go with the body
        total = g * 2
        return total   # and this one

    @answer("lab3", "tracer")
    def one_line(x): return x * 3

    @answer("lab3", "tracer")
    def documented_only(x):
        """Nothing but a docstring."""

    @answer("lab2", "toposort")
    def revealed(x):
        """A revealed answer's docstring stays."""
        return x - 1

    @answer("lab3", "tracer")
    class Box:
        scale = property(lambda self: 4)

        def __init__(self, value):
            self.value = value

        def __add__(self, other): return self.value + other

    table = {}
    with answers("lab3", "elementwise_vjps"):
        table["exp"] = (lambda g, ans, x: g * ans,)
'''


@pytest.mark.parametrize("call, problem", [
    ("backward_pass(1.0, None)", "lab 3 asks you to write backward_pass"),
    ("one_line(2)", "mini.example.one_line"),
    ("documented_only(2)", "documented_only"),
    ("Box(1)", "mini.example.Box.__init__"),
    ("table['exp'][0](1.0, 2.0, 3.0)", "elementwise_vjps"),
])
def test_each_kind_of_marked_answer_raises_naming_the_lab_and_the_fill_in(call, problem):
    raised = _run(MODULE, call)
    assert isinstance(raised, AnswerWithheld) and problem in str(raised), raised


def test_what_is_not_withheld_works_and_its_docstrings_stay():
    assert _run(MODULE, "given(1)") == 2
    assert _run(MODULE, "revealed(5)") == 4
    assert _run(MODULE, "revealed.__doc__") == "A revealed answer's docstring stays."
    assert _run(MODULE, "__doc__") == "A module of mini."
    assert _run(MODULE, "backward_pass.__doc__", withheld=()) == "Its docstring says how: it goes."
    assert _run(MODULE, "(backward_pass(1.0, None), 1)[1]", withheld=()) == 1


def test_the_body_and_its_comments_are_gone_from_the_text():
    edited = edition.stubbed(textwrap.dedent(MODULE), {"lab3"}, "mini/example.py")
    for gone in ("total = g * 2", "how it is done", "and this one", "x * 3", "g * ans",
                 "Its docstring says how", "Nothing but a docstring",
                 "self.value = value", "lambda self: 4"):
        assert gone not in edited, gone
    assert "x - 1" in edited and "from mini.answers import answer, answers, withheld" in edited


def test_an_answer_asked_for_again_is_withheld_in_the_name_of_the_later_lab():
    raised = _run(MODULE, "backward_pass(1.0, None)", withheld=(),
                  also={("lab3", "backward_pass"): ("lab4", "gradients")})
    assert str(raised).startswith("lab 4 asks you to write gradients, so this edition")
    assert _run(MODULE, "one_line(2)", withheld=(),
                also={("lab3", "backward_pass"): ("lab4", "gradients")}) == 6


def test_a_compiled_answer_loses_its_compiler_with_its_body():
    text = '''
        from numba import njit
        from mini.answers import answer

        @answer("lab5", "spmv_kernel")
        @njit
        def kernel(x):
            return x * 2
    '''
    edited = edition.stubbed(textwrap.dedent(text), {"lab5"}, "mini/example.py")
    assert "@njit" not in edited and "x * 2" not in edited
    assert isinstance(_run(text, "kernel(1)", withheld=("lab5",)), AnswerWithheld)


def test_a_module_that_marks_answers_without_importing_the_marks_is_refused():
    with pytest.raises(ValueError, match="does not import its marks"):
        edition.stubbed("@answer('lab3', 'x')\ndef f():\n    return 1\n", {"lab3"}, "mini/x.py")


# -- mini's own editions --------------------------------------------------------------------------

@pytest.mark.parametrize("lab", LABS)
def test_the_edition_a_lab_is_graded_with_holds_no_working_answer_it_withholds(lab):
    folder = edition.for_grading(lab)
    withheld_labs = [name for name in LABS if name not in needs(lab)]
    withheld, also = withheld_marks(withheld_labs)
    assert short_name(lab) in withheld and not any(short_name(n) in withheld for n in needs(lab))
    assert working_answers(folder, withheld, also) == []
    code = code_passages(folder)
    for name in withheld_labs:
        assert sorted(solution_passages(name) & code) == [], f"{name}'s answers in {lab}'s edition"


def test_every_lab_has_answers_marked_in_mini_and_every_mark_names_a_lab():
    marked = {lab for lab, _ in ANSWERS}
    assert marked == {short_name(lab) for lab in LABS}
    for lab, names in ALSO_WITHHOLDS.items():
        assert all(mark in ANSWERS for mark in names), lab


@pytest.mark.parametrize("lab", LABS)
def test_each_edition_imports_and_its_stubs_name_the_lab(lab):
    folder = edition.for_grading(lab)
    script = (f"import sys; sys.path.insert(0, {str(folder)!r})\n"
              "import mini, mini.framework, mini.nn, mini.viz, mini.gradcheck, mini.train, "
              "mini.kernels.sparse\n"
              "from mini.answers import AnswerWithheld\n"
              "try:\n    mini.grad(lambda x: x * x)(3.0)\n    print('grad works')\n"
              "except AnswerWithheld as error:\n    print(error)\n"
              "print(mini.__file__)")
    done = subprocess.run([sys.executable, "-I", "-c", script], cwd=folder, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    said, where = done.stdout.strip().splitlines()
    assert Path(where).is_relative_to(folder)
    if "lab3_autodiff" in needs(lab) and lab != "lab4_framework":
        assert said == "grad works"
    else:
        assert said.startswith(("lab 3 asks you to write grad", "lab 4 asks you to write gradients"))


def test_the_full_mini_is_untouched_by_the_marks():
    assert mini.grad(lambda x: x * x)(3.0) == 6.0
    assert (ROOT / "mini" / "autodiff.py").read_text().count("withheld(") == 0
