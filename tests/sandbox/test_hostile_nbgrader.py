"""The hostile and broken submissions of ``hostile_cases`` on the nbgrader path (``autograde``).

One batch (lab 3, two workers, 5 s cells) beside two honest students.  Each submission must get
exactly the pytest path's score; the solutions, the release, the submissions and the sources of
mini, the grader and numpy must be unchanged, and the gradebook intact.
"""
import shutil
import sqlite3

import nbformat
import pytest

from autograder import cli
from autograder.nbgrader_path import course
from support import hostile_cases as cases
from support.course import course_in
from support.residue import digest

@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-nbgrader")
    with course_in(root, MINI_CELL_TIMEOUT=5):
        assert cli.main(["release", "lab3", "--reveal", "needs"]) == 0
        expected = cases.write_batch(root / "inbox")
        assert cli.main(["collect", str(root / "inbox")]) == 0
        # collect takes notebooks only; nbgrader's own tools would bring the whole folder
        submitted = root / "course" / "submitted"
        for name in cases.SHIPPED_FILES:
            shutil.copy(root / "inbox" / "ships_modules" / name,
                        submitted / "ships_modules" / cases.LAB / name)
        (submitted / "missing_notebook" / cases.LAB).mkdir(parents=True)
        folders = (cases.ROOT / "solutions", root / "release", submitted)
        before = [digest([folder]) for folder in folders] + [cases.grader_sources()]
        assert cli.main(["autograde", "lab3", "--workers", "2"]) == 0
        after = [digest([folder]) for folder in folders] + [cases.grader_sources()]
        for planted in cases.PLANTED:   # so that a failure here does not spoil later runs
            planted.unlink(missing_ok=True)
        from nbgrader.api import Gradebook
        grader = course.api()
        with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
            submissions = {name: gb.find_submission(cases.LAB, name) for name in expected}
            scores = {name: sub.score for name, sub in submissions.items()}
            comments = {name: [c.auto_comment for nb in sub.notebooks for c in nb.comments]
                        for name, sub in submissions.items()}
        gradebook = root / "course" / "gradebook.db"
        yield scores, comments, expected, before, after, gradebook, root / "course"


@pytest.mark.parametrize("name", sorted(cases.CASES) + ["ships_modules", "honest_full",
                                                        "honest_untouched"])
def test_a_hostile_submission_costs_only_its_own_points(batch, name):
    scores, _, expected, *_ = batch
    assert scores[name] == expected[name]


@pytest.mark.parametrize("name", sorted(cases.BROKEN_MESSAGES))
def test_a_broken_file_gets_zero_and_a_message(batch, name):
    scores, comments, *_ = batch
    assert scores[name] == 0
    assert comments[name] and set(comments[name]) == {f"Not graded: {cases.BROKEN_MESSAGES[name]}"}


def _printed(course_folder, name):
    nb = nbformat.read(course_folder / "autograded" / name / cases.LAB / f"{cases.LAB}.ipynb",
                       as_version=4)
    return [line for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
            if out.output_type == "stream" for line in out.text.splitlines()]


def test_reading_the_course_and_the_solutions_finds_nothing(batch):
    *_, course_folder = batch
    assert cases.NOTHING_READ in _printed(course_folder, "reads_and_writes_course_files")


def test_a_failed_cell_lets_go_of_its_objects_as_on_the_pytest_path(batch):
    """IPython would keep the failed cell's frames (its last traceback) until the next error."""
    *_, course_folder = batch
    assert cases.FORGOTTEN in _printed(course_folder, "fails_holding_an_object")


def test_importing_the_grader_from_a_submission_is_refused(batch):
    """As on the pytest path: the kernel keeps only ``autograder.hidden``, which its hidden cells
    call, importable (and the checks' stand-ins out of reach by import)."""
    *_, course_folder = batch
    assert cases.GRADER_IMPORT_BLOCKED in _printed(course_folder,
                                                   "monkeypatches_numpy_and_the_checks")


def test_nothing_but_the_gradebook_and_autograded_copies_changed(batch):
    *_, before, after, gradebook, _ = batch
    assert before == after
    assert not (cases.ROOT / "solutions" / "tampered.txt").exists()
    with sqlite3.connect(gradebook) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_dead_kernel_is_reported_in_the_cell_that_killed_it(batch):
    *_, course_folder = batch
    nb = nbformat.read(course_folder / "autograded" / "exits_the_worker" / cases.LAB
                       / f"{cases.LAB}.ipynb", as_version=4)
    test = cases.cell(nb, "test_backward_pass")
    assert [out.ename for out in test.outputs if out.output_type == "error"] == ["KernelDied"]


def test_printed_output_is_cut(batch):
    *_, course_folder = batch
    path = course_folder / "autograded" / "prints_megabytes" / cases.LAB / f"{cases.LAB}.ipynb"
    assert path.stat().st_size < 1_000_000
