"""People of a course on one shared machine, for nbgrader's exchange: each with a HOME and USER
of their own, running their commands at once; a student with the student configuration installed
as ``~/.jupyter/nbgrader_config.py``, handing in lab 2."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from autograder.nbgrader_path import course

LAB = "lab2_graphs"
BIN = Path(sys.executable).parent
REPO = course.REPO


def person(home, name, **variables):
    """The environment of one person's processes: their own HOME and USER, nothing of the test's
    Jupyter folders (each person's Jupyter data, nbgrader's submission cache among it, is theirs)."""
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": str(home),
            "USER": name, "LOGNAME": name, "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1", **variables}


def run(*jobs):
    """Run each ``(command, env, cwd)`` at once (different people at their own machines), wait for
    all, and return their output; each must succeed."""
    started = [(command, subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
               for command, env, cwd in jobs]
    outputs = []
    for command, process in started:
        output, _ = process.communicate(timeout=300)
        assert process.returncode == 0, f"{' '.join(map(str, command))} failed:\n{output}"
        outputs.append(output)
    return outputs


def student(tmp_path, name, exchange):
    home = tmp_path / name
    env = person(home, name, MINI_EXCHANGE_DIR=str(exchange))
    (home / ".jupyter").mkdir()
    shutil.copy(REPO / "autograder" / "config" / "student_nbgrader_config.py",
                home / ".jupyter" / "nbgrader_config.py")
    return home, env


def nbgrader(home, env, *arguments):
    """One of a student's nbgrader commands, as a job for :func:`run`."""
    return [BIN / "nbgrader", *arguments], env, home


def submitting(home, env, nb):
    """Save ``nb`` over the student's fetched notebook; the job that submits it."""
    nbformat.write(nb, home / LAB / f"{LAB}.ipynb")
    return nbgrader(home, env, "submit", LAB, "--student", env["USER"])
