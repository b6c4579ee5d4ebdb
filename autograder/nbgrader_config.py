"""The nbgrader course for the mini labs.

Sources are the complete notebooks in ``solutions/``; releases go to ``labs/``.  Everything a course
run writes (submissions, autograded copies, feedback, the gradebook) lives in the course folder:
``$MINI_COURSE_DIR``, else ``course/`` in the repository (git ignores it).
"""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COURSE = Path(os.environ.get("MINI_COURSE_DIR") or REPO / "course").resolve()

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.CourseDirectory.course_id = "mini"
c.CourseDirectory.root = str(COURSE)
c.CourseDirectory.source_directory = str(REPO / "solutions")
c.CourseDirectory.release_directory = os.environ.get("MINI_RELEASE_DIR") or str(REPO / "labs")
c.CourseDirectory.db_url = f"sqlite:///{COURSE / 'gradebook.db'}"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Autograding: a cell may run for MINI_CELL_TIMEOUT seconds (lab 5's simulator cells need ~20 s);
# tracebacks show the error message, not the hidden test's source lines.
c.Execute.timeout = int(os.environ.get("MINI_CELL_TIMEOUT") or 60)
c.Execute.extra_arguments = ["--InteractiveShell.xmode=Minimal"]
# A submission that deleted a test cell gets it back (graded as usual), instead of a silent
# "needs manual grade".
c.OverwriteCells.add_missing_cells = True
# Feedback shows the student their results without the hidden tests.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
