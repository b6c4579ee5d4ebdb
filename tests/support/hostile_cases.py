"""Hostile and broken lab 3 submissions, built from the lab's own notebooks, for both grading
paths' tests (tests/sandbox/test_hostile.py and tests/sandbox/test_hostile_nbgrader.py).

``CASES`` maps a name to ``(build, fill_in)``: ``build()`` returns the notebook, and the submission
must lose exactly the points of ``fill_in`` (None: none).  ``BROKEN_FILES`` are not notebooks at
all.
"""
import hashlib
import json
import os
from pathlib import Path

import nbformat
import numpy as np

from autograder import notebooks
from autograder.pytest_path import runner
from support import ROOT
from support.notebooks import cell

LAB = "lab3_autodiff"


def points(fill_in):
    return dict(notebooks.test_cells(LAB))[f"test_{fill_in}"]


def solution():
    """The lab's solution less the pictures and timings grading does not need (the demo cells the
    pytest path skips too), so that the nbgrader batch of every case below stays quick."""
    source = ROOT / "solutions" / LAB / f"{LAB}.ipynb"
    nb = nbformat.read(source, as_version=4)
    run = {index for index, _, _ in runner.cells_to_run(source, LAB)}
    nb.cells = [c for i, c in enumerate(nb.cells)
                if i in run or "grade_id" in c.metadata.get("nbgrader", {})]
    return nb


def inside(fill_in, code):
    """The solution with ``code`` run first inside the fill-in's function."""
    nb = solution()
    target = cell(nb, fill_in)
    lines = target.source.split("\n")
    at = next(i for i, line in enumerate(lines) if "### BEGIN SOLUTION" in line)
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines[at + 1:at + 1] = [indent + line for line in code.split("\n")]
    target.source = "\n".join(lines)
    return nb


def with_cells(*codes, after="elementwise_vjps"):
    """The solution with new code cells, in order, after the given fill-in."""
    nb = solution()
    position = nb.cells.index(cell(nb, after)) + 1
    nb.cells[position:position] = [nbformat.v4.new_code_cell(code) for code in codes]
    return nb


def tampered(change):
    """The solution after ``change(nb)`` edits it in place."""
    nb = solution()
    change(nb)
    return nb


def _edit_test(nb):
    cell(nb, "test_backward_pass").source = "pass"


def _delete_test(nb):
    nb.cells.remove(cell(nb, "test_numerical_grad"))


def _duplicate_test(nb):
    nb.cells.append(nbformat.v4.new_code_cell("pass", metadata={"nbgrader": dict(
        cell(nb, "test_make_vjp").metadata["nbgrader"], points=500)}))


def _split_test(nb):
    test = cell(nb, "test_grad")
    first, second = test.source.split("\n", 1)
    test.source = first
    at = nb.cells.index(test) + 1
    nb.cells.insert(at, nbformat.v4.new_code_cell(second, metadata={"nbgrader": dict(
        test.metadata["nbgrader"])}))


def _retype_test(nb):
    test = cell(nb, "test_grad")
    nb.cells[nb.cells.index(test)] = nbformat.v4.new_markdown_cell(test.source,
                                                                   metadata=test.metadata)


def _change_points(nb):
    cell(nb, "test_backward_pass").metadata["nbgrader"]["points"] = 1000
    cell(nb, "backward_pass").metadata["nbgrader"].update(grade=True, points=1000)


def _change_kernelspec(nb):
    nb.metadata["kernelspec"] = {"name": "evil", "display_name": "evil", "language": "python"}


GRADER_IMPORT_BLOCKED = ("import autograder.checks: ImportError: the autograder cannot be imported "
                         "from a submission")


def broken_backward_pass_with_patches():
    """Patches numpy and tries to patch the checks; prints whether importing them was refused."""
    nb = inside("backward_pass", "return {}")
    nb.cells.insert(2, nbformat.v4.new_code_cell(
        "import numpy as np\nnp.allclose = lambda *a, **k: True\n"
        "np.isclose = lambda *a, **k: True\n"
        "try:\n    import autograder.checks as c\n    c.verify = lambda *a, **k: None\n"
        "    print('import autograder.checks: patched verify')\n"
        "except ImportError as error:\n"
        "    print(f'import autograder.checks: ImportError: {error}')\n"
        "class Always(float):\n    def __eq__(self, other): return True\n"))
    return nb


def replaced(grade_id, source):
    """The solution with the cell ``grade_id`` holding ``source`` instead."""
    nb = solution()
    cell(nb, grade_id).source = source
    return nb


def reference_backward_pass():
    return replaced("backward_pass", "import mini\n\ndef backward_pass(g, end_node):\n"
                                     "    return mini.backward_pass(g, end_node)\n")


def reference_kept_in_a_list():
    """mini's backward_pass kept in a list when the cell runs (before any check), called later."""
    return replaced("backward_pass", "import mini\n\n_kept = [mini.backward_pass]\n\n"
                                     "def backward_pass(g, end_node):\n"
                                     "    return _kept[0](g, end_node)\n")


def stand_in_from_the_checks():
    """The checks' own working copy of backward_pass, imported while grading; where the import is
    refused, mini's (which works outside the hidden checks)."""
    return replaced("backward_pass", (
        "import mini\n\ndef backward_pass(g, end_node):\n"
        "    try:\n        from autograder.checks.lab3 import ref\n"
        "        return ref.backward_pass(g, end_node)\n"
        "    except ImportError:\n        return mini.backward_pass(g, end_node)\n"))


def minis_box_subclassed():
    """The tracer as a subclass of mini's Box: apply and every operator inherited."""
    return replaced("tracer", "import mini.autodiff\n\nclass Box(mini.autodiff.Box):\n"
                              "    \"\"\"mini's, renamed.\"\"\"\n")


def private_copy_of_the_reference():
    """backward_pass from a private copy of mini's module, loaded from its source file (or its
    cached bytecode): the sandbox shows those files empty (tests/sandbox/test_sandbox.py probes
    that), and a copy would still call the switched-off ``vjp_of``."""
    return replaced("backward_pass", (
        "import importlib.util, mini.reverse\n\n"
        "def _private_copy():\n"
        "    for path in (mini.reverse.__file__,\n"
        "                 importlib.util.cache_from_source(mini.reverse.__file__)):\n"
        "        try:\n"
        "            spec = importlib.util.spec_from_file_location('private_reverse', path)\n"
        "            module = importlib.util.module_from_spec(spec)\n"
        "            spec.loader.exec_module(module)\n"
        "            if hasattr(module, 'backward_pass'):\n"
        "                return module\n"
        "        except Exception:\n"
        "            continue\n\n"
        "def backward_pass(g, end_node):\n"
        "    return _private_copy().backward_pass(g, end_node)\n"))


def private_copies_of_every_mini_module():
    """backward_pass from a private copy of any module of mini that has a working one: every
    module file under mini's folder (the student edition's, the only mini there is), and the
    full mini's files where they might lie (the checkout's ``mini/``)."""
    return replaced("backward_pass", (
        "import functools, glob, importlib.util, os, mini\n\n"
        "@functools.cache\n"
        "def _working():\n"
        "    folders = [os.path.dirname(mini.__file__), " + repr(str(ROOT / "mini")) + "]\n"
        "    for number, path in enumerate(sorted(p for folder in folders\n"
        "                                       for p in glob.glob(folder + '/**/*.py', recursive=True))):\n"
        "        try:\n"
        "            spec = importlib.util.spec_from_file_location(f'copy{number}', path)\n"
        "            module = importlib.util.module_from_spec(spec)\n"
        "            spec.loader.exec_module(module)\n"
        "            found = getattr(module, 'backward_pass', None)\n"
        "            node = mini.Node(1.0)\n"
        "            if found is not None and found(1.0, node):\n"
        "                return found\n"
        "        except Exception:\n"
        "            continue\n\n"
        "def backward_pass(g, end_node):\n"
        "    return _working()(g, end_node)\n"))


NOTHING_READ = "read 0 file(s) of the solutions and the course"

# a cell worth nothing fails holding an object; the next says whether it was let go (the pytest
# path's worker drops a failed cell's frames; IPython keeps them until the next error, unless the
# grading kernel drops them too)
FAILS_HOLDING = ("import weakref\nclass Held:\n    pass\ndef fail():\n    held = Held()\n"
                 "    globals()['held_ref'] = weakref.ref(held)\n"
                 "    raise RuntimeError('a failed cell')\nfail()")
SAYS_IF_FORGOTTEN = ("import gc\ngc.collect()\n"
                     "print('the failed cell let go of its objects:', held_ref() is None)")
FORGOTTEN = "the failed cell let go of its objects: True"


def reads_and_writes_course_files():
    """Reads and appends to every file of the solutions and of the course folder it can find
    (outside the folder it runs in, which on the nbgrader path lies in the course), and prints
    how many it could read."""
    course = os.environ["MINI_COURSE_DIR"]
    return with_cells(
        "import glob, os\nstolen = []\n"
        f"for pattern in [{str(ROOT / 'solutions' / '*' / '*.ipynb')!r}, {course + '/**'!r}]:\n"
        "    for path in glob.glob(pattern, recursive=True):\n"
        "        if os.path.isdir(path) or os.path.abspath(path).startswith(os.getcwd() + os.sep):\n"
        "            continue\n"
        "        try:\n            stolen.append(open(path).read()[:10])\n"
        "            open(path, 'a').write('tampered')\n        except OSError:\n            pass\n"
        "print(f'read {len(stolen)} file(s) of the solutions and the course')\n"
        "try:\n"
        f"    open({str(ROOT / 'solutions' / 'tampered.txt')!r}, 'w').write('x')\n"
        "except OSError:\n    pass\n")


PLANTED = [ROOT / "mini" / "planted.py", ROOT / "autograder" / "checks" / "planted.py",
           Path(np.__file__).parent / "planted.py"]


def writes_into_the_grader():
    """Tries to leave a module in mini, in the checks and in numpy, for later submissions."""
    return with_cells(f"for path in {[str(path) for path in PLANTED]!r}:\n"
                     "    try:\n        open(path, 'w').write('planted = True')\n"
                     "    except OSError:\n        pass\n")


def grader_sources():
    """{path: sha256} of the Python sources of mini, the grader and numpy."""
    return {str(path): hashlib.sha256(path.read_bytes()).hexdigest()
            for folder in (ROOT / "mini", ROOT / "autograder", Path(np.__file__).parent)
            for path in sorted(folder.rglob("*.py"))}


CASES = {
    "loops_in_a_fill_in": (lambda: inside("add_outgrads", "while True:\n    pass"), "add_outgrads"),
    "ignores_alarms_and_interrupts_then_loops": (lambda: inside(
        "add_outgrads", "import signal\nfor number in (signal.SIGALRM, signal.SIGINT):\n"
                        "    signal.signal(number, signal.SIG_IGN)\nwhile True:\n    pass"),
        "add_outgrads"),
    "loops_at_top_level_after_a_correct_definition": (lambda: with_cells("while True:\n    pass"),
                                                      None),
    # the address-space limit stops it at the same point whether or not it writes the pages
    # (numpy.empty does not: the machine that runs these tests needs no gigabytes to spare); the
    # hoard dies with the failed cell's frames on both paths (FORGOTTEN below)
    "allocates_without_bound": (lambda: inside(
        "add_outgrads", "import numpy\nhoard = []\nwhile True:\n"
                        "    hoard.append(numpy.empty(10**8))"), "add_outgrads"),
    "fails_holding_an_object": (lambda: with_cells(FAILS_HOLDING, SAYS_IF_FORGOTTEN), None),
    "exits_the_worker": (lambda: inside("backward_pass", "import os\nos._exit(3)"),
                         "backward_pass"),
    # a cell worth no points that ends its process, as a successful exit: it costs nothing
    "exits_cleanly_in_a_cell_of_its_own": (lambda: with_cells("import os\nos._exit(0)"), None),
    "kills_the_worker": (lambda: inside("make_vjp", "import os, signal\n"
                                                    "os.kill(os.getpid(), signal.SIGKILL)"),
                         "make_vjp"),
    "segfaults": (lambda: inside("numerical_grad", "import ctypes\nctypes.string_at(0)"),
                  "numerical_grad"),
    "calls_input": (lambda: inside("add_outgrads", "input('answer? ')"), "add_outgrads"),
    "prints_megabytes": (lambda: with_cells("print('x' * 50_000_000)\nimport os\n"
                                           "os.write(1, b'y' * 10_000_000)"), None),
    "edits_a_test_cell": (lambda: tampered(_edit_test), None),
    "deletes_a_test_cell": (lambda: tampered(_delete_test), None),
    "duplicates_a_test_cell": (lambda: tampered(_duplicate_test), None),
    "splits_a_test_cell": (lambda: tampered(_split_test), None),
    "retypes_a_test_cell": (lambda: tampered(_retype_test), None),
    "changes_points": (lambda: tampered(_change_points), None),
    "changes_the_kernelspec": (lambda: tampered(_change_kernelspec), None),
    # the patched np.allclose passes the visible tests, but the verdicts are decided outside
    "monkeypatches_numpy_and_the_checks": (broken_backward_pass_with_patches, "backward_pass"),
    "calls_the_reference_solution": (reference_backward_pass, "backward_pass"),
    "loads_a_private_copy_of_the_reference": (private_copy_of_the_reference, "backward_pass"),
    "loads_private_copies_of_every_mini_module": (private_copies_of_every_mini_module,
                                                  "backward_pass"),
    "keeps_the_reference_in_a_list": (reference_kept_in_a_list, "backward_pass"),
    "imports_the_checks_stand_in": (stand_in_from_the_checks, "backward_pass"),
    "subclasses_minis_box": (minis_box_subclassed, "tracer"),
    "reads_and_writes_course_files": (reads_and_writes_course_files, None),
    "writes_into_the_grader": (writes_into_the_grader, None),
}
SHIPPED_FILES = {   # beside a complete solution: none of them may be imported while grading
    "numpy.py": "raise SystemExit('a numpy.py shipped beside the notebook was imported')\n",
    "mini.py": "raise SystemExit('a mini.py shipped beside the notebook was imported')\n",
    "conftest.py": "import os\nos._exit(1)\n",
    "sitecustomize.py": "import os\nos._exit(1)\n",
    "evil.pth": "import os; os._exit(1)\n",
}
BROKEN_FILES = {"invalid_json": b"{ this is not json", "empty_file": b"",
                "nbformat_3": json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {},
                                          "worksheets": []}).encode()}




def expected_score(name):
    lost = CASES[name][1] or ()
    return 100 - sum(points(fill_in) for fill_in in ((lost,) if isinstance(lost, str) else lost))


def write_batch(folder):
    """Every case, shipped file and broken file above, plus two honest students, as
    ``folder/<student>/lab3_autodiff.ipynb``; returns ``{student: expected score}``."""
    expected = {"honest_full": 100, "honest_untouched": 0}
    write(folder, "honest_full", solution())
    write(folder, "honest_untouched", nbformat.read(ROOT / "labs" / LAB / f"{LAB}.ipynb", 4))
    for name in CASES:
        write(folder, name, CASES[name][0]())
        expected[name] = expected_score(name)
    write(folder, "ships_modules", solution())
    for name, text in SHIPPED_FILES.items():
        (folder / "ships_modules" / name).write_text(text)
    expected["ships_modules"] = 100
    for name, content in BROKEN_FILES.items():
        path = folder / name / f"{LAB}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_bytes(content)
        expected[name] = 0
    (folder / "missing_notebook").mkdir()
    expected["missing_notebook"] = 0
    write(folder, "another_lab", nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "def toposort(end_node):\n    return []", metadata={"nbgrader": {
            "grade_id": "some_other_lab_fill_in", "solution": True, "grade": False,
            "locked": False, "schema_version": 3}})]))
    expected["another_lab"] = 0
    return expected


def write(folder, student, nb):
    path = folder / student / f"{LAB}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


BROKEN_MESSAGES = {   # what each submission that is not a usable notebook is told, on both paths
    "invalid_json": f"{LAB}.ipynb is not a readable notebook (NotJSONError: Notebook does not "
                    "appear to be JSON: '{ this is not json')",
    "empty_file": f"{LAB}.ipynb is not a readable notebook (NotJSONError: Notebook does not appear "
                  "to be JSON: '')",
    "nbformat_3": f"{LAB}.ipynb is an nbformat 3 notebook; submit the lab's notebook as saved by "
                  "Jupyter (nbformat 4)",
    "missing_notebook": f"no notebook was submitted for {LAB} ({LAB}.ipynb is missing)",
    "another_lab": f"{LAB}.ipynb is not a {LAB} notebook: none of its cells belong to that lab",
}
