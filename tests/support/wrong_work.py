"""What the labs' wrong-work tests share: a wrong notebook graded on each path, and one hidden
check run on a notebook's names with both halves in this process."""
import csv

import nbformat

from autograder import cli, labs, notebooks, probes
from autograder.pytest_path import runner
from autograder.checks import answer, behaviours_of, case_for, checks_of, verify
from autograder.notebooks import source_notebook

SEED = 11


VISIBLE = ["the visible tests"]      # a mistake the lab's own tests catch: the whole cell lost


def points_lost(lab, wrong):
    """``{test cell id: points}`` that a notebook should lose whose fill-ins get the behaviours
    ``wrong`` names wrong (``{fill_in: [behaviour, ...]}``): each behaviour's share of its cell,
    all of it for :data:`VISIBLE`."""
    points, lost = dict(notebooks.test_cells(lab)), {}
    for fill_in, failed in wrong.items():
        behaviours = behaviours_of(lab)[fill_in]
        failed = list(behaviours) if failed == VISIBLE else failed
        assert set(failed) <= set(behaviours), set(failed) - set(behaviours)
        share = sum(behaviours[name][0] for name in failed) / sum(
            parts for parts, _ in behaviours.values())
        lost[labs.test_cell_of(fill_in)] = round(points[labs.test_cell_of(fill_in)] * share, 2)
    return lost


def named_in(failed, phrase):
    """What the message of a wrong fill-in must say: ``phrase``, and each behaviour ``failed``
    names on a line of its own (the visible tests name no behaviour)."""
    return [phrase] + ([] if failed == VISIBLE else [f"- {behaviour} (" for behaviour in failed])


def loses_its_share_on_the_pytest_path(lab, wrong, notebook, tmp_path):
    """Assert that ``notebook``, the solution with the mistakes of table ``wrong`` (``{fill_in:
    (code, a phrase or phrases of its message, the behaviours it gets wrong)}``), loses on the
    pytest path exactly each fill-in's share, with messages that name the mistake and what it
    lost."""
    lost, outputs = graded_on_the_pytest_path(lab, notebook, tmp_path)
    assert lost == _shares_lost(lab, wrong)
    _assert_named(wrong, outputs)


def loses_its_share_on_the_nbgrader_path(lab, wrong, notebook, tmp_path, monkeypatch):
    """:func:`loses_its_share_on_the_pytest_path` on the nbgrader path: the same points, the same
    messages."""
    score, shown = graded_on_the_nbgrader_path(lab, notebook, tmp_path, monkeypatch)
    full = sum(points for _, points in notebooks.test_cells(lab))
    assert score == full - sum(_shares_lost(lab, wrong).values())
    _assert_named(wrong, shown)


def _shares_lost(lab, wrong):
    return points_lost(lab, {fill_in: failed for fill_in, (_, _, failed) in wrong.items()})


def _assert_named(wrong, messages):
    for fill_in, (_, phrases, failed) in wrong.items():
        message = messages[labs.test_cell_of(fill_in)]
        for phrase in [phrases] if isinstance(phrases, str) else phrases:
            for text in named_in(failed, phrase):
                assert text in message, (fill_in, message)


def graded_on_the_pytest_path(lab, notebook, tmp_path):
    """``({test cell id: points lost}, {test cell id: its message})`` of ``notebook``."""
    path = tmp_path / "wrong.ipynb"
    nbformat.write(notebook, path)
    result = runner.grade_submission(path, lab, "s", seed=SEED)
    return ({t.name: t.max_score - t.score for t in result.tests if t.score < t.max_score},
            {t.name: t.output for t in result.tests})


def graded_on_the_nbgrader_path(lab, notebook, tmp_path, monkeypatch):
    """``(score, {test cell id: its outputs' text})`` of ``notebook``, released, collected,
    autograded and exported with the instructor's commands."""
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("MINI_RELEASE_DIR", str(tmp_path / "release"))
    assert cli.main(["release", lab, "--reveal", "needs"]) == 0
    inbox = tmp_path / "inbox" / "wrong" / f"{lab}.ipynb"
    inbox.parent.mkdir(parents=True)
    nbformat.write(notebook, inbox)
    assert cli.main(["collect", str(tmp_path / "inbox")]) == 0
    monkeypatch.setenv("AUTOGRADER_SEED", str(SEED))
    assert cli.main(["autograde", lab]) == 0
    assert cli.main(["export", "--to", str(tmp_path / "grades.csv")]) == 0
    with open(tmp_path / "grades.csv") as file:
        score, = [float(row["raw_score"] or 0) for row in csv.DictReader(file)]
    graded = nbformat.read(tmp_path / "course" / "autograded" / "wrong" / lab / f"{lab}.ipynb",
                           as_version=4)
    shown = {cell.metadata["nbgrader"]["grade_id"]: " ".join(
        output.get("evalue", "") + output.get("text", "") for output in cell.outputs)
        for cell in graded.cells
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade")}
    return score, shown


def solution_with(lab, wrong):
    """``lab``'s solution notebook with the replacements of ``wrong`` (``{fill-in: ([(old, new)],
    ...)}``) made in its fill-ins."""
    nb = nbformat.read(source_notebook(lab), as_version=4)
    for cell in nb.cells:
        replacements = wrong.get(cell.metadata.get("nbgrader", {}).get("grade_id"), ([],))[0]
        cell.source = _replaced(cell.source, replacements)
    return nb


def _replaced(source, replacements):
    """``source`` with each ``(old, new)`` made, every ``old`` found exactly once."""
    for old, new in replacements:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


def namespace_through(lab, fill_in, replacements):
    """The solution's names as a kernel has them once ``fill_in``'s cell ran, that cell with
    ``replacements`` (``[(old, new)]``) made; demo and test cells are not run."""
    namespace = {"__name__": "__main__"}
    for cell in nbformat.read(source_notebook(lab), as_version=4).cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id") or ""
        if (cell.cell_type != "code" or "demo" in cell.metadata.get("tags", [])
                or grade_id.startswith("test_")):
            continue
        source = _replaced(cell.source, replacements if grade_id == fill_in else ())
        exec(compile(source, f"<{grade_id or 'cell'}>", "exec"), namespace)
        if grade_id == fill_in:
            return namespace
    raise LookupError(fill_in)


def verdict(lab, fill_in, check, namespace, seed=SEED):
    """Run one check of ``fill_in`` on ``namespace``, both halves here: AssertionError if it
    fails."""
    number = checks_of(lab)[fill_in].index(check)
    case = case_for(check, seed, fill_in, number)
    probes.lab_probes(lab)
    verify(case, probes.run(lab, case.task(), namespace, lambda question: answer(case, question)))
