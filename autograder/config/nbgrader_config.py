"""The nbgrader course for the mini labs.

Sources are the complete notebooks in ``solutions/``; releases go to ``labs/``.  Everything a course
run writes (submissions, autograded copies, feedback, the gradebook) lives in the course folder:
``$MINI_COURSE_DIR``, else ``course/`` in the repository (git ignores it).  Assignments and
feedback travel between instructor and students through nbgrader's exchange folder (below).
"""

from autograder import settings
from autograder.nbgrader_path.course import (REPO, course_dir, exchange_dir, find_nbgrader_tools,
                                             template_folders)
from autograder.nbgrader_path.formgrader import inside_jupyter_server, serve_mathjax
from autograder.sandbox import Limits

COURSE = course_dir()
# What a fresh checkout's formgrader needs: a course folder to open the gradebook in, and
# nbgrader's `alembic` on PATH when the virtualenv was not activated.
COURSE.mkdir(parents=True, exist_ok=True)
find_nbgrader_tools()

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.CourseDirectory.course_id = "mini"
c.CourseDirectory.root = str(COURSE)
c.CourseDirectory.source_directory = str(REPO / "solutions")
c.CourseDirectory.release_directory = settings.RELEASE_DIR.get()
c.CourseDirectory.db_url = f"sqlite:///{COURSE / 'gradebook.db'}"

# The exchange: release_assignment writes to it, students fetch from and submit to it, collect and
# release_feedback read and write it.  Every person's nbgrader must name the same folder, writable
# by all with the sticky bit (mode 1777, made by autograder.nbgrader_path.course.ensure_exchange).
# On a shared server (JupyterHub) it is a system folder outside any home, /srv/nbgrader/exchange,
# which the hub passes to every server as MINI_EXCHANGE_DIR (config/jupyterhub_config.py);
# students read it from config/student_nbgrader_config.py.  Without that variable (a laptop, one
# account trying the round trip) it is the course folder's exchange/: no root needed, and hidden
# from student code while it is graded, as the rest of the course folder is.
c.Exchange.root = str(exchange_dir())

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Autograding: a cell may run as long as on the pytest path (sandbox.Limits.cell_seconds), or
# MINI_CELL_TIMEOUT seconds; tracebacks show the error message, not the hidden test's source lines.
c.Execute.timeout = int(settings.CELL_TIMEOUT.get() or Limits.cell_seconds)
c.Execute.extra_arguments = ["--InteractiveShell.xmode=Minimal"]
# A submission that deleted a test cell gets it back (graded as usual), instead of a silent
# "needs manual grade"; one that duplicated, split or re-marked cells gets the lab's cells back
# (autograder.nbgrader_path.preprocessors.RestoreCells).
c.OverwriteCells.add_missing_cells = True
c.Autograde.sanitize_preprocessors = [
    "autograder.nbgrader_path.preprocessors.RestoreCells",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# The hidden checks' verdicts are decided here, not in the kernel, and a cell that kills its kernel
# costs that cell only (autograder.nbgrader_path.preprocessors.VerdictsOutsideKernel);
# what a cell prints is kept to 20,000 characters (CutOutput).
c.Autograde.autograde_preprocessors = [
    "autograder.nbgrader_path.preprocessors.VerdictsOutsideKernel",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "autograder.nbgrader_path.preprocessors.CutOutput",
    "autograder.nbgrader_path.preprocessors.StderrIsNotFailure",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Late work (autograder/nbgrader_path/late.py; docs/instructors.md, "... late work").  A
# submission's time is its timestamp.txt, which `python -m autograder collect` writes from the
# submission's own time; each lab's due date is the gradebook's, written from DUE_DATES at release
# and before each autograde.  A submission after its due date loses points_per_hour for each hour,
# or part of an hour, late, never more than cap (nor more than it scored).  Feedback shows the
# penalty, and the exports subtract it.  A date without a zone is in c.DueDates.timezone.
DUE_DATES = {
    # "lab1_learning": "2026-02-06 23:59:00",
    # "lab2_graphs": "2026-02-20 23:59:00",
}
c.DueDates.dates = DUE_DATES
c.DueDates.timezone = "UTC"
c.AssignLatePenalties.plugin_class = "autograder.nbgrader_path.late.HourlyPenalty"
c.HourlyPenalty.points_per_hour = 2.0
c.HourlyPenalty.cap = 20.0
# The Canvas export's assignment columns, "<lab> (<Canvas assignment id>)": the id is the number
# in the assignment's address; a lab without one is matched by its name in Canvas.
c.CanvasExport.assignment_ids = {}

# The formgrader's Autograde button runs these preprocessors in the Jupyter server; its kernels are
# the sandboxed ones `python -m autograder autograde` starts (autograder.nbgrader_path.formgrader).
# Its grading view loads MathJax from the server, not from a CDN.
if inside_jupyter_server():
    c.ResilientExecute.kernel_manager = "autograder.nbgrader_path.formgrader.SandboxedKernelManager"
    serve_mathjax()
# Only notebooks are copied from a submission to where it runs: a numpy.py, sitecustomize.py or
# .pth shipped beside the notebook is never importable while grading.  Nor is the batch's marker
# of a graded submission (autograder.nbgrader_path.batch.MARKER) copied on into its feedback.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.py",
                            "*.pth", "*.so", "*.pyd", "*.egg-link", ".mini-graded",
                            "collected.json"]
# Feedback shows the student their results without the hidden tests, and a written answer not
# graded yet as pending (autograder/templates/feedback, found before nbgrader's own page).
c.HTMLExporter.extra_template_basedirs = template_folders()
# The formgrader's grading view shows, under each written answer, its model answer and rubric
# from solutions/ (autograder.nbgrader_path.rubric.ShowRubrics: only on that page, never in
# feedback, which the same exporter class writes).
c.HTMLExporter.preprocessors = ["autograder.nbgrader_path.rubric.ShowRubrics"]
c.GenerateFeedback.preprocessors = [
    "autograder.nbgrader_path.preprocessors.GradesWithPending",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]

# This term's settings, kept with the course rather than in the repository: a course folder's own
# course_config.py, when there is one, is read last and overrides this file (the due dates, the
# late policy, the Canvas ids: c.DueDates.dates = {...}, c.HourlyPenalty.points_per_hour = ...).
load_subconfig(str(COURSE / "course_config.py"))  # noqa: F821 (given by traitlets, as get_config)
