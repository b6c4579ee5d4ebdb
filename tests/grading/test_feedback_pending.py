"""A feedback page says which points are still to be graded by hand, instead of showing them as 0.

Lab 3 holds written answers (10 points) that a grader scores in the formgrader.  Autograded and
sent back before that, a full solution's page reads 100 of the 100 points graded so far, with the
10 pending, and each written answer "pending"; once a grader scored one, the page counts it, and
once every one is scored, nothing is pending and the total is out of 110.
"""
import re

import nbformat
from nbgrader.api import Gradebook

from autograder import cli, notebooks
from autograder.nbgrader_path import batch, course
from autograder.demo import samples

LAB = "lab3_autodiff"


def _written(lab):
    """``{grade id: points}`` of the lab's answers graded by hand."""
    return {cell.metadata["nbgrader"]["grade_id"]: float(cell.metadata["nbgrader"]["points"])
            for cell in nbformat.read(notebooks.source_notebook(lab), as_version=4).cells
            if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("grade")}


def _page(tmp_path):
    assert batch.feedback(LAB) == {}
    return (tmp_path / "course" / "feedback" / "ada" / LAB / f"{LAB}.html").read_text()


def _hand_grade(grade_id, score):
    grader = course.api()
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        gb.find_grade(grade_id, LAB, LAB, "ada").manual_score = score
        gb.db.commit()


def test_written_answers_read_pending_until_a_grader_scores_them(tmp_path, monkeypatch):
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("MINI_RELEASE_DIR", str(tmp_path / "release"))
    assert cli.main(["release", LAB, "--reveal", "needs"]) == 0
    samples.write("full", LAB, tmp_path / "release", tmp_path / "inbox" / "ada" / f"{LAB}.ipynb")
    assert cli.main(["collect", str(tmp_path / "inbox")]) == 0
    assert cli.main(["autograde", LAB, "--workers", "1"]) == 0
    written = _written(LAB)
    assert sum(written.values()) == 10 and len(written) >= 2

    html = _page(tmp_path)
    assert f"{LAB} (Score: 100.0 / 100.0, with 10.0 more points pending: not graded yet)" in html
    pending = re.findall(r'<a href="#(\w+)">Written response</a> \(Score: <span class="pending">'
                         r'pending</span> / ([\d.]+)\)', html)
    assert dict(pending) == {grade_id: str(points) for grade_id, points in written.items()}
    assert "(Score: 0.0 /" not in html

    first, *rest = written
    _hand_grade(first, written[first] - 1)
    html = _page(tmp_path)
    left = sum(written[grade_id] for grade_id in rest)
    assert (f"{LAB} (Score: {99.0 + written[first]} / {100.0 + written[first]}, with {left} more "
            "points pending: not graded yet)") in html
    assert f'<a href="#{first}">Written response</a> (Score: {written[first] - 1} /' in html

    for grade_id in rest:
        _hand_grade(grade_id, written[grade_id])
    html = _page(tmp_path)
    assert f"{LAB} (Score: 109.0 / 110.0)" in html
    assert ">pending<" not in html and "points pending" not in html
