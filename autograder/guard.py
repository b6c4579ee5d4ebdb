"""Switch off mini's reference versions of what a lab asks students to write, and the autograder.

mini ships complete implementations (lab 3's ``backward_pass`` is mini's own).  While lab N is
graded, the worker replaces the functions listed in ``autograder.checks.labN.REFERENCE`` with stubs
that raise, so a submission that calls ``mini.backward_pass`` instead of writing it gets no points
for it, and the failure message says why.  The checks module is imported first, so checks that
substitute a reference for *another* fill-in keep the real one.
"""
import importlib
import sys

from autograder.checks import checks_of


class ReferenceDisabled(RuntimeError):
    """A submission called the reference implementation of something it was asked to write."""


def disable_reference(lab):
    """Stub every name, in every loaded ``mini`` module, bound to a listed reference function."""
    checks_of(lab)                       # import the checks (and their references) first
    module = importlib.import_module(f"autograder.checks.{lab.split('_')[0]}")
    for dotted in getattr(module, "REFERENCE", ()):
        owner, name = dotted.rsplit(".", 1)
        original = getattr(importlib.import_module(owner), name)
        stub = _stub(dotted, lab)
        for loaded in [m for key, m in sys.modules.items() if key.split(".")[0] == "mini"]:
            for alias, value in list(vars(loaded).items()):
                if value is original:
                    setattr(loaded, alias, stub)


def _stub(dotted, lab):
    def disabled(*args, **kwargs):
        raise ReferenceDisabled(f"{dotted} is mini's reference for what {lab} asks you to write, "
                                "so it is switched off while the lab is graded: use your own")
    disabled.__name__ = dotted.rsplit(".", 1)[1]
    return disabled


class _NoAutograder:
    """An import hook that refuses ``autograder`` to code run after :func:`hide_autograder`."""

    def find_spec(self, name, path=None, target=None):
        if name == "autograder" or name.startswith("autograder."):
            raise ImportError("the autograder cannot be imported from a submission")
        return None


def hide_autograder():
    """Make ``import autograder...`` fail for the student code the worker runs next."""
    for name in [n for n in sys.modules if n == "autograder" or n.startswith("autograder.")]:
        del sys.modules[name]
    sys.meta_path.insert(0, _NoAutograder())
