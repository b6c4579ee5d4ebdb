"""Switch off mini's reference versions of what a lab asks students to write, and the autograder.

mini ships complete implementations (lab 3's ``backward_pass`` is mini's own).  While lab N is
graded, the functions listed in ``autograder.checks.labN.REFERENCE`` are replaced by stubs that
raise, so a submission that calls ``mini.backward_pass`` instead of writing it gets no points for
it, and the failure message says why.  The checks module is imported first, so checks that
substitute a reference for *another* fill-in keep the real one.

The pytest path's worker switches them off for good before any student code runs
(:func:`disable_reference`).  On the nbgrader path the checks run in the student's kernel, where
the lab's own visible tests use the references, so a hidden test cell switches them off only while
its checks call the student's code (:func:`reference_disabled`), in mini's modules, in the
notebook's names and in what the notebook's functions captured (a default argument, a closure).
"""
import contextlib
import functools
import importlib
import inspect
import itertools
import sys
import types
from pathlib import Path

from autograder.checks import lab_module


class ReferenceDisabled(RuntimeError):
    """A submission called the reference implementation of something it was asked to write."""


def disable_reference(lab):
    """Stub every name, in every loaded ``mini`` module, bound to a listed reference function."""
    for put, _, stub in _replacements(lab, _module_places(_mini_modules())):
        put(stub)


@contextlib.contextmanager
def reference_disabled(lab, namespace):
    """The stubs of :func:`disable_reference`, also over ``namespace``'s names and what its
    functions captured (default arguments, closures, class attributes), undone on exit."""
    replacements = _replacements(lab, itertools.chain(_module_places(_mini_modules()),
                                                      _captured_places(namespace)))
    for put, _, stub in replacements:
        put(stub)
    try:
        yield
    finally:
        for put, original, _ in reversed(replacements):
            put(original)


def reference_files(lab):
    """The source and cached bytecode files of the mini modules that hold ``lab``'s references
    (where their names are looked up, and where they are defined), each module imported first.

    Student code must not read them once they are imported: from a private copy of the module,
    loaded from its file (``importlib.util.spec_from_file_location``), the reference would come
    back whole, stubs or not.  The sandbox covers these files (:func:`autograder.sandbox.cover`).
    Called before the stubs are in: a stub is defined here, not where its reference was.
    """
    modules = set()
    for _, owner, original in _references(lab):
        modules.add(owner)
        defined_in = inspect.getmodule(original)
        if defined_in is not None and defined_in.__name__.split(".")[0] == "mini":
            modules.add(defined_in)
    files = set()
    for source in (Path(module.__file__) for module in modules):
        files.add(source)
        files.update(source.parent.glob(f"__pycache__/{source.stem}.*.pyc"))
    return sorted(map(str, files))


def _mini_modules():
    return [module for key, module in list(sys.modules.items()) if key.split(".")[0] == "mini"]


def _replacements(lab, places):
    """``[(put, original, stub)]`` for every place in ``places`` that holds a reference.

    ``places`` yields ``(value, put)``: what one place holds, and a function that rebinds it.
    """
    stubs = {}
    for dotted, _, original in _references(lab):
        if not isinstance(original, _Stub) and id(original) not in stubs:
            stubs[id(original)] = (original, _Stub(dotted, lab))
    return [(put, *stubs[id(value)]) for value, put in places if id(value) in stubs]


def _references(lab):
    """``[(dotted name, owner module, what the name holds now)]`` for each name in ``lab``'s
    ``REFERENCE``; the checks (and so their references) are imported first."""
    module = lab_module(lab)
    references = []
    for dotted in getattr(module, "REFERENCE", ()):
        owner_name, name = dotted.rsplit(".", 1)
        owner = importlib.import_module(owner_name)
        references.append((dotted, owner, getattr(owner, name)))
    return references


def _module_places(modules):
    """Every global of ``modules``, as ``(value, put)``."""
    for module in modules:
        for alias, value in list(vars(module).items()):
            yield value, functools.partial(setattr, module, alias)


def _captured_places(namespace):
    """A notebook's names and what the functions and classes it defined hold on to, as
    ``(value, put)``: default arguments, closure cells and class attributes, followed into the
    functions and classes found there (a reference captured when a cell ran is still the
    reference when the hidden checks run)."""
    module_name = namespace.get("__name__")
    seen = set()

    def places(owner, items, put):
        for key, value in items:
            yield value, functools.partial(put, owner, key)
            if id(value) in seen:
                continue
            seen.add(id(value))
            if isinstance(value, types.FunctionType) and value.__module__ == module_name:
                yield from places(value, enumerate(value.__defaults__ or ()), _put_default)
                yield from places(value.__kwdefaults__, list((value.__kwdefaults__ or {}).items()),
                                  dict.__setitem__)
                for cell in value.__closure__ or ():
                    try:
                        contents = cell.cell_contents
                    except ValueError:                  # a variable not assigned yet
                        continue
                    yield from places(cell, [("cell_contents", contents)], setattr)
            elif isinstance(value, type) and value.__module__ == module_name:
                yield from places(value, list(vars(value).items()), setattr)

    yield from places(namespace, list(namespace.items()), dict.__setitem__)


def _put_default(function, index, value):
    defaults = list(function.__defaults__)
    defaults[index] = value
    function.__defaults__ = tuple(defaults)


class _Stub:
    """What a reference function becomes: calling it raises ReferenceDisabled."""

    def __init__(self, dotted, lab):
        self.dotted, self.lab = dotted, lab
        self.__name__ = dotted.rsplit(".", 1)[1]

    def __call__(self, *args, **kwargs):
        raise ReferenceDisabled(f"{self.dotted} is mini's reference for what {self.lab} asks you "
                                "to write, so it is switched off while the lab is graded: use "
                                "your own")


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
