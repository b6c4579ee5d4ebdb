"""Bring submitted notebooks into the course folder, whatever shape they arrive in.

Accepted, in a folder or a zip file:

* ``<student>/<lab>.ipynb`` or ``<student>/<lab>/<lab>.ipynb`` (one folder per student);
* Canvas downloads: ``<login>_<userid>_<submissionid>_<lab>.ipynb`` (``_LATE_`` allowed);
* Moodle downloads: ``<Full Name>_<id>_assignsubmission_file_<lab>.ipynb``.

``<lab>`` may be the full name (``lab3_autodiff``) or the short one (``lab3``), and LMS suffixes
such as ``-1`` are ignored.  Each notebook lands in ``submitted/<student>/<lab>/<lab>.ipynb`` with
a ``timestamp.txt``, as nbgrader expects, and a ``submission_secret.txt`` like the one ``nbgrader
submit`` leaves (nbgrader's ``release_feedback`` names each feedback file with it, and stops at the
first submission without one).  A file whose name says no lab or no student is reported, not fatal.
"""
import datetime
import re
import secrets
import shutil
import tempfile
import zipfile
from pathlib import Path

from autograder.labs import LABS, short_name
from autograder.nbgrader_path import course

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")


def collect(source):
    """Copy every notebook under ``source`` (a folder or a .zip) into the course.

    Returns ``(collected, problems)``: ``[(student, lab)]`` and ``[(file, reason)]``.
    """
    source = Path(source)
    if not source.exists():
        raise FileNotFoundError(f"nothing to collect: {source} does not exist")
    if source.suffix == ".zip":
        with tempfile.TemporaryDirectory() as folder:
            try:
                with zipfile.ZipFile(source) as archive:
                    archive.extractall(folder)
            except zipfile.BadZipFile:
                raise ValueError(f"{source} is not a readable zip file") from None
            return _collect_folder(Path(folder))
    return _collect_folder(source)


def _collect_folder(folder):
    collected, problems = [], []
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts or "__MACOSX" in path.parts:
            continue
        relative = path.relative_to(folder)
        student, lab = parse(relative)
        if lab is None:
            problems.append((str(relative), f"the name names none of the labs ({', '.join(LABS)})"))
        elif student is None:
            problems.append((str(relative), "cannot tell the student from the name: use "
                                            "<student>/<lab>.ipynb or an LMS download name"))
        else:
            target = course.place("submitted", student, lab)
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target / f"{lab}.ipynb")
            stamp = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc)
            (target / "timestamp.txt").write_text(stamp.strftime("%Y-%m-%d %H:%M:%S.%f %Z"))
            (target / "submission_secret.txt").write_text(secrets.token_hex(16))
            collected.append((student, lab))
    return collected, problems


def parse(relative):
    """``(student, lab)`` from a path relative to the collected folder; None where unknown."""
    relative = Path(relative)
    lab = _lab_in(relative.stem)
    if len(relative.parts) > 1:
        student = relative.parts[0]
    elif "_assignsubmission_" in relative.name:
        student = relative.name.split("_assignsubmission_")[0].rsplit("_", 1)[-1]
    else:
        student = relative.name.split("_", 1)[0] if "_" in relative.name else None
    if student is not None and (not STUDENT_ID.match(student) or _lab_in(student)):
        student = None
    return student, lab


def _lab_in(stem):
    stem = stem.lower()
    for name in LABS:
        if name in stem:
            return name
    for name in LABS:
        if re.search(rf"(^|[_\-\s]){short_name(name)}($|[_\-\s])", stem):
            return name
    return None
