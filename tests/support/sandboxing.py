"""What the sandbox's attack tests share: the kinds of isolation this machine has, lab 2 handed
in to a course's ``submitted/``, and what a probe cell printed into its autograded notebook."""
import json
import shutil

import nbformat

from autograder import cli, sandbox
from autograder.nbgrader_path import course
from autograder.sandbox import landlock

LAB = "lab2_graphs"
KINDS = [kind for kind in ("namespaces", "landlock")
         if kind == "landlock" and landlock.version() >= 4
         or kind == "namespaces" and sandbox._minimal_root_works()]


def autograded_report(student, prefix):
    """The JSON a probe cell printed after ``prefix``, read from the autograded notebook."""
    graded = nbformat.read(course.course_dir() / "autograded" / student / LAB / f"{LAB}.ipynb",
                           as_version=4)
    text = "\n".join(output.get("text", "") for cell in graded.cells if cell.cell_type == "code"
                     for output in cell.outputs)
    return json.loads(next(line for line in text.splitlines()
                           if line.startswith(prefix))[len(prefix):])


def hand_in(tmp_path, notebooks):
    """Release lab 2 into the course under ``tmp_path`` (where the test's ``MINI_COURSE_DIR`` and
    ``MINI_RELEASE_DIR`` point), then put ``{student: notebook}`` in its ``submitted/`` as collect
    would (None: the released notebook, untouched)."""
    assert cli.main(["release", "lab2"]) == 0
    for student, notebook in notebooks.items():
        target = tmp_path / "course" / "submitted" / student / LAB / f"{LAB}.ipynb"
        target.parent.mkdir(parents=True)
        if notebook is None:
            shutil.copy(tmp_path / "release" / LAB / f"{LAB}.ipynb", target)
        else:
            nbformat.write(notebook, target)
