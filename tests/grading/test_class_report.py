"""``report LAB``: what a class got wrong, read from either grading path's results.

The demo's sample students of lab 2 are the class (``autograder.demo.samples``: full, untouched,
bug, loops, no_test), with two more: one who got a quiz answer wrong (partial credit: one
behaviour of the quiz lost) and one whose ``evaluate`` prints and raises a ``<script>``.  The batch
is graded on the pytest path and on the nbgrader path, and the report of each must draw a
histogram of every student, count the bug sample's mistake as the commonest failure of its
fill-in, give pass rates that agree with the scores, and show the student's script as text.
"""
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser

import nbformat
import pytest
from PIL import Image

from autograder import labs, notebooks
from autograder.checks import behaviours_of
from autograder.demo import samples
from autograder.reports import class_report, class_results

LAB = "lab2_graphs"
KINDS = {"ada": "full", "ben": "untouched", "cy": "bug", "dee": "loops", "eve": "no_test",
         "fay": "quiz", "mal": "script"}
SCRIPT = "<script>alert('x')</script>"
BUGGED = samples.BUGS[LAB][0]                      # toposort


def _notebook(kind, release):
    """A sample of ``kind``, or one of this test's two: ``quiz`` (two arrows short in the quiz),
    ``script`` (``evaluate`` prints and raises a script)."""
    if kind not in ("quiz", "script"):
        return samples.make(kind, LAB, release)
    nb = samples.make("full", LAB, release)
    name, old, new = (("quiz_graph", "quiz_edges = 2 + 2 + 2 + 2", "quiz_edges = 2 + 2 + 2")
                      if kind == "quiz" else
                      ("evaluate", "### BEGIN SOLUTION\n",
                       f"### BEGIN SOLUTION\n    print({SCRIPT!r})\n"
                       f"    raise RuntimeError({SCRIPT!r})\n"))
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == name)
    assert old in cell.source
    cell.source = cell.source.replace(old, new, 1)
    return nb


def _expected(kind):
    if kind == "quiz":
        return 97.0                                 # quiz_edges: 3 of the quiz's 10 parts
    if kind == "script":
        return 100.0 - dict(notebooks.test_cells(LAB))["test_evaluate"]
    return float(samples.expected_score(kind, LAB))


def _autograder(env, *arguments):
    done = subprocess.run([sys.executable, "-m", "autograder", *arguments], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """The lab released into a course of its own, and the class's notebooks from that release."""
    root = tmp_path_factory.mktemp("class")
    env = dict(os.environ, MINI_COURSE_DIR=str(root / "nbgrader-course"),
               MINI_RELEASE_DIR=str(root / "release"), MINI_CELL_TIMEOUT="6")
    _autograder(env, "release", LAB)
    for student, kind in KINDS.items():
        path = root / "inbox" / student / f"{LAB}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(_notebook(kind, root / "release"), path)
    return root, env


@pytest.fixture(scope="module")
def pytest_path(batch):
    root, env = batch
    course = root / "pytest-course"
    _autograder(env, "--course", str(course), "grade", LAB, "--submissions", str(root / "inbox"),
                "--seed", "1234", "--cell-seconds", "6", "--check-seconds", "10",
                "--workers", "2")
    return course


@pytest.fixture(scope="module")
def nbgrader_path(batch):
    root, env = batch
    _autograder(env, "collect", str(root / "inbox"))
    _autograder(env, "autograde", LAB, "--workers", "2")
    return root / "nbgrader-course"


def _pytest_scores(course):
    """``{student: {test cell: (score, max score)}}`` from the results, read here."""
    scores = {}
    for file in (course / "results" / LAB).glob("*/results.json"):
        tests = json.loads(file.read_text())["tests"]
        scores[file.parent.name] = {t["name"]: (t["score"], t["max_score"]) for t in tests}
    return scores


def _gradebook_scores(course):
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///file:{course / 'gradebook.db'}?mode=ro&uri=true", "mini") as gb:
        return {s.student_id: {g.name: (g.score, g.max_score) for nb in s.notebooks
                               for g in nb.grades}
                for s in gb.find_assignment(LAB).submissions}


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


def _check_report(course, env, path, scores, monkeypatch):
    printed = _autograder(env, "--course", str(course), "report", "lab2")
    page = course / "report" / LAB / "index.html"
    assert f"report in {page}" in printed and f"graded on the {path} path" in printed
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", printed)
    html = page.read_text()
    monkeypatch.setenv("MINI_COURSE_DIR", str(course))
    report = class_report.analyse(class_results.collect(LAB))
    assert report.results.path == path
    assert dict(report.scores) == {student: _expected(kind) for student, kind in KINDS.items()}

    # the histogram: a PNG of every student, its counts in its text chunks
    picture = page.parent / "histogram.png"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(picture) as image:
        image.verify()
    with Image.open(picture) as image:
        assert image.format == "PNG" and image.size == (700, 360)
        counts = json.loads(image.text["Counts"])
        assert f"{len(KINDS)} submissions" in image.text["Description"]
        assert len(image.convert("L").getcolors(1 << 16)) > 2          # not a blank picture
    assert sum(counts["counts"]) == len(KINDS) and counts["counts"][-1] == 3   # ada, eve, fay
    assert counts["counts"][0] == 1                                           # ben
    assert '<img src="histogram.png"' in html

    # the bug sample's mistake is the commonest failure of its fill-in, got by it alone; the
    # untouched sample's stub is not a mistake but a fill-in not attempted
    toposort = next(f for f in report.fill_ins if f.name == BUGGED)
    top = toposort.failures[0]
    assert top.students == ["cy"] and len(top.students) == 1
    assert "listed twice" in top.example          # a node queued before all its parents were
    assert toposort.not_attempted == ["ben"]
    section = html.split(f'<h3 id="{labs.test_cell_of(BUGGED)}">')[1].split("<h3")[0]
    assert "listed twice" in section.split("<pre>")[1].split("</pre>")[0]   # the first shown
    assert re.search(r'<td class="num">1</td><td><pre>AssertionError: node \w+ is listed twice',
                     section)

    # pass rates agree with the scores: a cell's full marks, each behaviour's share
    assert set(scores) == set(KINDS)
    for grade_id, points, passed, mean in report.cells:
        assert passed == sum(1 for s in scores.values() if s[grade_id][0] == s[grade_id][1])
        assert mean == pytest.approx(sum(s[grade_id][0] for s in scores.values()) / len(KINDS))
    results = {s.student: s for s in report.results.submissions}
    for fill_in in report.fill_ins:
        shares = {behaviour: share for behaviour, share, _ in fill_in.behaviours}
        assert set(shares) == set(behaviours_of(LAB)[fill_in.name])
        for student, cells in scores.items():
            lost = results[student].cells[fill_in.grade_id].lost
            kept = 0.0 if lost.keys() & {class_results.VISIBLE, class_results.HIDDEN} else sum(
                share for behaviour, share in shares.items() if behaviour not in lost)
            assert kept == pytest.approx(cells[fill_in.grade_id][0]), (student, fill_in.name)
        for behaviour, share, passed in fill_in.behaviours:
            assert passed == sum(1 for s in results.values()
                                 if not s.cells[fill_in.grade_id].lost.keys()
                                 & {behaviour, class_results.VISIBLE, class_results.HIDDEN})
    quiz = {b: passed for b, _, passed in
            next(f for f in report.fill_ins if f.name == "quiz_graph").behaviours}
    assert quiz == {"quiz_nodes": 6, "quiz_edges": 5, "quiz_order": 6}     # ben; ben and fay
    edges = next(f for f in report.fill_ins if f.name == "quiz_graph").failures
    assert [(f.students, f.example.splitlines()[0]) for f in edges
            if f.behaviours == ["quiz_edges"]] == [(["fay"], "the quiz answer quiz_edges: the "
                                                    "result['quiz_edges'] is wrong: expected 8, "
                                                    "got 6 (1 of 1 entries differ)")]

    # what a student printed is text on the page, never markup
    assert "&lt;script&gt;alert(" in html
    assert "<script" not in html.lower()
    tags = _Tags()
    tags.feed(html)
    assert "script" not in tags.tags and "img" in tags.tags
    for heading in ("Grades", "Test cells", "Behaviours and failures, per fill-in",
                    "Grading time"):
        assert f">{heading}</h2>" in html
    return report


def test_report_from_the_pytest_path(pytest_path, batch, monkeypatch):
    root, env = batch
    report = _check_report(pytest_path, env, "pytest", _pytest_scores(pytest_path), monkeypatch)
    assert report.median_seconds is None          # results.json records no grading time


def test_report_from_the_nbgrader_path(nbgrader_path, pytest_path, batch, monkeypatch):
    root, env = batch
    gradebook = (nbgrader_path / "gradebook.db").read_bytes()
    report = _check_report(nbgrader_path, env, "nbgrader", _gradebook_scores(nbgrader_path),
                           monkeypatch)
    assert report.timed == len(KINDS) and 0 < report.median_seconds < 60
    assert (nbgrader_path / "gradebook.db").read_bytes() == gradebook     # only read
    # with both paths' results at hand, --path chooses
    out = root / "chosen" / "pytest.html"
    printed = _autograder(env, "report", LAB, "--path", "pytest", "--out", str(out),
                          "--results", str(pytest_path / "results"))
    assert "graded on the pytest path" in printed
    assert (root / "chosen" / "pytest-histogram.png").is_file()


def test_no_results_names_both_paths_folders(tmp_path):
    env = dict(os.environ, MINI_COURSE_DIR=str(tmp_path / "course"))
    done = subprocess.run([sys.executable, "-m", "autograder", "report", "lab2"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert str(tmp_path / "course" / "results" / LAB) in done.stderr
    assert str(tmp_path / "course" / "gradebook.db") in done.stderr
    assert str(tmp_path / "course" / "autograded") in done.stderr


def test_messages_group_without_their_numbers():
    assert class_report.message_key("node v12 is listed twice (at 2 and 4) (seed 99)") == \
        class_report.message_key("node v7 is listed twice (at 3 and 10) (seed 5)")
    assert class_report.not_attempted("NotImplementedError: ")
    assert class_report.not_attempted("toposort(end) on a chain raised NotImplementedError: x")
    assert not class_report.not_attempted("AssertionError: NotImplementedError is no answer")
    assert labs.fill_in_tested_by(labs.test_cell_of(BUGGED)) == BUGGED
