"""The Gradescope autograder: lab 2's zip, unpacked into a folder laid out as Gradescope's
/autograder, and its run_autograder run as Gradescope runs it on sample submissions whose scores
are known (the complete solution, one with a realistic bug, a file that is not a notebook), and on
uploads that hold no notebook or several."""
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from autograder import cli, notebooks, sandbox
from autograder.deliveries import gradescope
from autograder.demo import samples
from support import ROOT as REPO

LAB = "lab2_graphs"
POINTS = dict(notebooks.test_cells(LAB))
# The bug makes one toposort check run until it is stopped: 5 s instead of 30 keeps this file short.
LIMITS = sandbox.Limits(check_seconds=5)
# Files of an upload that would run if the grader imported or executed anything but the notebook.
BAIT = ["sitecustomize.py", "usercustomize.py", "conftest.py", "mini/__init__.py",
        "autograder/__init__.py", "autograder/deliveries/gradescope.py", "numpy/__init__.py"]


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """The zip as an instructor makes it: ``python -m autograder gradescope lab2 --to DIR``."""
    folder = tmp_path_factory.mktemp("zip")
    assert cli.main(["gradescope", "lab2", "--to", str(folder),
                     "--check-seconds", str(LIMITS.check_seconds)]) == 0
    return folder / f"{LAB}.zip"


def gradescope_root(archive, root):
    """What Gradescope's image holds before a submission arrives: the zip in source/ (file modes
    as in the zip), run_autograder copied to the root, and setup.sh's virtual environment, here a
    stand-in that runs this interpreter."""
    with zipfile.ZipFile(archive) as unpacked:
        for info in unpacked.infolist():
            path = root / "source" / info.filename
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(unpacked.read(info))
            path.chmod(info.external_attr >> 16 & 0o777)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    python = root / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    (root / "submission").mkdir()
    (root / "results").mkdir()
    return root


def run_autograder(root):
    """Run it as Gradescope does (in /autograder); the exit status and results.json."""
    done = subprocess.run([str(root / "run_autograder")], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "MINI_GRADESCOPE_ROOT": str(root)}, timeout=180)
    return done, json.loads((root / "results" / "results.json").read_text())


def write_sample(kind, path):
    return samples.write(kind, LAB, REPO / "labs", path)


def test_the_zip_holds_the_grader_and_no_answers(archive):
    with zipfile.ZipFile(archive) as unpacked:
        names = unpacked.namelist()
        texts = {name: unpacked.read(name).decode(errors="replace") for name in names}
        modes = {info.filename: info.external_attr >> 16 & 0o777 for info in unpacked.infolist()}
    assert not [name for name in names if name.startswith("solutions/")]
    notebooks = [name for name in names if name.endswith(".ipynb")]
    assert notebooks == [f"labs/{LAB}/{LAB}.ipynb"]
    assert not [name for name in notebooks
                if "### BEGIN SOLUTION" in texts[name] or "### BEGIN HIDDEN TESTS" in texts[name]]
    for needed in ("setup.sh", "run_autograder", "requirements.txt", f"labs/{LAB}/{LAB}.ipynb",
                   "mini/__init__.py", "mini/data/sentiment.tsv", "autograder/pytest_path/runner.py",
                   "autograder/pytest_path/worker.py", "autograder/checks/lab2.py"):
        assert needed in names, needed
    checks = [n for n in names if n.startswith("autograder/checks/")]
    assert "autograder/checks/__init__.py" in checks       # and the modules the labs share,
    assert [n for n in checks if n.startswith("autograder/checks/lab")] == [   # but no other
        "autograder/checks/lab2.py"]                                         # lab's checks
    assert modes["setup.sh"] == modes["run_autograder"] == 0o755
    for script in ("setup.sh", "run_autograder"):
        assert subprocess.run(["bash", "-n", "-c", texts[script]]).returncode == 0, script
    required = texts["requirements.txt"].split()
    assert "numpy>=1.26" in required and "nbformat>=5.9" in required
    assert not [line for line in required
                if line.startswith(("nbgrader", "jupyterlab", "distributed"))]


def test_a_release_that_holds_answers_is_refused(tmp_path):
    with pytest.raises(ValueError, match="BEGIN SOLUTION"):
        gradescope.build(LAB, tmp_path, release_folder=REPO / "solutions")


def test_complete_solution_scores_full_points_and_nothing_else_uploaded_runs(archive, tmp_path):
    root = gradescope_root(archive, tmp_path)
    write_sample("full", root / "submission" / "my work" / "Lab 2 (final).ipynb")
    write_sample("untouched", root / "submission" / "my work" / ".ipynb_checkpoints" /
                 "Lab 2 (final)-checkpoint.ipynb")          # Jupyter's copy: not a submission
    for name in BAIT:
        bait = root / "submission" / name
        bait.parent.mkdir(parents=True, exist_ok=True)
        bait.write_text(f"open({str(root / 'ran')!r}, 'a').write({name!r})\n")
    done, results = run_autograder(root)
    assert done.returncode == 0, done.stderr
    assert not (root / "ran").exists(), (root / "ran").read_text()
    assert results["score"] == sum(POINTS.values()) == 100
    assert {t["name"]: t["score"] for t in results["tests"]} == POINTS
    assert all(t["status"] == "passed" and t["visibility"] == "visible" for t in results["tests"])
    assert "seed" in results["output"] and isinstance(results["execution_time"], int)
    assert results["stdout_visibility"] == "hidden"


def test_one_bug_costs_the_points_of_its_fill_in(archive, tmp_path):
    root = gradescope_root(archive, tmp_path)
    write_sample("bug", root / "submission" / f"{LAB}.ipynb")
    done, results = run_autograder(root)
    assert done.returncode == 0, done.stderr
    wrong = "test_" + samples.BUGS[LAB][0]
    assert results["score"] == 100 - POINTS[wrong]
    scores = {t["name"]: t["score"] for t in results["tests"]}
    assert scores == {**POINTS, wrong: 0.0}
    failed = next(t for t in results["tests"] if t["name"] == wrong)
    assert failed["status"] == "failed" and "toposort" in failed["output"]


def upload(root, files):
    for name, text in files.items():
        path = root / "submission" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_sample("full", path) if text is None else path.write_text(text)


def assert_zero_with(results, message):
    assert results["score"] == 0 and message in results["output"], results["output"]
    assert {t["name"]: t["score"] for t in results["tests"]} == dict.fromkeys(POINTS, 0.0)


def test_a_file_that_is_not_a_notebook_scores_zero_and_says_why(archive, tmp_path):
    root = gradescope_root(archive, tmp_path)
    upload(root, {f"{LAB}.ipynb": '{"cells": [ not json'})
    done, results = run_autograder(root)
    assert done.returncode == 0, done.stderr
    assert_zero_with(results, f"{LAB}.ipynb is not a readable notebook")


@pytest.mark.parametrize("files, message", [
    ({"notes.txt": "my notebook is attached", ".hidden.ipynb": None,
      "__MACOSX/._lab2.ipynb": "\0"}, "holds no Jupyter notebook"),
    ({"a/lab2.ipynb": None, "b/lab2_graphs.ipynb": None},
     "2 notebooks (a/lab2.ipynb, b/lab2_graphs.ipynb)"),
], ids=["no-notebook", "two-notebooks"])
def test_an_upload_without_exactly_one_notebook_scores_zero_and_says_why(tmp_path, files, message):
    upload(tmp_path, files)                     # what run_autograder runs, in this process
    assert gradescope.grade(LAB, tmp_path, LIMITS) == 0
    assert_zero_with(json.loads((tmp_path / "results" / "results.json").read_text()), message)


def test_a_broken_grader_still_writes_results_that_say_so(archive, tmp_path):
    root = gradescope_root(archive, tmp_path)
    write_sample("full", root / "submission" / f"{LAB}.ipynb")
    (root / "source" / "autograder" / "checks" / "lab2.py").unlink()   # the grader, not the student
    done, results = run_autograder(root)
    assert done.returncode == 1
    assert results["score"] == 0 and "The autograder failed (ModuleNotFoundError" in \
        results["output"]
    shutil.rmtree(root / "venv")                                       # setup.sh did not run
    (root / "results" / "results.json").unlink()
    done, results = run_autograder(root)
    assert done.returncode != 0
    assert results["score"] == 0 and "could not start" in results["output"]
