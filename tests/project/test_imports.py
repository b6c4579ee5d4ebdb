"""No import cycle among the modules of mini and the grader.

Read from the source, not by importing: every ``import`` and ``from ... import`` statement of each
module, at the top or inside a function (an import written inside a function to dodge a cycle
hides it; it does not remove it), gives an edge to the module it names.  ``from package import
module`` is an edge to that module, not to the package's ``__init__``, which imports its modules
as any package does.
"""
import ast

from support import ROOT

PACKAGES = ("mini", "autograder")


def _modules():
    """``{dotted name: path}`` of every module of :data:`PACKAGES`."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name, path, modules):
    """The modules of ``modules`` that module ``name`` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            named.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                         for alias in node.names)
    edges = set()
    for target in named:
        while target and target not in modules:     # a name inside a module: that module
            target = target.rpartition(".")[0]
        if target and target != name:
            edges.add(target)
    return edges


def _cycle(graph):
    """A list of modules that import each other round in a circle, or None."""
    done, path = set(), []

    def visit(node):
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        path.append(node)
        for target in sorted(graph[node]):
            found = visit(target)
            if found:
                return found
        path.pop()
        done.add(node)
        return None

    for node in sorted(graph):
        found = visit(node)
        if found:
            return found
    return None


def test_no_module_imports_itself_round_a_circle():
    modules = _modules()
    assert {"mini.autodiff", "autograder.checks", "autograder.pytest_path.runner"} <= set(modules)
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert "mini.answers" in graph["mini.table"]            # edges are read
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def _groups(graph):
    """The graph of the grader's groups: each sub-package of ``autograder`` (``sandbox``,
    ``nbgrader_path``, ...) and each of its top-level modules (``labs``, ``hidden``, ...) is one
    node; an edge is any import from one group into another."""
    def group(name):
        parts = name.split(".")
        return ".".join(parts[:2]) if parts[0] == "autograder" else parts[0]
    grouped = {}
    for name, targets in graph.items():
        grouped.setdefault(group(name), set()).update(
            group(target) for target in targets if group(target) != group(name))
    return grouped


def test_no_package_imports_itself_round_a_circle():
    modules = _modules()
    groups = _groups({name: _imports(name, path, modules) for name, path in modules.items()})
    assert {"autograder.sandbox", "autograder.checks", "autograder.nbgrader_path"} <= set(groups)
    assert "autograder.checks" in groups["autograder.hidden"]            # edges are read
    assert _cycle(groups) is None, " -> ".join(_cycle(groups))


def test_the_two_grading_paths_do_not_import_each_other():
    """What both paths need (the lab and notebook facts, the checks, the sandbox) lives below
    them, so either path can change without the other."""
    modules = _modules()
    groups = _groups({name: _imports(name, path, modules) for name, path in modules.items()})
    assert "autograder.pytest_path" not in groups["autograder.nbgrader_path"]
    assert "autograder.nbgrader_path" not in groups["autograder.pytest_path"]
    assert "autograder.notebooks" in groups["autograder.nbgrader_path"] & groups["autograder.pytest_path"]


def test_the_sandbox_knows_no_lab():
    """The sandbox is a mechanism: nothing in it imports the labs, the checks or mini."""
    modules = _modules()
    groups = _groups({name: _imports(name, path, modules) for name, path in modules.items()})
    assert groups["autograder.sandbox"] <= {"autograder", "autograder.settings"}, \
        groups["autograder.sandbox"]


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_mini_exports_every_name_its_package_imports_for_its_users():
    import mini
    tree = ast.parse((ROOT / "mini" / "__init__.py").read_text())
    imported = {alias.asname or alias.name for node in tree.body
                if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert set(mini.__all__) == imported - {"keep_freed_memory"}    # called there, not exported
    star = {}
    exec("from mini import *", star)
    assert set(star) - {"__builtins__"} == set(mini.__all__)
