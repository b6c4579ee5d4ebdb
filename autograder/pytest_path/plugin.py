"""The pytest path as a pytest test module: one test per submission and test cell.

``python -m autograder grade`` runs pytest on this file with the batch to grade handed to pytest
as a plugin, a :class:`Batch`.  Every submission is graded once, up front, in worker processes
(``autograder.pytest_path.runner``) on this machine or on a Dask cluster
(``autograder.pytest_path.cluster``); each test then reports one test cell's verdict with the
check's message, and the session writes
``<out>/<lab>/<student>/results.json`` and ``<out>/grades.csv``.
"""
import concurrent.futures
import csv
import dataclasses
import json
import sys
from pathlib import Path

import pytest
from tqdm import tqdm

from autograder import notebooks, sandbox
from autograder.pytest_path import cluster, runner


@dataclasses.dataclass
class Batch:
    """What one pytest session grades, and how: ``pytest.main([this file], plugins=[batch])``.

    Handed to pytest rather than kept in this module, since a process may grade several batches
    (the module is imported once); as a plugin it puts itself in the session's ``config.stash``,
    where the tests find it (:func:`batch_of`).
    """

    submissions: Path              # <student>/<lab>.ipynb or <student>/<lab>/<lab>.ipynb
    labs: list
    out: Path                      # where results.json and grades.csv go
    seed: int
    workers: int = 1               # submissions graded at a time
    scheduler: str = ""            # a Dask scheduler's address, "local", or "" for this machine
    limits: sandbox.Limits = dataclasses.field(default_factory=sandbox.Limits)

    def pytest_configure(self, config):
        """pytest's hook, once per session: leave this batch where the tests look for it."""
        config.stash[BATCH] = self


BATCH = pytest.StashKey[Batch]()


def batch_of(config):
    """The session's :class:`Batch`; a usage error when pytest was started without one."""
    if BATCH not in config.stash:
        raise pytest.UsageError("this module grades the batch that `python -m autograder grade` "
                                "hands pytest (autograder.pytest_path.plugin.Batch)")
    return config.stash[BATCH]


def find_submissions(folder, lab):
    """``[(student, notebook path)]``: ``<student>/<lab>.ipynb`` or nbgrader's
    ``<student>/<lab>/<lab>.ipynb``; a student folder without the notebook is graded as missing."""
    found = []
    for student in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        nested, flat = student / lab / f"{lab}.ipynb", student / f"{lab}.ipynb"
        found.append((student.name, nested if nested.exists() else flat))
    return found


@pytest.fixture(scope="session")
def graded(request):
    """Grade every submission once per pytest session; write the result files."""
    batch = batch_of(request.config)
    jobs = [(lab, student, path) for lab in batch.labs
            for student, path in find_submissions(batch.submissions, lab)]
    if batch.scheduler:
        results = cluster.grade(batch.scheduler, jobs, batch.seed, batch.limits, _progress,
                                batch.workers)
    else:
        results = _grade_here(jobs, batch)
    out = batch.out
    for result in results:
        folder = out / result.lab / result.student
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "results.json").write_text(json.dumps(result.gradescope(), indent=1))
    out.mkdir(parents=True, exist_ok=True)
    _write_grades(out / "grades.csv", results, batch.seed)
    return {(r.lab, r.student): r for r in results}


FIELDS = ["student", "lab", "score", "max_score", "seed"]


def _write_grades(path, results, seed):
    """``grades.csv`` with a row per result of this batch, keeping the rows of earlier batches
    for other labs or students (``grade lab3`` after ``grade lab2`` keeps lab 2's), sorted by
    lab and student; written to a new file first, then moved over the old one."""
    rows = {}
    if path.is_file():
        with open(path, newline="") as file:
            rows = {(row["lab"], row["student"]): row for row in csv.DictReader(file)
                    if set(FIELDS) <= set(row)}
    rows.update({(r.lab, r.student): {"student": r.student, "lab": r.lab, "score": r.score,
                                      "max_score": r.max_score, "seed": seed} for r in results})
    partial = path.with_name(path.name + ".partial")
    with open(partial, "w", newline="") as file:
        writer = csv.DictWriter(file, FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows[key] for key in sorted(rows))
    partial.replace(path)


def _grade_here(jobs, batch):
    """Grade on this machine, ``batch.workers`` submissions at a time (each in its own sandboxed
    worker process; the threads only wait for them)."""
    with concurrent.futures.ThreadPoolExecutor(max(1, batch.workers)) as pool:
        futures = [pool.submit(runner.grade_submission, path, lab, student, batch.seed,
                               batch.limits)
                   for lab, student, path in jobs]
        for _ in _progress(concurrent.futures.as_completed(futures), total=len(futures)):
            pass
        return [future.result() for future in futures]


def _progress(done, total):
    return tqdm(done, total=total, desc="grading", unit="submission", file=sys.stderr)


def pytest_generate_tests(metafunc):
    if "lab_student_test" in metafunc.fixturenames:
        batch = batch_of(metafunc.config)
        cases = [(lab, student, grade_id) for lab in batch.labs
                 for student, _ in find_submissions(batch.submissions, lab)
                 for grade_id, _ in notebooks.test_cells(lab)]
        metafunc.parametrize("lab_student_test", cases, ids=["/".join(c) for c in cases])


def test_cell(lab_student_test, graded):
    lab, student, grade_id = lab_student_test
    result = graded[(lab, student)]
    test = next(t for t in result.tests if t.name == grade_id)
    notes = "\n".join(result.notes)
    assert test.score == test.max_score, (f"{student} {lab} {grade_id}: {test.score:g}/"
                                          f"{test.max_score:g}\n{test.output}"
                                          + (f"\n{notes}" if notes else ""))
