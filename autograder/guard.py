"""Switch off mini's reference versions of what a lab asks students to write.

mini ships complete implementations (lab 3's ``backward_pass`` is mini's own).  While lab N is
graded, the worker replaces the functions listed in ``autograder.checks.labN.REFERENCE`` with stubs
that raise, so a submission that calls ``mini.backward_pass`` instead of writing it gets no points
for it, and the failure message says why.  The checks module is imported first, so checks that
substitute a reference for *another* fill-in keep the real one.
"""
import importlib

from autograder.checks import checks_of


class ReferenceDisabled(RuntimeError):
    """A submission called the reference implementation of something it was asked to write."""


def disable_reference(lab):
    checks_of(lab)                       # import the checks (and their references) first
    module = importlib.import_module(f"autograder.checks.{lab.split('_')[0]}")
    for dotted in getattr(module, "REFERENCE", ()):
        owner, name = dotted.rsplit(".", 1)
        setattr(importlib.import_module(owner), name, _stub(dotted, lab))


def _stub(dotted, lab):
    def disabled(*args, **kwargs):
        raise ReferenceDisabled(f"{dotted} is mini's reference for what {lab} asks you to write, "
                                "so it is switched off while the lab is graded: use your own")
    disabled.__name__ = dotted.rsplit(".", 1)[1]
    return disabled
