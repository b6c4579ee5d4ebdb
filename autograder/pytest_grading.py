"""The pytest path as a pytest test module: one test per submission and test cell.

``python -m autograder grade`` runs pytest on this file with the batch described in environment
variables (MINI_GRADE_SUBMISSIONS, MINI_GRADE_LABS, MINI_GRADE_OUT, MINI_GRADE_SEED,
MINI_GRADE_WORKERS, MINI_GRADE_LIMITS, MINI_GRADE_SCHEDULER).  Every submission is graded once,
up front, in worker processes (``autograder.runner``) on this machine or on a Dask cluster
(``autograder.cluster``); each test then reports one test cell's verdict with the check's message,
and the session writes ``<out>/<lab>/<student>/results.json`` and ``<out>/grades.csv``.
"""
import concurrent.futures
import csv
import json
import os
import sys
from pathlib import Path

import pytest
from tqdm import tqdm

from autograder import cluster, runner, sandbox


def settings():
    """The batch to grade, read from the environment each time pytest runs this module (a
    process may grade several batches; the module is imported once)."""
    return dict(submissions=Path(os.environ.get("MINI_GRADE_SUBMISSIONS", ".")),
                labs=[lab for lab in os.environ.get("MINI_GRADE_LABS", "").split(",") if lab],
                out=Path(os.environ.get("MINI_GRADE_OUT", "results")),
                seed=int(os.environ.get("MINI_GRADE_SEED", "0")),
                workers=int(os.environ.get("MINI_GRADE_WORKERS", "1")),
                scheduler=os.environ.get("MINI_GRADE_SCHEDULER", ""),
                limits=sandbox.Limits(**json.loads(os.environ.get("MINI_GRADE_LIMITS", "{}"))))


def find_submissions(folder, lab):
    """``[(student, notebook path)]``: ``<student>/<lab>.ipynb`` or nbgrader's
    ``<student>/<lab>/<lab>.ipynb``; a student folder without the notebook is graded as missing."""
    found = []
    for student in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        nested, flat = student / lab / f"{lab}.ipynb", student / f"{lab}.ipynb"
        found.append((student.name, nested if nested.exists() else flat))
    return found


@pytest.fixture(scope="session")
def graded():
    """Grade every submission once per pytest session; write the result files."""
    batch = settings()
    jobs = [(lab, student, path) for lab in batch["labs"]
            for student, path in find_submissions(batch["submissions"], lab)]
    if batch["scheduler"]:
        results = cluster.grade(batch["scheduler"], jobs, batch["seed"], batch["limits"], _progress,
                                batch["workers"])
    else:
        results = _grade_here(jobs, batch["seed"], batch["limits"], batch["workers"])
    out = batch["out"]
    for result in results:
        folder = out / result.lab / result.student
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "results.json").write_text(json.dumps(result.gradescope(), indent=1))
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "grades.csv", "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["student", "lab", "score", "max_score", "seed"])
        for result in results:
            writer.writerow([result.student, result.lab, result.score, result.max_score,
                             batch["seed"]])
    return {(r.lab, r.student): r for r in results}


def _grade_here(jobs, seed, limits, workers):
    """Grade on this machine, ``workers`` submissions at a time (each in its own sandboxed
    worker process; the threads only wait for them)."""
    with concurrent.futures.ThreadPoolExecutor(max(1, workers)) as pool:
        futures = [pool.submit(runner.grade_submission, path, lab, student, seed, limits)
                   for lab, student, path in jobs]
        for _ in _progress(concurrent.futures.as_completed(futures), total=len(futures)):
            pass
        return [future.result() for future in futures]


def _progress(done, total):
    return tqdm(done, total=total, desc="grading", unit="submission", file=sys.stderr)


def pytest_generate_tests(metafunc):
    if "lab_student_test" in metafunc.fixturenames:
        batch = settings()
        cases = [(lab, student, grade_id) for lab in batch["labs"]
                 for student, _ in find_submissions(batch["submissions"], lab)
                 for grade_id, _ in runner.test_cells(lab)]
        metafunc.parametrize("lab_student_test", cases, ids=["/".join(c) for c in cases])


def test_cell(lab_student_test, graded):
    lab, student, grade_id = lab_student_test
    result = graded[(lab, student)]
    test = next(t for t in result.tests if t.name == grade_id)
    notes = "\n".join(result.notes)
    assert test.score == test.max_score, (f"{student} {lab} {grade_id}: {test.score:g}/"
                                          f"{test.max_score:g}\n{test.output}"
                                          + (f"\n{notes}" if notes else ""))
