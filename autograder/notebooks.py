"""The lab notebooks' facts: where a lab's source notebook is, which of its cells are tests and
what they are worth, what a test cell shows the student, which cells grading skips, and whether
a submitted file is a notebook of that lab.

Both grading paths, the demo and the deliveries read these here.  The SOURCE notebook
(``solutions/``) decides every one of them: a submission that edits, deletes or re-marks its test
cells changes nothing.  Nothing here imports mini or runs student code.
"""
import ast
import contextlib
import functools
import threading
from pathlib import Path

import nbformat

from autograder import REPO
from autograder.labs import TEST_PREFIX


def is_test_cell(cell):
    """Whether a cell is a test cell: graded, not a fill-in, and named ``test_...``."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return (cell.get("cell_type") == "code" and bool(meta.get("grade"))
            and not meta.get("solution") and str(meta.get("grade_id", "")).startswith(TEST_PREFIX))


_SOURCES = [REPO / "solutions"]     # the folder the source notebooks are read from, last wins


def source_notebook(lab):
    """The lab's complete notebook (nbgrader's source, in ``solutions/``): the one that decides."""
    return _SOURCES[-1] / lab / f"{lab}.ipynb"


@contextlib.contextmanager
def sources_in(folder):
    """Read the labs' test cells and points from the notebooks in ``folder`` instead.

    For a grader that ships without ``solutions/`` (Gradescope's zip): the released notebooks
    have the same test cells with the same ids and points, and no answers.
    """
    _SOURCES.append(Path(folder))
    try:
        yield
    finally:
        _SOURCES.pop()


def read_source(lab):
    """The lab's source notebook, read once per version of its file (shared: never changed)."""
    path = source_notebook(lab)
    return _read_source(path, path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _read_source(path, version):
    return nbformat.read(path, as_version=4)


def test_cells(lab):
    """``[(grade_id, points)]`` of the lab's test cells, from the source notebook."""
    marks = [cell.metadata["nbgrader"] for cell in read_source(lab).cells if is_test_cell(cell)]
    return [(mark["grade_id"], float(mark.get("points", 0))) for mark in marks]


def hand_graded_points(lab):
    """The points of the lab's written answers (cells graded by hand, not test cells): 0 when it
    has none.  No autograded score includes them."""
    return sum(float(cell.metadata["nbgrader"].get("points", 0)) for cell in read_source(lab).cells
               if cell.metadata.get("nbgrader", {}).get("grade") and not is_test_cell(cell))


def read_notebook(notebook_path, lab):
    """The submitted notebook, or ValueError with a reason a student can act on."""
    notebook_path = Path(notebook_path)
    if not notebook_path.is_file():
        raise ValueError(f"no notebook was submitted for {lab} ({notebook_path.name} is missing)")
    try:
        nb = nbformat.read(notebook_path, as_version=nbformat.NO_CONVERT)
    except Exception as error:
        raise ValueError(f"{notebook_path.name} is not a readable notebook ({type(error).__name__}:"
                         f" {str(error)[:200]})") from None
    if nb.get("nbformat") != 4:
        raise ValueError(f"{notebook_path.name} is an nbformat {nb.get('nbformat')} notebook; "
                         "submit the lab's notebook as saved by Jupyter (nbformat 4)")
    ids = {cell.metadata.get("nbgrader", {}).get("grade_id") for cell in nb.cells}
    expected = {cell.metadata.get("nbgrader", {}).get("grade_id")
                for cell in read_source(lab).cells} - {None}
    if not ids & expected:
        raise ValueError(f"{notebook_path.name} is not a {lab} notebook: none of its cells belong "
                         "to that lab")
    return nb


def skips_demo(cell, tests_read):
    """Whether grading skips this cell: a code cell tagged ``demo`` (plots, training runs,
    timings) that defines none of ``tests_read``, the names a visible test reads
    (:func:`names_tests_read`; lab 2's first graph is one).  Both grading paths skip the same
    cells: that keeps grading fast, and a student who tags a cell only skips their own code."""
    return (cell.cell_type == "code" and "demo" in cell.metadata.get("tags", [])
            and not _binds_any(cell.source, tests_read))


def names_tests_read(lab):
    """The names the lab's visible tests take from the cells before them."""
    return _names_read_by(visible_tests(lab))


def _names_read_by(visible):
    return set().union(*((_names(code, ast.Load) or set()) - (_names(code, ast.Store) or set())
                         for code in visible.values()))


def visible_tests(lab):
    """``{test cell id: its visible part}``, from the source notebook."""
    tests = {grade_id for grade_id, _ in test_cells(lab)}
    return {cell.metadata["nbgrader"]["grade_id"]: visible_part(cell.source)
            for cell in read_source(lab).cells
            if cell.metadata.get("nbgrader", {}).get("grade_id") in tests}


_PARSING = threading.Lock()
"""One ``ast.parse`` at a time in this process: ``grade`` grades submissions in threads, and
before Python 3.11.8 and 3.12.1 two parses at once could fail with "SystemError: AST
constructor recursion depth mismatch" (CPython issue 106905), which ended the whole batch."""


@functools.lru_cache(maxsize=1024)      # a released cell is the same in every submission
def _names(source, context):
    """The names ``source`` reads (``ast.Load``, anywhere) or binds in the notebook's namespace
    (``ast.Store``: assignments, functions, classes and imports outside any function or class
    body, and names a function declares ``global``), a frozenset; None for code that does not
    parse."""
    try:
        with _PARSING:
            tree = ast.parse(source)
    except SyntaxError:
        return None
    if context is ast.Load:
        return frozenset(node.id for node in ast.walk(tree)
                         if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load))
    names = {name for node in ast.walk(tree) if isinstance(node, ast.Global)
             for name in node.names}
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    comprehensions = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        if isinstance(node, scopes):
            if not isinstance(node, ast.Lambda):
                names.add(node.name)
                todo.extend(node.decorator_list)
        elif isinstance(node, comprehensions):      # its loop variables are its own (a := is not)
            todo.extend(child for child in ast.iter_child_nodes(node)
                        if not isinstance(child, ast.comprehension))
            todo.extend(part for generator in node.generators
                        for part in (generator.iter, *generator.ifs))
        else:
            todo.extend(ast.iter_child_nodes(node))
    return frozenset(names)


def _binds_any(source, names):
    """Whether ``source`` may bind one of ``names`` (code that does not parse may: it runs)."""
    bound = _names(source, ast.Store)
    return bound is None or bool(bound & names)




BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def visible_part(source):
    """A test cell's source without its hidden section (the markers included)."""
    kept, hidden = [], False
    for line in source.split("\n"):
        if line.strip() == BEGIN_HIDDEN:
            hidden = True
        elif line.strip() == END_HIDDEN:
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept).rstrip() + "\n"
