"""``python -m autograder similarity``: copies and pastes from mini rank above honest work.

The batch is lab 2's released notebook with fill-ins written by hand: three honest students who
wrote ``toposort`` and ``evaluate`` each their own way, a classmate who copied one of them with
other names and another layout, a student who pasted mini's functions and the solution's cell,
and one who handed the template back.
"""
import ast
import copy
import time

import nbformat
import pytest

from autograder import cli
from autograder.demo import samples
from autograder.reports import similarity
from support import ROOT
from support.notebooks import cell, notebook

LAB = "lab2_graphs"
MINI, SOLUTION = "mini's answers", "the solution notebook"

TOPOSORT = {
    "ada": '''def toposort(end_node):
    """Depth first, with an explicit stack: a node is finished once all its parents are."""
    state = {}          # node -> "open" while its parents are explored, "done" after
    order = []
    stack = [(end_node, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            state[node] = "done"
            order.append(node)
            continue
        if state.get(node) == "done":
            continue
        if state.get(node) == "open":
            raise CycleError(f"found a cycle at {node.name}")
        state[node] = "open"
        stack.append((node, True))
        for parent in reversed(node.parents):
            if state.get(parent) != "done":
                stack.append((parent, False))
    return order
''',
    "ben": '''def toposort(end_node):
    seen = set([end_node])
    frontier = [end_node]
    everything = []
    while frontier:
        current = frontier.pop()
        everything.append(current)
        for p in current.parents:
            if p not in seen:
                seen.add(p)
                frontier.append(p)
    indegree = {}
    children = {}
    for n in everything:
        indegree[n] = len(n.parents)
        for p in n.parents:
            children.setdefault(p, []).append(n)
    ready = [n for n in everything if indegree[n] == 0]
    result = []
    i = 0
    while i < len(ready):
        n = ready[i]
        i += 1
        result.append(n)
        for c in children.get(n, []):
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    if len(result) != len(everything):
        bad = [n for n in everything if indegree[n] > 0]
        raise CycleError("cycle through node " + str(bad[0].name))
    return result
''',
    "cy": '''def toposort(end_node):
    # collect everything first (breadth first), then repeatedly take what is ready
    all_nodes = []
    todo = [end_node]
    while len(todo) > 0:
        x = todo.pop(0)
        if x in all_nodes:
            continue
        all_nodes.append(x)
        todo.extend(x.parents)
    done = []
    remaining = list(all_nodes)
    while remaining:
        progress = False
        for x in list(remaining):
            if all(p in done for p in x.parents):
                done.append(x)
                remaining.remove(x)
                progress = True
        if not progress:
            raise CycleError("the graph has a cycle through node %s" % remaining[0].name)
    return done
''',
    # dan copies ada's: other names, another layout, comments, a literal or two changed
    "dan": '''def toposort(end_node):
    # iterative DFS  <script>alert("dan")</script>
    status = {}
    result_list = []
    todo = [(end_node,
             False)]
    while todo:
        (n, finished) = todo.pop()
        if finished:
            status[n] = 'closed'
            result_list.append(n)
            continue

        if status.get(n) == 'closed':
            continue   # already handled
        if status.get(n) == 'visiting':
            raise CycleError(f'cycle detected: {n.name}!')
        status[n] = 'visiting'
        todo.append((n, True))
        for p in reversed(n.parents):
            if status.get(p) != 'closed':
                todo.append((p, False))
    return result_list
''',
}

EVALUATE = {
    "ada": '''def evaluate(end_node):
    for node in toposort(end_node):
        if node.fun is not None:
            arguments = list(node.args)
            for i in range(len(node.parents)):
                arguments[node.parent_argnums[i]] = node.parents[i].value
            node.value = node.fun(*arguments, **node.kwargs)
    return end_node.value
''',
    "ben": '''def evaluate(end_node):
    order = toposort(end_node)
    for n in order:
        if n.fun is None:
            continue
        values = dict(zip(n.parent_argnums, [p.value for p in n.parents]))
        call_args = [values.get(j, a) for j, a in enumerate(n.args)]
        n.value = n.fun(*call_args, **n.kwargs)
    return order[-1].value
''',
    "cy": '''def evaluate(end_node):
    def compute(node):
        args = list(node.args)
        for position, parent in zip(node.parent_argnums, node.parents):
            args[position] = parent.value
        return node.fun(*args, **node.kwargs)

    operations = [node for node in toposort(end_node) if node.fun]
    for node in operations:
        node.value = compute(node)
    return end_node.value
''',
    "dan": '''def evaluate(end_node):
    for n in toposort(end_node):
        if (n.fun is not None):
            a = list(n.args)
            for k in range(len(n.parents)):
                a[n.parent_argnums[k]] = (n.parents[k].value)
            n.value = n.fun(*a,
                            **n.kwargs)
    return end_node.value
''',
}

QUIZ = {"ada": 'quiz_nodes = 6\nquiz_edges = 8\nquiz_order = ["a", "b", "c", "d", "e", "f"]\n',
        "ben": 'quiz_nodes, quiz_edges = 6, 8\nquiz_order = list("badcef")\n',
        "cy": 'quiz_nodes = 6\nquiz_edges = 2 * 4\nquiz_order = ["b", "a", "c", "d", "e", "f"]\n',
        "dan": 'quiz_nodes = 6\nquiz_edges = 8\nquiz_order = ["a","b","c","d","e","f"]\n'}

HONEST = ("ada", "ben", "cy")
COPY = {"ada", "dan"}


def _released():
    return samples.make("untouched", LAB, ROOT / "labs")


def _filled(sources):
    """The released notebook with ``{fill-in id: code}`` in those cells."""
    nb = _released()
    for grade_id, source in sources.items():
        cell(nb, grade_id).source = source
    return nb


def _pasted():
    """mini's toposort (the functions of mini/graph.py marked as answering it) in the toposort
    cell, the solution notebook's evaluate and quiz cells in theirs."""
    text = (ROOT / "mini" / "graph.py").read_text()
    functions = [node for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)
                 and "answer('lab2', 'toposort')" in map(ast.unparse, node.decorator_list)]
    solution = nbformat.read(notebook("solutions", LAB), as_version=4)
    return _filled({
        "toposort": "from collections import deque\n\n\n" + "\n\n\n".join(
            ast.get_source_segment(text, node) for node in functions),
        "evaluate": cell(solution, "evaluate").source,
        "quiz_graph": cell(solution, "quiz_graph").source})


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """The submissions folder: ``<student>/<lab>.ipynb``."""
    folder = tmp_path_factory.mktemp("submissions")
    notebooks = {student: _filled({"toposort": TOPOSORT[student], "evaluate": EVALUATE[student],
                                   "quiz_graph": QUIZ[student]}) for student in TOPOSORT}
    notebooks.update(eve=_pasted(), fay=_released())
    for student, nb in notebooks.items():
        (folder / student).mkdir()
        nbformat.write(nb, folder / student / f"{LAB}.ipynb")
    return folder


@pytest.fixture(scope="module")
def report(batch):
    return similarity.compare(LAB, batch)


def _names(row):
    return {row.first.name, row.second.name}


def _copied(row):
    """The copy, or the paste against what it was pasted from."""
    return _names(row) == COPY or ("eve" in _names(row) and bool(_names(row) & {MINI, SOLUTION}))


def test_the_copy_and_the_paste_rank_above_every_honest_pair(report):
    print("\n" + similarity.summary(report, 12))
    first_two = report.rows[:2]
    assert {frozenset(_names(row)) for row in first_two} == {frozenset(COPY),
                                                             frozenset({"eve", MINI})}
    honest = max(row.score for row in report.rows if not _copied(row))   # honest work against
    assert honest < 0.25 < min(row.score for row in first_two)           # mini's too


def test_the_template_alone_scores_nothing(report):
    fay = next(student for student in report.students if student.name == "fay")
    assert not any(fay.prints.values())
    assert all(row.score == 0 for row in report.rows if "fay" in _names(row))


def test_renaming_and_layout_change_no_fingerprint():
    assert similarity.fingerprints(EVALUATE["ada"]).keys() == \
        similarity.fingerprints(EVALUATE["dan"]).keys()
    assert similarity.fingerprints("x = 1\n") == {}          # shorter than one k-gram


def test_the_page_shows_each_pair_side_by_side_and_escapes_student_code(report, tmp_path):
    page = similarity.write_html(report, tmp_path / "index.html", 5).read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(&quot;dan&quot;)" in page
    assert page.count("<table class='side'>") >= 2
    assert "<span class='same'>        if status.get(n) == &#x27;closed&#x27;:</span>" in page


def test_unreadable_notebooks_are_reported_and_skipped(batch, tmp_path):
    folder = tmp_path / "submissions"
    for student in ("ada", "dan"):
        (folder / student / LAB).mkdir(parents=True)        # nbgrader's layout this time
        (folder / student / LAB / f"{LAB}.ipynb").write_bytes(
            (batch / student / f"{LAB}.ipynb").read_bytes())
    hostile = {"gil": "{ not json", "hal": "", "ivy": None, "<img src=x onerror=alert(1)>": None,
               "kim": '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [7]}'}
    for student, text in hostile.items():
        (folder / student).mkdir()
        if text is not None:
            (folder / student / f"{LAB}.ipynb").write_text(text)
    huge = _filled({"toposort": "x = (" * 40_000 + "1" + ")" * 40_000,
                    "evaluate": "y = " + "-" * 90_000 + "1",        # too deep for the parser
                    "quiz_graph": "quiz_nodes = (((\n"})           # does not parse
    nbformat.write(huge, folder / "ivy" / f"{LAB}.ipynb")
    nbformat.write(_filled({"evaluate": EVALUATE["ada"]}),
                   folder / "<img src=x onerror=alert(1)>" / f"{LAB}.ipynb")
    report = similarity.compare(LAB, folder)
    assert [student.name for student in report.students] == [
        "<img src=x onerror=alert(1)>", "ada", "dan", "ivy"]
    assert [name for name, _ in report.problems] == ["gil", "hal", "ivy", "kim"]
    assert "toposort not compared: 240,001 characters" in report.problems[2][1]
    assert report.rows[0].score > 0.5 and _names(report.rows[0]) == COPY
    page = similarity.write_html(report, tmp_path / "index.html", 10).read_text()
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_the_command_prints_the_closest_pairs_and_writes_the_page(batch, tmp_path, capsys):
    out = tmp_path / "page" / "index.html"
    assert cli.main(["similarity", "lab2", "--submissions", str(batch), "--out", str(out),
                     "--top", "3"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith(f"{LAB}: 6 submission(s) compared")
    assert len(printed) == 5 and printed[-1] == f"report in {out}"
    assert {"ada", "dan"} <= set(printed[1].split()) and out.is_file()


def test_two_hundred_submissions_take_seconds(tmp_path):
    """200 students (19,900 pairs), each the released notebook with one of the honest versions
    of each fill-in, renamed: read, fingerprinted, ranked and written in seconds."""
    base, folder = _released(), tmp_path / "class"
    for number in range(200):
        nb = copy.deepcopy(base)
        for place, (grade_id, versions) in enumerate((("toposort", TOPOSORT),
                                                      ("evaluate", EVALUATE), ("quiz_graph", QUIZ))):
            version = versions[HONEST[number // 3 ** place % 3]]
            cell(nb, grade_id).source = version.replace("node", f"node_{number}")
        (folder / f"student{number:03}").mkdir(parents=True)
        nbformat.write(nb, folder / f"student{number:03}" / f"{LAB}.ipynb")
    started = time.perf_counter()
    report = similarity.compare(LAB, folder)
    similarity.write_html(report, tmp_path / "index.html", 20)
    seconds = time.perf_counter() - started
    print(f"\n200 submissions, {len(report.rows)} rows: {seconds:.2f} s")
    assert len(report.students) == 200 and len(report.rows) == 200 * 199 // 2 + 2 * 200
    assert seconds < 30
