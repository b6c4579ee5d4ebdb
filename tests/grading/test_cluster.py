"""``grade --scheduler``: a batch graded on a real Dask cluster (a ``dask scheduler`` and two
``dask worker`` processes on loopback), one of whose workers is killed while it grades; and on a
LocalCluster (``--scheduler local``)."""
import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from autograder.demo import samples
from support import ROOT

LAB = "lab2_graphs"
LABS_FOLDER = ROOT / "labs"
DASK = Path(sys.executable).with_name("dask")
KINDS = {"ada": "full", "bo": "bug", "cy": "untouched", "di": "full", "ed": "bug", "fay": "full"}


@contextlib.contextmanager
def _started(arguments, log):
    process = subprocess.Popen([str(DASK), *arguments], stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _address(scheduler_file, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
            return json.loads(scheduler_file.read_text())["address"]
        time.sleep(0.2)
    raise AssertionError("the dask scheduler did not start")


def _grading(pid):
    """The sandboxed grading processes the Dask worker ``pid`` has started."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                if b"autograder" in Path(f"/proc/{child}/cmdline").read_bytes():
                    found.append(child)
    return found


def test_a_batch_on_a_dask_cluster_survives_a_killed_worker(tmp_path):
    from distributed import Client

    inbox = tmp_path / "inbox"
    for student, kind in KINDS.items():
        samples.write(kind, LAB, LABS_FOLDER, inbox / student / f"{LAB}.ipynb")
    (inbox / "gus").mkdir()                                # a student who handed in nothing
    scheduler_file = tmp_path / "scheduler.json"
    log = open(tmp_path / "dask.log", "w")
    worker = ["worker", "--scheduler-file", str(scheduler_file), "--nthreads", "1", "--no-nanny",
              "--no-dashboard"]
    with _started(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                   "--scheduler-file", str(scheduler_file)], log), \
            _started([*worker, "--name", "doomed"], log) as doomed, \
            _started([*worker, "--name", "survivor"], log):
        address = _address(scheduler_file)
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=60)
        grading = subprocess.Popen(
            [sys.executable, "-m", "autograder", "grade", LAB, "--submissions", str(inbox),
             "--out", str(tmp_path / "results"), "--seed", "3", "--scheduler", address],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not _grading(doomed.pid):                  # it has started grading a submission
            assert grading.poll() is None and time.monotonic() < deadline, grading.stderr.read()
            time.sleep(0.05)
        os.kill(doomed.pid, signal.SIGKILL)
        out, err = grading.communicate(timeout=300)
    assert grading.returncode == 0, out + err
    assert doomed.returncode == -signal.SIGKILL

    with open(tmp_path / "results" / "grades.csv") as file:
        rows = [(row["student"], float(row["score"])) for row in csv.DictReader(file)]
    expected = {student: samples.expected_score(kind, LAB) for student, kind in KINDS.items()}
    assert sorted(rows) == sorted({**expected, "gus": 0}.items())     # each student once
    result = json.loads((tmp_path / "results" / LAB / "bo" / "results.json").read_text())
    assert result["score"] == expected["bo"] and "seed 3" in result["output"]
    assert "ada: 100" in out or "mean score" in out, out


def test_a_batch_on_a_local_cluster_gets_the_expected_scores(tmp_path):
    inbox = tmp_path / "inbox"
    kinds = {"ada": "full", "bo": "bug", "cy": "untouched"}
    for student, kind in kinds.items():
        samples.write(kind, LAB, LABS_FOLDER, inbox / student / f"{LAB}.ipynb")
    grading = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", LAB, "--submissions", str(inbox),
         "--out", str(tmp_path / "results"), "--seed", "5", "--scheduler", "local",
         "--workers", "2"], capture_output=True, text=True, timeout=300)
    assert grading.returncode == 0, grading.stdout + grading.stderr
    with open(tmp_path / "results" / "grades.csv") as file:
        rows = {row["student"]: float(row["score"]) for row in csv.DictReader(file)}
    assert rows == {student: samples.expected_score(kind, LAB) for student, kind in kinds.items()}
    result = json.loads((tmp_path / "results" / LAB / "bo" / "results.json").read_text())
    assert "seed 5" in result["output"] and "isolation:" in result["output"]
