"""The rubric of a written answer, for the formgrader's grading view, and for no other page.

Labs 1, 3 and 4 have written answers graded by hand.  Each one's model answer and rubric sit in
``solutions/`` in the answer cell itself, between nbgrader's solution markers, so that ``release``
strips them from what students get.  The grading view shows them under the student's answer:
``nbgrader_config.py`` gives nbconvert's HTML exporter the preprocessor :class:`ShowRubrics`,
which adds them to the notebook the formgrader renders for grading, and to no other: the
feedback page, written by the same exporter class, never holds one.  (nbgrader's formgrader
fixes its template folders over the course's configuration, so a template of ours cannot
replace its page.)
"""
import functools
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def source_notebook(assignment, notebook):
    """The instructor's notebook of ``assignment``: ``<source_directory>/<lab>/<notebook>.ipynb``
    of the course's configuration (``solutions/``)."""
    from autograder.nbgrader_path import course
    source = course.load_config().CourseDirectory.source_directory
    return Path(source) / assignment / f"{notebook}.ipynb"


def rubrics(path):
    """``{grade_id: the model answer and rubric}`` of the written answers (markdown cells graded
    by hand) of the notebook at ``path``; {} when there is none."""
    path = Path(path)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return {}
    return _rubrics(str(path), mtime)


@functools.lru_cache(maxsize=16)
def _rubrics(path, mtime):
    found = {}
    for cell in nbformat.read(path, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and meta.get("solution") and meta.get("grade_id"):
            lines = cell.source.splitlines()
            if any(BEGIN in line for line in lines):
                start = next(i for i, line in enumerate(lines) if BEGIN in line) + 1
                stop = next((i for i, line in enumerate(lines) if END in line), len(lines))
                lines = lines[start:stop]
            text = "\n".join(lines).strip()
            if text:
                found[meta["grade_id"]] = text
    return found


def for_grading_view(resources):
    """Whether nbconvert is rendering the formgrader's grading view (nbgrader's
    SubmissionHandler gives it ``submission_id``), not a student's feedback (nbgrader's converters
    give ``resources["nbgrader"]``)."""
    return resources.get("submission_id") is not None and "nbgrader" not in resources \
        and bool(resources.get("assignment_id")) and bool(resources.get("notebook_id"))


class ShowRubrics(Preprocessor):
    """After each written answer of the notebook the grading view renders, a markdown cell (with
    no nbgrader metadata: nothing to grade) quoting its model answer and rubric from the lab's
    source notebook.  Does nothing to any other page (:func:`for_grading_view`)."""

    def preprocess(self, nb, resources):
        if not for_grading_view(resources):
            return nb, resources
        found = rubrics(source_notebook(resources["assignment_id"], resources["notebook_id"]))
        cells = []
        for cell in nb.cells:
            cells.append(cell)
            meta = cell.metadata.get("nbgrader", {})
            text = found.get(meta.get("grade_id")) if cell.cell_type == "markdown" \
                and meta.get("solution") else None
            if text:
                quoted = "\n".join(f"> {line}".rstrip() for line in text.splitlines())
                cells.append(nbformat.v4.new_markdown_cell(
                    f"> **Model answer and rubric** (instructors only; `{meta['grade_id']}` in "
                    f"the lab's source notebook)\n>\n{quoted}", metadata={"mini_rubric": True}))
        nb.cells = cells
        return nb, resources
