"""Switch off mini's reference versions of what a lab asks students to write, and the autograder.

mini ships complete implementations (lab 3's ``backward_pass`` is mini's own).  While lab N is
graded, the functions listed in ``autograder.checks.labN.REFERENCE`` are replaced by stubs that
raise, so a submission that calls ``mini.backward_pass`` instead of writing it gets no points for
it, and the failure message says why.  The checks module is imported first, so checks that
substitute a reference for *another* fill-in keep the real one.

The pytest path's worker switches them off for good before any student code runs
(:func:`disable_reference`).  On the nbgrader path the checks run in the student's kernel, where
the lab's own visible tests use the references, so a hidden test cell switches them off only while
its checks call the student's code (:func:`reference_disabled`), in mini's modules and in the
notebook's names.
"""
import contextlib
import importlib
import sys

from autograder.checks import checks_of


class ReferenceDisabled(RuntimeError):
    """A submission called the reference implementation of something it was asked to write."""


def disable_reference(lab):
    """Stub every name, in every loaded ``mini`` module, bound to a listed reference function."""
    for owner, alias, _, stub in _replacements(lab, _mini_modules()):
        setattr(owner, alias, stub)


@contextlib.contextmanager
def reference_disabled(lab, namespace):
    """The stubs of :func:`disable_reference`, also over ``namespace``'s names, undone on exit."""
    replacements = _replacements(lab, _mini_modules() + [_Names(namespace)])
    for owner, alias, _, stub in replacements:
        setattr(owner, alias, stub)
    try:
        yield
    finally:
        for owner, alias, original, _ in replacements:
            setattr(owner, alias, original)


def _mini_modules():
    return [module for key, module in list(sys.modules.items()) if key.split(".")[0] == "mini"]


def _replacements(lab, owners):
    """``[(owner, alias, original, stub)]`` for every alias of a reference in ``owners``."""
    checks_of(lab)                       # import the checks (and their references) first
    module = importlib.import_module(f"autograder.checks.{lab.split('_')[0]}")
    found, seen = [], set()
    for dotted in getattr(module, "REFERENCE", ()):
        owner_name, name = dotted.rsplit(".", 1)
        original = getattr(importlib.import_module(owner_name), name)
        if isinstance(original, _Stub) or id(original) in seen:
            continue
        seen.add(id(original))
        stub = _Stub(dotted, lab)
        for owner in owners:
            for alias, value in list(vars(owner).items()):
                if value is original:
                    found.append((owner, alias, original, stub))
    return found


class _Stub:
    """What a reference function becomes: calling it raises ReferenceDisabled."""

    def __init__(self, dotted, lab):
        self.dotted, self.lab = dotted, lab
        self.__name__ = dotted.rsplit(".", 1)[1]

    def __call__(self, *args, **kwargs):
        raise ReferenceDisabled(f"{self.dotted} is mini's reference for what {self.lab} asks you "
                                "to write, so it is switched off while the lab is graded: use "
                                "your own")


class _Names:
    """A dict of names (a notebook's globals) seen through ``vars()`` and ``setattr``."""

    def __init__(self, names):
        self.__dict__ = names


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
