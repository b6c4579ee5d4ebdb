"""Which of mini's functions answer a lab's fill-in: marked once, where they are defined.

mini is complete: lab 3's ``backward_pass`` is mini's own, lab 4's ``session_run`` is
``Session.run``.  Each function that answers a fill-in is marked where it is defined, with
:func:`answer` for a function, method, class or primitive, and with an :func:`answers` block around
the derivatives registered in the table (a VJP is often a lambda).  The marks change nothing in
the full mini that instructors and self-learners use.  They are read by the grader, which writes a
*student edition* of mini for the kit students get and for every process
that runs a student's code: there the body of every marked function of a lab not yet revealed
says which lab asks for it (:func:`withheld`), so that no answer is in reach before its deadline.

    @answer("lab3", "backward_pass")
    def backward_pass(g, end_node): ...

    with answers("lab3", "elementwise_vjps"):
        defvjp(exp, lambda g, ans, x: g * ans)
"""
import contextlib
import sys

ANSWERS = {}
"""``(lab, fill-in) -> [what answers it]``: functions, classes, primitives, and the VJPs and JVPs
registered inside :func:`answers` blocks (what the grader's tests look for in a student's
process)."""


class AnswerWithheld(NotImplementedError):
    """A function of mini that answers a lab's fill-in was called in an edition of mini where
    that lab is not revealed yet."""

    def __init__(self, lab, fill_in, name):
        number = lab.removeprefix("lab")
        super().__init__(f"lab {number} asks you to write {fill_in}, so this edition of mini "
                         f"leaves out {name} until lab {number} is revealed")
        self.lab, self.fill_in, self.name = lab, fill_in, name


def answer(lab, fill_in):
    """Mark the decorated function, class or primitive as mini's answer to ``fill_in`` of ``lab``
    (``"lab3"``); it is returned unchanged."""
    def mark(thing):
        ANSWERS.setdefault((lab, fill_in), []).append(thing)
        return thing
    return mark


@contextlib.contextmanager
def answers(lab, fill_in):
    """The VJPs and JVPs registered inside the block answer ``fill_in`` of ``lab``: the functions
    among them (or wrapped by them, as a broadcasting VJP wraps its lambda) written in the block
    itself, not the table's shared helpers (zeros for an argument read only for its shape)."""
    block = sys._getframe(2)            # the module running the ``with`` (past contextmanager's)
    _open.append((lab, fill_in, block.f_code.co_filename, block.f_lineno))
    try:
        yield
    finally:
        _open.pop()


_open = []      # the answers(...) blocks running now: (lab, fill-in, their file, first line)


def registered(*rules):
    """What ``mini.table`` calls with each derivative it registers: inside an :func:`answers`
    block, the ones written there are marked as that block's answer."""
    if _open:
        lab, fill_in, where, first = _open[-1]
        ANSWERS.setdefault((lab, fill_in), []).extend(
            function for rule in rules for function in _written_in(rule, where, first))


def _written_in(function, where, first):
    """``function``, or the functions its closure holds, written in file ``where`` from line
    ``first`` on."""
    code = getattr(function, "__code__", None)
    if code is not None and code.co_filename == where and code.co_firstlineno >= first:
        return [function]
    cells = getattr(function, "__closure__", None) or ()
    return [inner for cell in cells if callable(cell.cell_contents)
            for inner in _written_in(cell.cell_contents, where, first)]


def withheld(lab, fill_in, name):
    """What a marked function does in a student edition where ``lab`` is not revealed."""
    raise AnswerWithheld(lab, fill_in, name)


def withheld_function(lab, fill_in, name):
    """What a marked lambda (a derivative) becomes in such an edition: a function that raises."""
    def stub(*args, **kwargs):
        withheld(lab, fill_in, name)
    return stub
