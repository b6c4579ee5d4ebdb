"""Searching an edition of mini for answers it should not hold: by AST (a marked answer with a
working body) and by text (two consecutive lines of an answer in solutions/).  Shared by the tests
of editions (tests/grading/test_edition.py) and of the student kit (tests/grading/test_kit.py)."""
import ast
from pathlib import Path

import nbformat

from support import ROOT


def working_answers(folder, withheld, also):
    """``[(module file, name)]`` of each definition marked with a lab of ``withheld`` (short
    names), or with a mark in ``also``, in the mini at ``folder/mini`` whose body is more than a
    docstring and one call of ``withheld``, and each lambda left in such an ``answers`` block."""
    working = []
    for path in sorted((Path(folder) / "mini").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            mark = _mark(node)
            if not mark or not (mark[0] in withheld or mark in also):
                continue
            if isinstance(node, ast.With):
                working += [(path.name, "a lambda") for inner in ast.walk(node)
                            if isinstance(inner, ast.Lambda)]
                continue
            functions = [node] if not isinstance(node, ast.ClassDef) else [
                item for item in node.body if isinstance(item, ast.FunctionDef)]
            for function in functions:
                statements = [s for s in function.body if not (
                    isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
                if len(statements) != 1 or "withheld(" not in ast.unparse(statements[0]):
                    working.append((path.name, function.name))
    return working


def _mark(node):
    calls = ([item.context_expr for item in node.items] if isinstance(node, ast.With)
             else getattr(node, "decorator_list", []))
    for call in calls:
        if isinstance(call, ast.Call) and getattr(call.func, "id", "") in ("answer", "answers"):
            return tuple(arg.value for arg in call.args)
    return None


def _code(line):
    return " ".join(line.split("#")[0].split())


def pairs(lines):
    """Every two consecutive lines of code: one line alone (a signature, a loop header) is
    common to any code; two in a row are a passage of someone's answer."""
    lines = [line for line in map(_code, lines) if line]
    return {"\n".join(lines[i:i + 2]) for i in range(len(lines) - 1)}


def solution_passages(lab):
    """The passages of ``lab``'s answers in solutions/."""
    passages = set()
    notebook = ROOT / "solutions" / lab / f"{lab}.ipynb"
    for cell in nbformat.read(notebook, as_version=4).cells:
        inside, block = False, []
        for line in cell.source.splitlines():
            if "### BEGIN SOLUTION" in line:
                inside, block = True, []
            elif "### END SOLUTION" in line:
                inside = False
                passages |= pairs(block)
            elif inside and not line.strip().startswith("#"):
                block.append(line)
    return passages


def code_passages(folder):
    """The passages of the modules of the mini at ``folder/mini``, docstrings left out."""
    passages = set()
    for path in (Path(folder) / "mini").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                    and isinstance(body[0].value, ast.Constant):
                body[0].value.value = ""
        passages |= pairs(ast.unparse(tree).splitlines())
        passages |= pairs(line for line in path.read_text().splitlines()
                          if not line.strip().startswith(('"', "'")))
    return passages
