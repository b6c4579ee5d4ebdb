"""Grading a batch on a Dask cluster: each submission is one task, graded by a Dask worker exactly
as on the instructor's machine (``runner.grade_submission``: the notebook's code in a sandboxed
worker process, the verdict decided by the grading process, here the Dask worker).

The notebook travels inside the task as bytes, so the cluster's machines need no shared folder
with the instructor's, only the course package installed.  A task whose Dask worker dies (a
machine lost, a worker killed) is run again on another worker by Dask's scheduler and reported
once; a submission whose grading kills more workers than ``distributed.scheduler.allowed-failures``
(3 by default) is given 0 points with that reason, and the rest of the batch is graded.
"""

from autograder import notebooks
from autograder.pytest_path import runner
from autograder.sandbox import scratch


def grade(scheduler, jobs, seed, limits, progress, workers=1):
    """``[SubmissionResult]`` for ``jobs = [(lab, student, notebook path)]``, in that order, graded
    on the cluster whose scheduler listens at ``scheduler`` (``tcp://host:port``), or, for
    ``"local"``, on a Dask LocalCluster of ``workers`` one-thread workers started on this machine
    for the batch (what a cluster's workers do, tried on one machine)."""
    from distributed import Client, LocalCluster, as_completed

    if scheduler == "local":
        with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as local:
            return grade(local.scheduler_address, jobs, seed, limits, progress)

    with Client(scheduler, timeout="30s") as client:
        futures = [client.submit(grade_sent, lab, student, path.name, _read(path), seed, limits,
                                 pure=False) for lab, student, path in jobs]
        for _ in progress(as_completed(futures), total=len(futures)):
            pass
        return [_result_of(future, lab, student, seed)
                for future, (lab, student, _) in zip(futures, jobs)]


def grade_sent(lab, student, name, content, seed, limits):
    """On a Dask worker: write the notebook that came with the task to a private folder and grade
    it there (``content`` is ``None`` when the student handed in no notebook)."""
    with scratch.folder("mini-grade-") as folder:    # swept by the next task if this one is killed
        path = folder / name
        if content is not None:
            path.write_bytes(content)
        return runner.grade_submission(path, lab, student, seed, limits)


def _read(path):
    return path.read_bytes() if path.is_file() else None


def _result_of(future, lab, student, seed):
    """The task's result; 0 points, with the reason, for a submission whose grading took down
    every worker that tried it (a fault of the grader itself is raised, not given as a grade)."""
    from distributed import KilledWorker
    try:
        return future.result()
    except KilledWorker as error:
        reason = (f"the cluster could not grade this submission: each Dask worker that graded it "
                  f"died ({error})")
    tests = [runner.TestResult(grade_id, 0.0, points, reason)
             for grade_id, points in notebooks.test_cells(lab)]
    return runner.SubmissionResult(student, lab, seed, tests, [reason])
