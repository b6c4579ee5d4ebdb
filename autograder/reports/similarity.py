"""Which submissions of a lab share code: ``python -m autograder similarity LAB``.

Each fill-in cell's code is normalised (:func:`tokens`): parsed into its syntax tree, one token per
node in source order, each literal reduced to its type, docstrings, comments and layout gone;
attribute and keyword names stay (mini's API, which a copier cannot rename).  Code that does not
parse is normalised token by token instead.  The tokens are fingerprinted by winnowing
(:func:`fingerprints`; Schleimer, Wilkerson and Aiken, SIGMOD 2003: hash every run of :data:`K`
tokens, keep the smallest hash of each :data:`WINDOW` runs in a row), each run's names replaced by
their places in it (:func:`_gram`), so that renaming changes no hash.  The fingerprints of the
released template's cell are taken away: the code a lab gives counts for nobody.

Two submissions score the Jaccard index of their fingerprints, each tagged with its fill-in: the
per-fill-in indexes weighted by their fill-ins' sizes.  Renaming variables, reformatting, adding
comments or moving whole functions about leave it near 1.  Each submission is also scored against
two references, on the fill-ins a reference answers: the solution notebook, and the full mini's
answers (the functions marked ``@answer(lab, fill_in)`` and the ``with answers(...)`` blocks,
``mini.answers``), which a student may have pasted.

The report only shows: which pairs read alike, and where.  It decides nothing and changes no grade;
students who followed the same lecture write alike, and the instructor reads both before anything.
"""
import ast
import dataclasses
import html
import io
import itertools
import keyword
import textwrap
import tokenize
import zlib
from pathlib import Path

import nbformat

from autograder import edition, settings
from autograder.labs import short_name
from autograder.notebooks import read_notebook, read_source

K = 8
"""Tokens hashed together, about a line of code: ``readers[parent].append(node)`` is 7 nodes."""
WINDOW = 4
"""k-grams per window: code shared over K + WINDOW - 1 = 11 tokens in a row is always found."""

MAX_NOTEBOOK_BYTES = 50 * 2**20      # larger than any honest notebook, outputs included
MAX_CELL_CHARS = 100_000             # a fill-in is a few thousand characters


@dataclasses.dataclass
class Submission:
    """A notebook's fill-ins, a student's or a reference's."""
    name: str
    code: dict          # {fill-in id: its code}
    prints: dict        # {fill-in id: {fingerprint: the lines of its code it comes from}}


@dataclasses.dataclass
class Row:
    """Two submissions (the second a student's or a reference) and how alike they are, 0 to 1."""
    score: float
    first: Submission
    second: Submission


@dataclasses.dataclass
class Report:
    """What :func:`compare` found in one lab's batch."""
    lab: str
    fill_ins: list      # the lab's code fill-ins, in notebook order
    students: list      # Submissions, by name
    references: list    # Submissions: the solution notebook, mini's answers
    rows: list          # Rows, highest score first: every pair of students, and each student
    #                     against each reference
    problems: list      # [(student, what was not compared and why)]


def compare(lab, folder):
    """Score every submission of ``lab`` in ``folder`` (``<student>/<lab>/<lab>.ipynb``, as the
    course's submitted/ holds them, or ``<student>/<lab>.ipynb``) against every other one and
    against the references."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"there is no folder of submissions {folder}")
    fill_ins = [cell.metadata["nbgrader"]["grade_id"] for cell in read_source(lab).cells
                if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")]
    template = {fill_in: fingerprints(code)
                for fill_in, code in _code(_released(lab), fill_ins).items()}
    references = [_submission(name, code, template) for name, code in
                  (("the solution notebook", _code(read_source(lab), fill_ins)),
                   ("mini's answers", _mini_answers(lab, fill_ins)))]
    problems = []
    students = [student for name, path in _notebooks(folder, lab)
                if (student := _student(name, path, lab, fill_ins, template, problems))]
    references = [reference for reference in references if any(reference.prints.values())]
    return Report(lab, fill_ins, students, references, _rows(students, references), problems)


def _released(lab):
    """The lab's released notebook: its fill-in cells are the template."""
    path = Path(settings.RELEASE_DIR.get()) / lab / f"{lab}.ipynb"
    if not path.is_file():
        raise FileNotFoundError(f"the released notebook {path} is missing: its cells are the "
                                f"template left out of the comparison (python -m autograder "
                                f"release {lab})")
    return nbformat.read(path, as_version=4)


def _notebooks(folder, lab):
    """``[(student, notebook)]`` of the student folders that hold a notebook of ``lab``."""
    found = []
    for student in sorted(path for path in folder.iterdir() if path.is_dir()):
        nested, flat = student / lab / f"{lab}.ipynb", student / f"{lab}.ipynb"
        found += [(student.name, path) for path in (nested, flat) if path.exists()][:1]
    return found


def _student(name, path, lab, fill_ins, template, problems):
    """The student's Submission, or None, with the reason in ``problems``, when their notebook
    cannot be read; a fill-in too large to be code is left out, and said so."""
    try:
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            raise ValueError(f"{path.name} is {path.stat().st_size:,} bytes, not compared")
        code = _code(read_notebook(path, lab), fill_ins)
        for fill_in in [fill_in for fill_in, text in code.items() if len(text) > MAX_CELL_CHARS]:
            problems.append((name, f"{fill_in} not compared: {len(code.pop(fill_in)):,} "
                                   "characters"))
        return _submission(name, code, template)
    except Exception as error:      # a submitted file may be anything: say so, compare the rest
        problems.append((name, str(error) if isinstance(error, ValueError)
                         else f"{type(error).__name__}: {error}"))
        return None


def _code(nb, fill_ins):
    """``{fill-in id: code}`` of the notebook's code cells with those ids (a cell a student
    copied: each copy, one after the other)."""
    found = {}
    for cell in nb.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if cell.get("cell_type") == "code" and grade_id in fill_ins:
            found.setdefault(grade_id, []).append(str(cell.get("source", "")))
    return {grade_id: "\n".join(sources) for grade_id, sources in found.items()}


def _submission(name, code, template):
    """The Submission of ``code``, each fill-in's fingerprints less its template's."""
    prints = {}
    for fill_in, text in code.items():
        given = template.get(fill_in, {})
        prints[fill_in] = {hashed: lines for hashed, lines in fingerprints(text).items()
                           if hashed not in given}
    return Submission(name, code, prints)


def _mini_answers(lab, fill_ins):
    """``{fill-in id: code}``: the full mini's answers to the lab's fill-ins, each under a comment
    saying where it is.  What is marked is found as ``autograder.edition`` finds what it leaves
    out of a student edition."""
    found = {}
    for path in sorted(edition.MINI.rglob("*.py")):
        text = path.read_text()
        lines = text.split("\n")
        marked = sorted(((node, mark) for node, _, mark in edition.marked_answers(ast.parse(text))),
                        key=lambda found: found[0].lineno)
        for node, mark in marked:
            if mark[0] == short_name(lab) and mark[1] in fill_ins:
                body = node.body if isinstance(node, ast.With) else [node]
                first, last = body[0].lineno, body[-1].end_lineno
                where = f"# {path.relative_to(edition.MINI.parent)}, line {first}\n"
                found.setdefault(mark[1], []).append(
                    where + textwrap.dedent("\n".join(lines[first - 1:last])))
    return {fill_in: "\n\n".join(parts) for fill_in, parts in found.items()}


# ---------------------------------------------------------------------------------------------
# Normalised tokens and their fingerprints
# ---------------------------------------------------------------------------------------------

def fingerprints(code):
    """``{hash: {line, ...}}``: the k-grams of ``code``'s normalised tokens that winnowing keeps
    (in each window of WINDOW k-grams, the rightmost smallest hash), with the lines their tokens
    come from (a docstring between two of them is not one)."""
    found = tokens(code)
    grams = [found[start:start + K] for start in range(len(found) - K + 1)]
    hashes = [zlib.crc32(_gram(run).encode()) for run in grams]
    kept = set()
    for start in range(max(len(hashes) - WINDOW + 1, min(len(hashes), 1))):
        window = hashes[start:start + WINDOW]
        kept.add(start + max(place for place, hashed in enumerate(window)
                             if hashed == min(window)))
    prints = {}
    for place in kept:
        prints.setdefault(hashes[place], set()).update(line for _, _, line in grams[place])
    return prints


def _gram(run):
    """A k-gram as text, each name replaced by its place among the names the k-gram uses
    (``Name:0``, ``Name:1``...): renaming changes nothing, and numbering names in the k-gram
    rather than in the whole function keeps one extra name from renumbering every later one."""
    names = {}
    return "\0".join(kind if name is None else f"{kind}:{names.setdefault(name, len(names))}"
                     for kind, name, _ in run)


def tokens(code):
    """``[(kind, name or None, line)]``: ``code`` normalised, each token with the identifier it
    binds or reads (left for :func:`_gram` to number) and the line it comes from."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):     # the last two: code nested
        return _plain_tokens(code)                                     # deeper than the parser goes
    return _tree_tokens(tree)


_IDENTIFIER = {ast.Name: "id", ast.arg: "arg", ast.FunctionDef: "name",
               ast.AsyncFunctionDef: "name", ast.ClassDef: "name", ast.ExceptHandler: "name"}


def _tree_tokens(tree):
    """One token per node of the tree, in source order: its kind, with the attribute or keyword it
    names (mini's API: kept), or the type of its literal (its value dropped).  Docstrings (any
    string statement) and the Load/Store marks are left out.  A loop, not a recursion: student
    code may nest deeply."""
    found, todo = [], [(tree, 1)]
    while todo:
        node, line = todo.pop()
        if isinstance(node, ast.expr_context) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            continue
        line = getattr(node, "lineno", line)
        found.append((*_token(node), line))
        todo.extend((child, line) for child in reversed(list(ast.iter_child_nodes(node))))
    return found


def _token(node):
    """``(kind, identifier or None)`` of one node."""
    kind = type(node).__name__
    if isinstance(node, ast.Constant):
        return f"{kind}:{type(node.value).__name__}", None
    if isinstance(node, (ast.Attribute, ast.keyword)):
        return f"{kind}:{node.attr if isinstance(node, ast.Attribute) else node.arg}", None
    if isinstance(node, ast.alias):
        return kind, (node.asname or node.name).split(".")[0]
    return kind, getattr(node, _IDENTIFIER.get(type(node), ""), None)


def _plain_tokens(code):
    """For code that does not parse: its Python tokens up to where tokenizing fails, each literal
    its kind, comments and layout left out."""
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.NAME and not keyword.iskeyword(token.string):
                found.append(("NAME", token.string, token.start[0]))
            elif token.type in (tokenize.NAME, tokenize.OP):
                found.append((token.string, None, token.start[0]))
            elif token.type in (tokenize.NUMBER, tokenize.STRING):
                found.append((tokenize.tok_name[token.type], None, token.start[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


# ---------------------------------------------------------------------------------------------
# Scores
# ---------------------------------------------------------------------------------------------

def _rows(students, references):
    """Every pair of students (about 20,000 for 200: set operations on ints), then each student
    against each reference on the fill-ins the reference answers."""
    tagged = [_tagged(student) for student in students]
    rows = [Row(_jaccard(tagged[i], tagged[j]), students[i], students[j])
            for i, j in itertools.combinations(range(len(students)), 2)]
    for reference in references:
        theirs = _tagged(reference)
        rows += [Row(_jaccard(_tagged(student, reference.prints), theirs), student, reference)
                 for student in students]
    return sorted(rows, key=lambda row: -row.score)


def _tagged(submission, fill_ins=None):
    """Its fingerprints as one set of ints, each tagged with its fill-in (among ``fill_ins``, if
    given): a k-gram of ``toposort`` does not match the same k-gram in ``evaluate``, and the
    Jaccard index of two such sets weighs each fill-in by its size."""
    return {hashed ^ zlib.crc32(fill_in.encode()) << 32
            for fill_in, prints in submission.prints.items()
            if fill_ins is None or fill_in in fill_ins for hashed in prints}


def _jaccard(first, second):
    shared = len(first & second)
    return shared / (len(first) + len(second) - shared) if shared else 0.0


def listed(report, top):
    """The ``top`` rows that share anything, highest first."""
    return [row for row in report.rows[:top] if row.score > 0]


def summary(report, top):
    """What the command prints: the closest rows, then what was not compared."""
    lines = [f"{report.lab}: {len(report.students)} submission(s) compared with each other and "
             f"with {' and '.join(reference.name for reference in report.references)}"]
    lines += [f"  {row.score:4.2f}  {_printable(row.first.name):<24} {_printable(row.second.name)}"
              for row in listed(report, top)] or ["  no two share any code"]
    lines += [f"  not compared: {_printable(name)}: {_printable(why)}"
              for name, why in report.problems]
    return "\n".join(lines)


def _printable(text):
    """Student folder names and error messages, with no terminal control characters in them."""
    return text if text.isprintable() else ascii(text)


# ---------------------------------------------------------------------------------------------
# The HTML report
# ---------------------------------------------------------------------------------------------

_STYLE = """
body { font-family: sans-serif; margin: 2em; }
table.rank td { padding: 0 1em 0 0; }
table.side { width: 100%; table-layout: fixed; border-collapse: collapse; }
table.side td { width: 50%; vertical-align: top; border: 1px solid #ccc; padding: 0; }
pre { margin: 0; padding: 0.5em; font-size: 12px; overflow-x: auto; }
.same { background: #ffe08a; }
"""


def write_html(report, path, top):
    """The report's page at ``path``: the closest rows, then each of them side by side, fill-in by
    fill-in, the lines that hold a shared fingerprint highlighted.  Everything that comes from a
    submission is escaped: a student's code or folder name is shown, never run."""
    path = Path(path)
    rows = listed(report, top)
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Similarity: "
             f"{report.lab}</title><style>{_STYLE}</style></head><body>"
             f"<h1>Code similarity in {report.lab}</h1>"
             f"<p>{len(report.students)} submission(s). Score: the Jaccard index of the "
             f"winnowed fingerprints (k = {K}, window {WINDOW}) of the fill-ins' normalised code "
             "(names renumbered, literals, comments and docstrings dropped), the released "
             "template's taken away. It shows where to read; it decides nothing.</p>"]
    parts += [f"<p>Not compared: {html.escape(name)}: {html.escape(why)}</p>"
              for name, why in report.problems]
    parts.append("<table class='rank'>" + "".join(
        f"<tr><td>{row.score:.2f}</td><td><a href='#pair{number}'>{html.escape(row.first.name)}"
        f"</a></td><td>{html.escape(row.second.name)}</td></tr>"
        for number, row in enumerate(rows, 1)) + "</table>")
    parts += [_pair(number, row, report.fill_ins) for number, row in enumerate(rows, 1)]
    parts.append("</body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(parts), encoding="utf-8", errors="replace")
    return path


def _pair(number, row, fill_ins):
    """One row's section: each fill-in either side wrote, the two side by side."""
    first, second = row.first, row.second
    parts = [f"<h2 id='pair{number}'>{number}. {html.escape(first.name)} and "
             f"{html.escape(second.name)}: {row.score:.2f}</h2>"]
    for fill_in in fill_ins:
        mine, theirs = first.prints.get(fill_in, {}), second.prints.get(fill_in, {})
        if mine or theirs:
            shared = mine.keys() & theirs.keys()
            parts.append(f"<h3>{html.escape(fill_in)}: {_jaccard(set(mine), set(theirs)):.2f}"
                         f"</h3><table class='side'><tr><td>{_lines(first, fill_in, shared)}</td>"
                         f"<td>{_lines(second, fill_in, shared)}</td></tr></table>")
    return "".join(parts)


def _lines(submission, fill_in, shared):
    """The fill-in's code, escaped, its lines that hold a fingerprint of ``shared`` marked."""
    prints = submission.prints.get(fill_in, {})
    marked = set().union(*(prints[hashed] for hashed in shared))
    lines = submission.code.get(fill_in, "").split("\n")
    return "<pre>" + "\n".join(
        f"<span class='same'>{html.escape(text)}</span>" if number in marked
        else html.escape(text) for number, text in enumerate(lines, 1)) + "</pre>"
