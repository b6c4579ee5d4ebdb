"""The formgrader's grading view shows each written answer's model answer and rubric, which
come from solutions/ and never reach a student (not the released notebook, not the kit).

A lab 3 course with one submission: the released notebook, put where autograding leaves it
(no kernel runs), and the grading view fetched from a Jupyter server that loads only the
formgrader.
"""
import html
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from jupyter_core.paths import jupyter_config_path
from jupyter_server.extension.config import ExtensionConfigManager
from nbgrader.api import Gradebook

from autograder.deliveries import kit
from autograder.nbgrader_path import course, rubric
from support import ROOT
from support.course import formgrader

LABS = ("lab3_autodiff", "lab4_framework")      # the labs with written answers
STUDENT = "s_written"


def written_answers(lab):
    """{grade_id: a line of its rubric} for each written answer of ``lab`` in solutions/."""
    found = rubric.rubrics(ROOT / "solutions" / lab / f"{lab}.ipynb")
    return {grade_id: next(line.lstrip("- ").strip() for line in text.splitlines()
                           if line.startswith("- "))
            for grade_id, text in found.items()}


def test_each_written_answer_has_a_rubric():
    for lab in LABS:
        answers = written_answers(lab)
        assert len(answers) >= 2, (lab, answers)
        for grade_id in answers:
            assert "Rubric" in rubric.rubrics(
                ROOT / "solutions" / lab / f"{lab}.ipynb")[grade_id], grade_id


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """Labs 3 and 4 released, with the kit; one submission of lab 3, as if autograded; the
    formgrader's grading view of it (its HTML)."""
    root = tmp_path_factory.mktemp("rubric")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MINI_COURSE_DIR", str(root / "course"))
        env.setenv("MINI_RELEASE_DIR", str(root / "release"))
        env.delenv("MINI_EXCHANGE_DIR", raising=False)
        course.release(",".join(LABS))
        kit.write(root / "release", root / "kit", revealed=kit.needed(root / "release"))
        lab = LABS[0]
        grader = course.api()
        with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
            gb.update_or_create_student(STUDENT)
            submission = gb.add_submission(lab, STUDENT)
            [notebook_id] = [nb.id for nb in submission.notebooks]
        graded = course.place("autograded", STUDENT, lab)
        graded.mkdir(parents=True)
        shutil.copy(root / "release" / lab / f"{lab}.ipynb", graded)
        found = ExtensionConfigManager(
            read_config_path=jupyter_config_path()).get_jpserver_extensions()
        only = {name: name == "nbgrader.server_extensions.formgrader" for name in found}
        config = root / "only_the_formgrader.json"
        config.write_text(json.dumps({"ServerApp": {"jpserver_extensions": only}}))
        with formgrader(root, arguments=[f"--config={config}"]) as api:
            view = api.page(f"formgrader/submissions/{notebook_id}/")
        yield dict(root=root, view=view)


def test_the_grading_view_shows_each_written_answers_rubric(released):
    view = released["view"]
    for grade_id, line in written_answers("lab3_autodiff").items():
        assert grade_id in view
        assert _words(line) in _words(html.unescape(view)), (grade_id, line)
    assert view.count("Model answer and rubric") == len(written_answers("lab3_autodiff"))


def test_no_rubric_reaches_a_student(released):
    """Neither the released notebooks (labs/) nor the kit hold a rubric's words."""
    lines = [line for lab in LABS for line in written_answers(lab).values()]
    for folder in (released["root"] / "release", released["root"] / "kit"):
        for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
            try:
                text = path.read_text()
            except UnicodeDecodeError:
                continue
            assert "Rubric" not in text and "rubric" not in text.lower().replace(
                "rubric.py", ""), path
            assert not [line for line in lines if line[:40] in text], path


def _words(text):
    return " ".join(re.findall(r"\w+", text))


def test_feedback_is_rendered_without_a_rubric():
    """The feedback's exporter has the same preprocessors; it gives resources["nbgrader"]."""
    lab = LABS[0]
    assert "autograder.nbgrader_path.rubric.ShowRubrics" in \
        course.load_config().HTMLExporter.preprocessors
    nb = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    cells = len(nb.cells)
    feedback = {"nbgrader": {"assignment": lab, "notebook": lab, "student": STUDENT},
                "assignment_id": lab, "notebook_id": lab}
    nb, _ = rubric.ShowRubrics().preprocess(nb, feedback)
    assert len(nb.cells) == cells
    view = {"assignment_id": lab, "notebook_id": lab, "submission_id": "x"}
    nb, _ = rubric.ShowRubrics().preprocess(nb, view)
    assert len(nb.cells) == cells + len(written_answers(lab))
