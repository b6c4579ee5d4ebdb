"""A student who wants points without the work: one cell, added to an untouched released notebook,
that searches its own process for anything that computes an answer and tries to forge the
checks' reports.  Shared by the tests of every grading path (tests/sandbox/test_attacks.py,
tests/sandbox/test_hostile*.py).

The cell runs before any fill-in.  It records what it finds, then leaves hooks that look again
while the hidden checks run: a profile hook that looks into the frame of every Python call and
of its caller (so every frame that calls anything: the probes' and the worker's own loop's), an IPython input transformer that rewrites the report call of
each graded test cell (nbgrader path), and a replaced ``autograder.probes.run`` that reports,
for every check, whatever the search found.  At the end of the notebook a second cell walks every
object of the process (``gc``) for a function whose code is one of the full mini's answers, or
any object of the checks' grader half, and prints what it found.
"""
import hashlib
import types
from pathlib import Path

import nbformat

import mini
import mini.framework  # noqa: F401 (every module that marks answers)
import mini.kernels.sparse  # noqa: F401
import mini.nn  # noqa: F401
from autograder.labs import LABS, needs, withheld_marks
from mini.answers import ANSWERS

MINI = Path(mini.__file__).resolve().parent

SEARCH = r'''
import gc, hashlib, json, sys, types
FOUND = {"grader modules": [], "grader objects": [], "answers": [], "frames": []}

def fingerprint(code):
    consts = tuple(repr(c) for c in code.co_consts if not isinstance(c, types.CodeType))
    return hashlib.sha256(repr((code.co_code, code.co_names, consts, code.co_varnames))
                          .encode()).hexdigest()[:20]

def codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from codes(const)

def notebooks_own(code):    # a student's own answer may well be written as mini's is
    return code.co_filename.startswith("<cell") or "ipykernel_" in code.co_filename

def search_objects():
    FOUND["grader modules"] = sorted(name for name in sys.modules if name.startswith(
        ("autograder.checks", "autograder.hidden", "autograder.pytest_path.runner", "autograder.edition")))
    for obj in gc.get_objects():
        try:
            module = getattr(obj, "__module__", None)
            if isinstance(module, str) and module.startswith(("autograder.checks",
                                                              "autograder.hidden")):
                FOUND["grader objects"].append(repr(obj)[:80])
            elif has_callable(obj, "expected") or has_callable(obj, "stand_ins"):
                FOUND["grader objects"].append(repr(obj)[:80])
            elif isinstance(obj, types.FunctionType) and not notebooks_own(obj.__code__):
                for code in codes(obj.__code__):
                    if fingerprint(code) in ANSWER_CODES:
                        FOUND["answers"].append(obj.__qualname__)
        except Exception:
            continue

def has_callable(obj, name):   # its own attribute (not one made up on request, as some do)
    own = getattr(obj, "__dict__", None)
    return isinstance(own, dict) and callable(own.get(name))

def walk_frames(frame, event, arg):    # each Python call: the callee's frame and its caller's
    if event != "call":
        return
    for frame in (frame, frame.f_back):
        for name, value in list(frame.f_locals.items()) if frame is not None else ():
            if has_callable(value, "expected") or (
                    isinstance(value, (list, tuple)) and value
                    and has_callable(value[0], "expected")):
                FOUND["frames"].append(f"{frame.f_code.co_name}:{name}")

search_objects()
'''

HOOKS = r'''
sys.setprofile(walk_frames)
try:                                   # nbgrader's kernel: rewrite every report call
    ip = get_ipython()
    def forge(lines):
        return [line.replace("report(", "forged_report(") for line in lines]
    ip.input_transformers_post.append(forge)
except NameError:
    pass

def forged_report(lab, fill_in, tasks, nonce, namespace):
    from IPython.display import display
    outcomes = [{"result": json.loads(json.dumps(FOUND))} for _ in json.loads(tasks)]
    display({"application/vnd.mini.hidden-checks": json.dumps(
        {"nonce": nonce, "fill_in": fill_in, "outcomes": outcomes})}, raw=True)

probes = sys.modules.get("autograder.probes")
if probes is not None:                 # pytest path and kernels: report what was found
    probes.run = lambda lab, task, namespace, ask, case=0: {"result": FOUND}
'''

REPORT = r'''
sys.setprofile(None)
search_objects()
print("ATTACK " + json.dumps({key: sorted(set(value)) for key, value in FOUND.items()}))
'''


def answer_fingerprints(lab):
    """The fingerprints (as the attack computes them) of the code of every answer of the full
    mini that ``lab``'s edition withholds: functions, primitives' functions, methods of marked
    classes, registered derivatives.  Only code in mini's own files: a test may mark functions
    of its own in this process (``test_edition`` does), and those are no answers."""
    withheld, also = withheld_marks(name for name in LABS if name not in needs(lab))
    found = set()
    for mark, things in ANSWERS.items():
        if mark[0] not in withheld and mark not in also:
            continue
        for thing in things:
            for code in _codes_of(thing):
                if Path(code.co_filename).resolve().is_relative_to(MINI):   # not a test's own marks
                    found.update(_fingerprints(code))
    return sorted(found)


def _codes_of(thing):
    function = getattr(thing, "fun", None) or getattr(thing, "__func__", None) or thing
    if isinstance(function, type):
        return [member.__code__ for member in vars(function).values()
                if isinstance(member, types.FunctionType)]
    code = getattr(function, "__code__", None)
    return [code] if code is not None else []


def _fingerprints(code):
    """The function's own code and the functions defined in it (not its comprehensions: a
    ``[x for x in xs]`` is in everybody's code)."""
    consts = tuple(repr(c) for c in code.co_consts if not isinstance(c, types.CodeType))
    yield hashlib.sha256(repr((code.co_code, code.co_names, consts, code.co_varnames))
                         .encode()).hexdigest()[:20]
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and not const.co_name.startswith("<") \
                or isinstance(const, types.CodeType) and const.co_name == "<lambda>":
            yield from _fingerprints(const)


def attacker(released_notebook):
    """The released notebook, untouched, with the search and its hooks in a cell after its first
    code cell and the report cell at its end."""
    nb = nbformat.read(released_notebook, as_version=4)
    first = next(i for i, cell in enumerate(nb.cells) if cell.cell_type == "code")
    setup = f"ANSWER_CODES = set({answer_fingerprints(released_notebook.stem)!r})\n"
    nb.cells.insert(first + 1, nbformat.v4.new_code_cell(setup + SEARCH + HOOKS))
    nb.cells.append(nbformat.v4.new_code_cell(REPORT))
    return nb


def searched(nb, lab):
    """``nb`` (an honest notebook of ``lab``) with the search at its end, after every check has
    run: what a student's process holds once it has done its work."""
    setup = f"ANSWER_CODES = set({answer_fingerprints(lab)!r})\n"
    nb.cells.append(nbformat.v4.new_code_cell(setup + SEARCH + REPORT))
    return nb


def found(printed):
    """What the attack found, from the lines it printed."""
    import json
    line = next(line for line in printed if line.startswith("ATTACK "))
    return json.loads(line[len("ATTACK "):])
