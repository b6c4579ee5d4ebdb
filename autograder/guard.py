"""Switch off mini's reference versions of what a lab asks students to write, and the autograder.

mini ships complete implementations (lab 3's ``backward_pass`` is mini's own).  While lab N is
graded, each function listed in ``autograder.checks.labN.REFERENCE`` raises ReferenceDisabled
instead of computing, so a submission that calls ``mini.backward_pass`` instead of writing it gets
no points for it, and the failure message says why.

A function is switched off by swapping its *code*, not the names bound to it.  Rebinding
``mini.backward_pass`` would leave every other hold on the same function object working: one kept
in a list or a dict, a default argument, a closure, a bound method, a method a subclass inherits,
a ``functools.partial``.  Swapping ``function.__code__`` changes what all of them run.  The stub
keeps the function's number of free variables (Python requires it) and raises through a
keyword-only default set with it; switching back restores both.

The checks need working versions of some of these functions, as stand-ins for the fill-ins a check
does not test.  :func:`detached` copies mini's functions, when the checks are imported, into
functions that call one another's copies: switching the originals off leaves the copies working.

Who switches off what, and when:

* the pytest path's worker: the lab's REFERENCE for good, before any student code runs
  (:func:`switch_off`), back only while a test cell's visible tests run (:meth:`Switch.back`);
* the nbgrader path's kernel, and a student's own run of a hidden test cell
  (:mod:`autograder.hidden`): while the checks call the student's code (:func:`reference_disabled`);
* a check, for the one fill-in it tests: what that fill-in must not use, while the student's
  function runs (:func:`switched_off`: mini's ``Session.run`` while ``session_run`` is checked,
  mini's VJPs while the student's VJP table is).

What this cannot stop: code that kept a function's ``__code__`` (not the function) from a moment
the reference was on, or that searches the interpreter's memory for the detached copies.
"""
import contextlib
import functools
import importlib
import inspect
import sys
import types
from pathlib import Path

from autograder.checks import lab_module


class ReferenceDisabled(RuntimeError):
    """A submission called the reference implementation of something it was asked to write."""


class Switch:
    """Functions whose code can be swapped for a stub that raises, and back.

    ``messages`` maps each function (a plain function, or what holds one: a mini primitive, a
    static or class method) to what its stub says.
    """

    def __init__(self, messages):
        self._swaps = {}
        for holder, message in messages.items():
            function = _function_of(holder)
            if id(function) not in self._swaps:
                self._swaps[id(function)] = (function, _stub(function, message))
        self._saved = None

    def off(self):
        """Swap every function's code for its stub's (a function already off stays off)."""
        self._saved = [(function, function.__code__, function.__kwdefaults__)
                       for function, _ in self._swaps.values()]
        for function, (code, kwdefaults) in self._swaps.values():
            _originals.setdefault(function, function.__code__)
            function.__code__, function.__kwdefaults__ = code, kwdefaults
        return self

    def on(self):
        """Put back what :meth:`off` found."""
        for function, code, kwdefaults in reversed(self._saved or ()):
            function.__code__, function.__kwdefaults__ = code, kwdefaults
            if code is _originals.get(function):
                del _originals[function]
        self._saved = None

    @contextlib.contextmanager
    def back(self):
        """The functions working again for the duration (a test cell's visible tests)."""
        was_off = self._saved is not None
        self.on()
        try:
            yield
        finally:
            if was_off:
                self.off()


_originals = {}
"""function -> its own code, while a :class:`Switch` has it off (what :func:`detached` copies)."""


@contextlib.contextmanager
def switched_off(messages):
    """The functions of ``messages`` (as for :class:`Switch`) raising for the duration."""
    switch = Switch(messages).off()
    try:
        yield
    finally:
        switch.on()


def switch_off(lab):
    """Switch off ``lab``'s references for good; the returned :class:`Switch` can bring them back
    for a while."""
    return Switch(_messages(lab)).off()


def reference_disabled(lab):
    """``lab``'s references switched off for the duration (a context manager)."""
    return switched_off(_messages(lab))


def detached(*names):
    """Copies of the functions of mini's modules ``names``, one namespace per module, that keep
    working when the originals are switched off.

    Each copy runs the original's own code in a snapshot of its module's names, in which every
    function of every mini module loaded now is such a copy too: mini's ``make_vjp`` calls
    ``backward_pass``, which calls ``vjp_of``, and the copies call each other's copies.  Methods
    of classes are not copied (a check switches off a method only while nothing needs it).
    """
    for name in names:
        importlib.import_module(name)
    modules = {name: module for name, module in list(sys.modules.items())
               if name.split(".")[0] == "mini" and module is not None}
    snapshots = {name: dict(vars(module)) for name, module in modules.items()}
    copies = {}
    for name, module in modules.items():
        for value in vars(module).values():
            if isinstance(value, types.FunctionType) and value.__globals__ is vars(module):
                copies.setdefault(id(value), _copy(value, snapshots[name]))
    for snapshot in snapshots.values():
        snapshot.update({key: copies[id(value)] for key, value in snapshot.items()
                         if id(value) in copies})
    return tuple(types.SimpleNamespace(**snapshots[name]) for name in names)


def reference_files(lab):
    """The source and cached bytecode files of the mini modules that hold ``lab``'s references
    (where their names are looked up, and where they are defined), each module imported first.

    Student code must not read them once they are imported: from a private copy of the module,
    loaded from its file (``importlib.util.spec_from_file_location``), the reference would come
    back whole, switched off or not.  The sandbox covers these files
    (:func:`autograder.sandbox.cover`).
    """
    modules = set()
    for _, owner, original in _references(lab):
        modules.add(owner)
        defined_in = inspect.getmodule(_function_of(original))
        if defined_in is not None and defined_in.__name__.split(".")[0] == "mini":
            modules.add(defined_in)
    files = set()
    for source in (Path(module.__file__) for module in modules):
        files.add(source)
        files.update(source.parent.glob(f"__pycache__/{source.stem}.*.pyc"))
    return sorted(map(str, files))


def _messages(lab):
    """``{reference: what its stub says}`` for ``lab`` (the first name listed for a function)."""
    messages = {}
    for dotted, _, original in _references(lab):
        messages.setdefault(original, f"{dotted} is mini's reference for what {lab} asks you to "
                                      "write, so it is switched off while the lab is graded: use "
                                      "your own")
    return messages


def _references(lab):
    """``[(dotted name, owner module, what the name holds)]`` for each name in ``lab``'s
    ``REFERENCE``; the checks are imported first."""
    module = lab_module(lab)
    references = []
    for dotted in getattr(module, "REFERENCE", ()):
        owner_name, name = dotted.rsplit(".", 1)
        owner = importlib.import_module(owner_name)
        references.append((dotted, owner, getattr(owner, name)))
    return references


def _function_of(holder):
    """The plain function whose code is swapped for ``holder``: itself, a primitive's ``fun``, or
    a static or class method's function."""
    function = getattr(holder, "fun", None) or getattr(holder, "__func__", None) or holder
    if not isinstance(function, types.FunctionType):
        raise TypeError(f"cannot switch off {holder!r}: not a Python function")
    return function


def _copy(function, namespace):
    code = _originals.get(function, function.__code__)
    copy = types.FunctionType(code, namespace, function.__name__, function.__defaults__,
                              function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__, copy.__doc__ = function.__qualname__, function.__doc__
    return copy


def _stub(function, message):
    """``(code, kwdefaults)`` of a stub for ``function``: it raises ReferenceDisabled(message)."""
    def refuse(*args, **kwargs):
        raise ReferenceDisabled(message)
    return _stub_code(len(function.__code__.co_freevars)), {"__refused__": refuse}


@functools.cache
def _stub_code(free):
    """The code of ``stub(*args, __refused__, **kwargs)``, which calls ``__refused__()``, with
    ``free`` free variables (a code object may replace a function's only if they agree)."""
    names = [f"free{i}" for i in range(free)]
    source = "".join(["def outer():\n", *(f"    {name} = None\n" for name in names),
                      "    def stub(*args, __refused__, **kwargs):\n",
                      f"        {', '.join(names)},\n" if names else "",
                      "        __refused__()\n",
                      "    return stub\n"])
    namespace = {}
    exec(compile(source, "<reference switched off>", "exec"), namespace)
    return namespace["outer"]().__code__


class _NoAutograder:
    """An import hook that refuses ``autograder`` to code run after :func:`hide_autograder`."""

    def find_spec(self, name, path=None, target=None):
        if name == "autograder" or name.startswith("autograder."):
            raise ImportError("the autograder cannot be imported from a submission")
        return None


def hide_autograder(keep=()):
    """Make ``import autograder...`` fail for the student code this process runs next.

    The grader's modules go from ``sys.modules`` and from their packages' attributes, but for the
    already imported ``keep`` (an nbgrader kernel keeps ``autograder.hidden``, which its hidden
    test cells call): what they use stays in memory, where the student's code does not find it by
    importing.  The pytest path's worker keeps none.
    """
    kept = {name for module in keep for name in _with_parents(module)}
    for name in [n for n in sys.modules if n.split(".")[0] == "autograder" and n not in kept]:
        del sys.modules[name]
        parent, _, child = name.rpartition(".")
        if parent in kept:
            delattr(sys.modules[parent], child)
    sys.meta_path.insert(0, _NoAutograder())


def _with_parents(dotted):
    parts = dotted.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts) + 1)]
