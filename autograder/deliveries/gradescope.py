"""The Gradescope autograder of one lab: the zip to upload, and the grading it runs there.

Gradescope builds an Ubuntu image from the zip once (``setup.sh``, as root) and then, for every
submission, runs ``run_autograder`` in ``/autograder`` with the student's upload in
``/autograder/submission``; it shows the student ``/autograder/results/results.json``.

The zip holds the grader (this package, with the checks of that lab only), mini, and the lab's
RELEASED notebook: it names the test cells and their points exactly as the source notebook does,
and has no answers.  There is no ``solutions/`` in it.  For each submission, :func:`grade` finds
the one notebook uploaded (any name, any folder), grades it on the pytest path
(``autograder.pytest_path.runner``: the student's cells run in a sandboxed worker, verdicts are
decided in this process, which runs no student code; nothing else of the upload is run or imported),
and writes the one results.json, with a score of 0 and the reason when the upload holds no notebook,
several, or one that cannot be read.
"""
import argparse
import dataclasses
import json
import os
import re
import shlex
import sys
import time
import tomllib
import traceback
import zipfile
from pathlib import Path

from autograder import notebooks, sandbox, settings
from autograder.checks import new_seed
from autograder.labs import LABS, short_name
from autograder.pytest_path import runner

REPO = runner.REPO
# What only the nbgrader path and Jupyter itself need: Gradescope grades without them.
NOT_FOR_GRADING = {"nbgrader", "jupyterlab", "nbclient", "distributed"}   # distributed: grade --scheduler
STUDENT = "submission"
ZIP_DATE = (2020, 1, 1, 0, 0, 0)        # fixed, so the same sources give the same zip


def build(lab, folder, release_folder=None, limits=None):
    """Write ``<folder>/<lab>.zip`` and return its path.

    ``release_folder`` holds the released notebooks (default: ``labs/``); ``limits`` are the
    worker's (``sandbox.Limits``) on Gradescope.  Raises FileNotFoundError or ValueError, saying
    what to do, when the released notebook is missing, out of date, or holds answers.
    """
    released = Path(release_folder or settings.RELEASE_DIR.get()) / lab / f"{lab}.ipynb"
    _check_release(lab, released)
    entries = [("setup.sh", _setup_script(), 0o755),
               ("run_autograder", _run_script(lab, limits or sandbox.Limits()), 0o755),
               ("requirements.txt", requirements(), 0o644),
               (f"labs/{lab}/{lab}.ipynb", released.read_bytes(), 0o644)]
    entries += [(path.relative_to(REPO).as_posix(), path.read_bytes(), 0o644)
                for path in _package_files(lab)]
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{lab}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, ZIP_DATE)
            info.external_attr = (0o100000 | mode) << 16       # a regular file with this mode
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return target


def _check_release(lab, released):
    if not released.is_file():
        raise FileNotFoundError(f"there is no released notebook {released}; run `python -m "
                                f"autograder release {lab}` first")
    text = released.read_text()
    for marker in ("### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS"):
        if marker in text:
            raise ValueError(f"{released} contains {marker!r}: it is not a released notebook, and "
                             "the zip would give the answers away")
    if notebooks.source_notebook(lab).is_file():
        with notebooks.sources_in(released.parent.parent):
            shipped = notebooks.test_cells(lab)
        if shipped != notebooks.test_cells(lab):
            raise ValueError(f"{released} does not have the test cells and points of "
                             f"{notebooks.source_notebook(lab)}; run `python -m autograder release "
                             f"{lab}` again")


def _package_files(lab):
    """mini and this package: every module, mini's data, and of the checks only this lab's (a
    module ``checks/labN.py`` or a package ``checks/labN/``)."""
    other_checks = {short_name(name) for name in LABS if name != lab}
    for package in ("mini", "autograder"):
        for path in sorted((REPO / package).rglob("*")):
            parts = path.relative_to(REPO).parts
            if (path.is_file() and path.suffix in (".py", ".tsv")
                    and not any(part.startswith((".", "__pycache__")) for part in parts)
                    and parts[:2] != ("autograder", "config")
                    and not (parts[:2] == ("autograder", "checks")
                             and Path(parts[2]).stem in other_checks)):
                yield path


def requirements():
    """requirements.txt: pyproject's dependencies, less those only the nbgrader path needs."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    kept = [spec for spec in project["dependencies"]
            if re.match(r"[A-Za-z0-9._-]+", spec).group(0).lower() not in NOT_FOR_GRADING]
    return "\n".join(kept) + "\n"


def _setup_script():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    major, minor = re.search(r">=\s*(\d+)\.(\d+)", project["requires-python"]).groups()
    return f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the grading image (Ubuntu): Python
# {major}.{minor} or newer in a virtual environment /autograder/venv with requirements.txt in it.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv
python=python3
if ! python3 -c 'import sys; sys.exit(sys.version_info < ({major}, {minor}))'; then
    apt-get install -y --no-install-recommends python{major}.{minor} python{major}.{minor}-venv
    python=python{major}.{minor}
fi
"$python" -m venv /autograder/venv
/autograder/venv/bin/pip install --no-cache-dir -r /autograder/source/requirements.txt
"""


def _run_script(lab, limits):
    limits_json = shlex.quote(json.dumps(dataclasses.asdict(limits)))
    return f"""#!/usr/bin/env bash
# Gradescope runs this for every submission: it grades the one notebook in /autograder/submission
# and writes /autograder/results/results.json.  MINI_GRADESCOPE_ROOT stands for /autograder where
# the same layout is made somewhere else (the project's tests do).
root="${{MINI_GRADESCOPE_ROOT:-/autograder}}"
(cd "$root/source" && exec "$root/venv/bin/python" -E -s -m autograder.deliveries.gradescope {lab} "$root" \\
    --limits {limits_json})
status=$?
if [ ! -s "$root/results/results.json" ]; then       # it did not get as far as grading
    mkdir -p "$root/results"
    why="The autograder could not start (exit status $status), so nothing was graded"
    printf '{{"score": 0, "output": "%s; this is not a verdict on your work. Tell your '\\
'instructor."}}\\n' "$why" > "$root/results/results.json"
fi
exit "$status"
"""


def find_notebook(submission):
    """The one ``.ipynb`` under ``submission``, wherever it is and whatever its name.

    Jupyter's checkpoints, macOS's ``__MACOSX`` copies, hidden files and links do not count.
    Raises ValueError with a message for the student when there is none, or more than one.
    """
    submission = Path(submission)
    found = []
    for folder, subfolders, files in os.walk(submission):
        subfolders[:] = sorted(name for name in subfolders
                               if not name.startswith(".") and name != "__MACOSX")
        found += [Path(folder) / name for name in sorted(files)
                  if name.lower().endswith(".ipynb") and not name.startswith(".")
                  and not (Path(folder) / name).is_symlink()]
    if not found:
        raise ValueError("your submission holds no Jupyter notebook (.ipynb): upload the lab's "
                         "notebook, saved from Jupyter")
    if len(found) > 1:
        names = ", ".join(path.relative_to(submission).as_posix() for path in found)
        raise ValueError(f"your submission holds {len(found)} notebooks ({names}): upload only "
                         "the lab's notebook")
    return found[0]


def grade(lab, root, limits=None):
    """Grade the upload in ``<root>/submission``; write ``<root>/results/results.json``.

    Returns 0 when the submission was graded (whatever its score, a score of 0 with the reason
    for an unusable upload), 1 when the grader itself failed (results.json then says so).
    """
    started, root = time.monotonic(), Path(root)
    seed, status = new_seed(), 0
    try:
        with notebooks.sources_in(REPO / "labs"):
            try:
                notebook = find_notebook(root / "submission")
            except ValueError as error:
                tests = [runner.TestResult(grade_id, 0.0, points, str(error))
                         for grade_id, points in notebooks.test_cells(lab)]
                result = runner.SubmissionResult(STUDENT, lab, seed, tests, [str(error)])
            else:
                print(f"grading {notebook.relative_to(root / 'submission')} for {lab}")
                result = runner.grade_submission(notebook, lab, STUDENT, seed, limits)
        results = result.gradescope()
        print(f"{lab}: {result.score:g}/{result.max_score:g} (seed {seed})")
    except Exception as error:       # a fault of the grader, not of the submission
        traceback.print_exc()
        results, status = {"score": 0.0, "tests": [], "output": (
            f"The autograder failed ({type(error).__name__}: {error}), so this submission was "
            "not graded; this is not a verdict on your work. Tell your instructor.")}, 1
    results.update(execution_time=round(time.monotonic() - started), stdout_visibility="hidden")
    folder = root / "results"
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / "results.json.partial"
    partial.write_text(json.dumps(results, indent=1))
    partial.replace(folder / "results.json")
    return status


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder.deliveries.gradescope",
                                     description="Grade a Gradescope submission (run_autograder "
                                                 "calls this).")
    parser.add_argument("lab", choices=LABS)
    parser.add_argument("root", help="Gradescope's /autograder folder")
    parser.add_argument("--limits", default="{}", help="the worker's limits, as JSON")
    args = parser.parse_args(argv)
    return grade(args.lab, args.root, sandbox.Limits(**json.loads(args.limits)))


if __name__ == "__main__":
    sys.exit(main())
