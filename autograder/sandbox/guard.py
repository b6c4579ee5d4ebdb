"""What student code may not import: the grader, and any other package that differentiates.

Where a student's code runs, mini is a student edition (``autograder.edition``) and the checks'
grader half is neither imported nor readable (``autograder.sandbox``).  Before the first line of
student code, the process also forgets the grader's modules and refuses ``import autograder...``,
but for the student half of the checks it runs (``autograder.probes``), and refuses the packages
that compute derivatives (``autograd``, ``torch``, ...): the grading environment does not install
them, and where a developer's environment has them, the sandbox shows their folders empty.  The
refusal is an import hook, which student code could remove again; it makes the common case say
clearly what is not allowed, and the sandbox makes it hold.
"""
import sys

from autograder.sandbox import OTHER_DIFFERENTIATORS


class _Refused:
    """An import hook that refuses the grader and the other differentiators."""

    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top == "autograder":
            raise ImportError("the autograder cannot be imported from a submission")
        if top in OTHER_DIFFERENTIATORS:
            raise ImportError(f"{top} cannot be imported while a lab is graded: the labs are "
                              "about computing derivatives yourself")
        return None


def hide_autograder(keep=()):
    """Make ``import autograder...`` (and the other differentiators) fail for the student code
    this process runs next.

    The grader's modules go from ``sys.modules`` and from their packages' attributes, but for
    the already imported ``keep`` (the probes of the graded lab, which its test cells call): what
    they use stays in memory, where the student's code does not find it by importing.
    """
    kept = {name for module in keep for name in _with_parents(module)}
    for name in [n for n in sys.modules if n.split(".")[0] == "autograder" and n not in kept]:
        del sys.modules[name]
        parent, _, child = name.rpartition(".")
        if parent in kept:
            delattr(sys.modules[parent], child)
    sys.meta_path.insert(0, _Refused())


def _with_parents(dotted):
    parts = dotted.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts) + 1)]
