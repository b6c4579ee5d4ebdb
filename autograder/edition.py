"""Student editions of mini: mini with the answers of the labs not yet revealed left out.

mini marks every function that answers a lab's fill-in (``mini.answers``).  An edition is a copy
of ``mini/`` in which the body of each marked function, method or class of a *withheld* lab is
replaced by one call, ``withheld(lab, fill_in, name)``, that raises an error naming the lab and
the fill-in, and each derivative registered in a withheld :func:`mini.answers.answers` block by a
function that raises the same.  A withheld function's docstring goes with its body: mini's
docstrings say how a function works, and the lab states what the student's must do.  Everything
else is the file as it was, comments and docstrings included: students read this mini.

Two kinds of process get an edition instead of mini:

* the student kit (``autograder.deliveries.kit``): the labs revealed are those whose deadline has
passed;
* every process that runs a student's code while a lab is graded (:func:`for_grading`): the labs
  revealed are those the graded lab needs (``autograder.labs.NEEDS``), and no other, so that no
  answer of the graded lab, nor of a later one, is in that process.

Editions for grading are written once into a cache named by what went into them (mini's files,
the labs withheld, this module), and shared by every worker and kernel.
"""
import ast
import functools
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from autograder import REPO, settings
from autograder.labs import LABS, needs, short_name, withheld_marks

MINI = REPO / "mini"
SKIPPED = ("__pycache__", "*.pyc", ".ipynb_checkpoints")


def write(folder, withheld, source=MINI):
    """Write ``folder/mini``: ``source`` with the answers of the labs ``withheld`` (full or short
    names) left out, and the earlier answers they ask for again
    (``autograder.labs.ALSO_WITHHOLDS``).  ``folder/mini`` must not exist yet."""
    labs, also = withheld_marks(withheld)
    target = Path(folder) / "mini"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*SKIPPED))
    for path in sorted(target.rglob("*.py")):
        text = path.read_text()
        edited = stubbed(text, labs, str(path.relative_to(folder)), also)
        if edited != text:
            path.write_text(edited)
    return target


@functools.cache
def for_grading(lab):
    """The folder whose ``mini`` is the edition every process running a student's code for
    ``lab`` imports: the labs ``lab`` needs revealed, every other lab withheld.  Written into the
    cache the first time it is asked for; the folder is put first on ``sys.path``."""
    withheld = sorted(short_name(name) for name in LABS if name not in needs(lab))
    folder = cache() / "editions" / _digest(withheld)
    if not (folder / "mini").is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=".building-", dir=folder.parent))
        write(building, withheld)
        try:
            building.rename(folder)         # atomic: another grader may have written it first
        except OSError:
            shutil.rmtree(building, ignore_errors=True)
    return folder


def cache():
    """Where editions for grading are kept: ``$MINI_CACHE_DIR``, else ``$XDG_CACHE_HOME/mini``,
    else ``~/.cache/mini``."""
    explicit = settings.CACHE_DIR.get()
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mini"


def _digest(withheld):
    digest = hashlib.sha256(Path(__file__).read_bytes())
    labs, also = withheld_marks(withheld)
    digest.update(repr((sorted(labs), sorted(also.items()))).encode())
    for path in sorted(MINI.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(MINI)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:24]


# ---------------------------------------------------------------------------------------------
# The edit of one module: spans of its source replaced, everything else kept as it was
# ---------------------------------------------------------------------------------------------

def stubbed(text, withheld, filename="<mini>", also=None):
    """``text``, a module of mini, with its marked answers of the labs ``withheld`` (short names)
    left out, and those marked ``(lab, fill-in)`` in ``also``, which says which lab and fill-in
    ask for them again; the module imports ``withheld`` and ``withheld_function`` where it needs
    them."""
    tree = ast.parse(text, filename)
    source = _Source(text)
    module = filename.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    also = also or {}

    def asking(mark):
        """The lab and fill-in a stub names for this mark, or None if it is not left out."""
        if mark is None:
            return None
        return mark if mark[0] in withheld else also.get(mark)

    edits = []
    for node, parents, mark in marked_answers(tree):
        mark = asking(mark)
        if mark and isinstance(node, ast.With):
            edits += _block_left_out(node, mark, source)
        elif mark:
            edits += _left_out(node, mark, source, ".".join([module, *parents, node.name]))
    if not edits:
        return text
    edited = source.replaced([*_outermost(edits), _importing_stubs(tree, source, filename)])
    compile(edited, filename, "exec")          # an edit that breaks the module is a bug here
    return edited


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (*_FUNCTIONS, ast.ClassDef)


def marked_answers(tree):
    """``(node, parents, (lab, fill-in))`` for every answer marked in a module of mini: each
    definition decorated ``@answer(lab, fill_in)`` and each ``with answers(lab, fill_in):``
    block, in the order of :func:`_walk`, with the names of the classes and functions around it;
    what is inside a marked definition belongs to it."""
    for node, parents in _walk(tree):
        mark = _mark(node, "answer") if isinstance(node, _DEFINITIONS) else _mark(node, "answers")
        if mark:
            yield node, parents, mark


def _walk(tree):
    """Every node with the names of the classes and functions around it, not descending into a
    definition marked as an answer (it is left out whole)."""
    todo = [(tree, [])]
    while todo:
        node, parents = todo.pop()
        yield node, parents
        if isinstance(node, _DEFINITIONS) and _mark(node, "answer"):
            continue
        inner = [*parents, node.name] if isinstance(node, _DEFINITIONS) else parents
        todo.extend((child, inner) for child in ast.iter_child_nodes(node))


def _mark(node, name):
    """``(lab, fill_in)`` of an ``@answer(...)`` decorator of ``node`` (``name`` "answer") or of
    a ``with answers(...):`` statement (``name`` "answers"); None for anything else."""
    if name == "answer":
        calls = getattr(node, "decorator_list", [])
    else:
        calls = [item.context_expr for item in node.items] if isinstance(node, ast.With) else []
    for call in calls:
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == name and len(call.args) == 2
                and all(isinstance(arg, ast.Constant) for arg in call.args)):
            return tuple(arg.value for arg in call.args)
    return None


def _left_out(node, mark, source, name):
    """The edits that leave out a marked definition: a function's body, each method of a class
    and each lambda in a class's body."""
    if isinstance(node, _FUNCTIONS):
        return [_body_left_out(node, mark, source, name), *_compilers_left_out(node, source)]
    edits = []
    for item in node.body:
        if isinstance(item, _FUNCTIONS):
            edits.append(_body_left_out(item, mark, source, f"{name}.{item.name}"))
        else:
            edits += [_lambda_left_out(inner, mark, source, f"{name}.{_target(item)}")
                      for inner in ast.walk(item) if isinstance(inner, ast.Lambda)]
    return edits


COMPILERS = ("njit", "jit", "cuda.jit")
"""Decorators that compile a function (Numba's): a stub is plain Python, so they go with it."""


def _compilers_left_out(function, source):
    """Each compiling decorator of ``function``, its whole line, taken out."""
    edits = []
    for decorator in function.decorator_list:
        called = decorator.func if isinstance(decorator, ast.Call) else decorator
        if ast.unparse(called) in COMPILERS:
            start = source.offset(decorator.lineno, 0)
            edits.append((start, source.offset(decorator.end_lineno + 1, 0), ""))
    return edits


def _target(statement):
    targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
    return getattr(targets[0], "id", "attribute")


def _body_left_out(function, mark, source, name):
    """The function's statements, its docstring among them (mini's docstrings say how a function
    works: the lab states what it must do), become one call of ``withheld``, with every comment
    among them, before the first and after the last on its line."""
    body = function.body
    call = f"withheld({mark[0]!r}, {mark[1]!r}, {name!r})"
    end = source.end_of_comment(body[-1].end_lineno, body[-1].end_col_offset)
    if body[0].lineno == function.lineno:         # def f(x): return x
        return (source.offset(body[0].lineno, body[0].col_offset), end, call)
    return (source.end_of_header(body[0].lineno), end, f"\n{' ' * body[0].col_offset}{call}")


def _block_left_out(block, mark, source):
    """In a ``with answers(...)`` block, each lambda and each function's body left out."""
    edits = []
    for statement in block.body:
        label = _registered(statement)
        for node in ast.walk(statement):
            if isinstance(node, ast.Lambda):
                edits.append(_lambda_left_out(node, mark, source, label))
            elif isinstance(node, _FUNCTIONS):
                edits.append(_body_left_out(node, mark, source, node.name))
    return edits


def _registered(statement):
    """What a statement of an ``answers`` block registers, in words: "the VJPs of exp"."""
    call = getattr(statement, "value", None)
    if isinstance(call, ast.Call) and call.args:
        kind = getattr(call.func, "id", "")
        what = ("JVPs" if "jvp" in kind else "VJPs") if kind.startswith("def") else "derivatives"
        return f"mini's {what} of {ast.unparse(call.args[0])}"
    return "one of mini's derivatives"


def _lambda_left_out(node, mark, source, label):
    return (source.offset(node.lineno, node.col_offset),
            source.offset(node.end_lineno, node.end_col_offset),
            f"withheld_function({mark[0]!r}, {mark[1]!r}, {label!r})")


def _outermost(edits):
    """Edits not inside another one (a lambda inside a left-out function goes with it, a
    marked function inside an ``answers`` block is left out once)."""
    edits = sorted(edits, key=lambda edit: (edit[0], -edit[1]))
    kept = []
    for edit in edits:
        if not kept or edit[0] >= kept[-1][1]:
            kept.append(edit)
    return kept


def _importing_stubs(tree, source, filename):
    """The module's ``from mini.answers import ...`` with ``withheld`` and ``withheld_function``
    added (a module that marks answers imports the marks from there)."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "mini.answers":
            names = [alias.name for alias in node.names]
            names += [name for name in ("withheld", "withheld_function") if name not in names]
            return (source.offset(node.lineno, node.col_offset),
                    source.offset(node.end_lineno, node.end_col_offset),
                    f"from mini.answers import {', '.join(names)}")
    raise ValueError(f"{filename} marks answers but does not import its marks with "
                     "'from mini.answers import ...'")


class _Source:
    """A module's text, addressed as ``ast`` addresses it (lines from 1, columns in UTF-8
    bytes), and edited by replacing spans of it."""

    def __init__(self, text):
        self.data = text.encode()
        self.starts = [0]
        for line in self.data.split(b"\n")[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def offset(self, line, column):
        return self.starts[line - 1] + column

    def end_of_header(self, line):
        """The end of the last line before ``line`` that holds code (a def's header, above
        the comments that open its body)."""
        lines = self.data.split(b"\n")
        line -= 1
        while lines[line - 1].strip() in (b"",) or lines[line - 1].strip().startswith(b"#"):
            line -= 1
        return self.starts[line - 1] + len(lines[line - 1])

    def end_of_comment(self, line, column):
        """Where the line ends if only a comment follows ``column`` on it, else ``column``."""
        start = self.offset(line, column)
        end = self.data.find(b"\n", start)
        end = len(self.data) if end < 0 else end
        return end if self.data[start:end].strip().startswith(b"#") else start

    def replaced(self, edits):
        data = self.data
        for start, end, text in sorted(edits, reverse=True):
            data = data[:start] + text.encode() + data[end:]
        return data.decode()
