"""A submission cannot cost its neighbours their grades: not by filling the disk, not by taking
the CPU.

Two attackers and three honest students hand in lab 2, all with every fill-in right.  One
attacker writes until the disk is full; the other starts 48 processes that spin, and keeps its
kernel (and so them) alive while the honest students are graded beside it.  The batch runs as an
instructor runs it, with two workers, on a course folder that is a private tmpfs of 48 MiB (less
than what the first attacker would write) and in a cgroup of one CPU core, with a cell time limit
of 15 s.  Both paths grade the batch; the honest students get exactly their points, and nothing an
attacker wrote is left in the course folder or reaches its feedback.

Lab 2's cells need so little CPU that an honest kernel left to share the core with the 48 spinning
processes, 1/49 of it, still runs each within the limit: its score alone cannot show that kernels
are kept apart.  So every submission also says which cpu cgroup its kernel runs in, and each must
be in one of its own, whose share of the core no neighbour's processes can take (with the kernels'
cpu groups removed from ``autograder.sandbox.cgroups``, all five report the batch's group and the
test fails).  The grader must run as root here (a tmpfs, cgroups), as it does where kernels get
cgroups of their own.
"""
import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from autograder.sandbox import cgroups
from autograder.demo import samples

LAB = "lab2_graphs"
DISK_FILLER = """
import os
written = 0
try:
    with open("filler.bin", "wb") as file:
        while written < 2**30:
            file.write(b"x" * 2**20)
            file.flush()
            written += 2**20
except OSError as error:
    print("stopped after", written >> 20, "MiB:", error)
for n in range(1000):
    try:
        with open(f"many-{n}.bin", "wb") as file:
            file.write(b"y" * 2**20)
    except OSError:
        break
"""
CPU_HOG = """
import os, time
for _ in range(48):
    if os.fork() == 0:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            pass
        os._exit(0)
print("48 processes spinning")
"""
STAY = "import time; time.sleep(6)"      # cells that keep the hog's kernel, and its processes, alive
# every submission says which cpu cgroup its kernel runs in (a line of /proc/self/cgroup)
WHERE = """
lines = [line.strip().split(":", 2) for line in open("/proc/self/cgroup")]
v1 = [path for _, names, path in lines if "cpu" in names.split(",")]
print("cpu group:", (v1 or [path for ids, _, path in lines if ids == "0"])[0])
"""
STUDENTS = {"attacker_disk": DISK_FILLER, "attacker_cpu": CPU_HOG, "honest1": None,
            "honest2": None, "honest3": None}
WRITTEN = ("filler.bin", "many-")

@pytest.fixture
def cramped(tmp_path):
    """``(environment, group)``: a course folder on a 48 MiB tmpfs, and a cgroup of one core."""
    assert os.geteuid() == 0, "a private tmpfs and cgroups need a grader running as root"
    course = tmp_path / "course"
    course.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "none", str(course)], check=True)
    group = cgroups.make("max")
    assert group and "cpu" in cgroups.controllers(group), "this test needs a cpu cgroup"
    cpu = next(Path(folder) for folder in group if (Path(folder) / "cpu.shares").is_file()
               or (Path(folder) / "cpu.max").is_file())
    if (cpu / "cpu.max").is_file():
        (cpu / "cpu.max").write_text("100000 100000")
    else:
        (cpu / "cpu.cfs_quota_us").write_text("100000")
    environment = dict(os.environ, MINI_COURSE_DIR=str(course),
                       MINI_RELEASE_DIR=str(tmp_path / "release"), MINI_CELL_TIMEOUT="15")
    try:
        yield environment, group
    finally:
        cgroups.empty(group)
        subprocess.run(["umount", "-l", str(course)], check=False)


def _autograder(environment, group, *arguments):
    done = subprocess.run([sys.executable, "-m", "autograder", *arguments], env=environment,
                          capture_output=True, text=True, timeout=900,
                          preexec_fn=lambda: cgroups.join(group))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _submissions(tmp_path, environment, group):
    _autograder(environment, group, "release", LAB)
    for student, attack in STUDENTS.items():
        nb = samples.make("full", LAB, tmp_path / "release")
        first = next(i for i, cell in enumerate(nb.cells) if cell.cell_type == "code")
        nb.cells[first + 1:first + 1] = [v4.new_code_cell(WHERE)] + (
            [v4.new_code_cell(attack)] if attack else []) + (
            [v4.new_code_cell(STAY) for _ in range(3)] if attack == CPU_HOG else [])
        path = tmp_path / "inbox" / student / f"{LAB}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
    return tmp_path / "inbox"


def _nothing_written_left(course):
    left = [path for path in course.rglob("*") if path.name.startswith(WRITTEN)]
    assert left == [], left


def test_the_nbgrader_path_grades_the_honest_beside_a_disk_filler_and_a_cpu_hog(
        tmp_path, cramped):
    environment, group = cramped
    course = Path(environment["MINI_COURSE_DIR"])
    _autograder(environment, group, "collect", str(_submissions(tmp_path, environment, group)))
    _autograder(environment, group, "autograde", LAB, "--workers", "2")
    _autograder(environment, group, "feedback", LAB)
    _autograder(environment, group, "export", "--to", str(tmp_path / "grades.csv"))
    with open(tmp_path / "grades.csv") as file:
        scores = {row["student_id"]: float(row["raw_score"]) for row in csv.DictReader(file)}
    assert {student: scores[student] for student in STUDENTS if student.startswith("honest")} \
        == {"honest1": 100.0, "honest2": 100.0, "honest3": 100.0}
    _nothing_written_left(course)
    for student in STUDENTS:
        submitted = {path.name for path in (course / "submitted" / student / LAB).iterdir()}
        graded = {path.name for path in (course / "autograded" / student / LAB).iterdir()}
        assert graded <= submitted | {".mini-graded"}, graded - submitted
        feedback = {path.name for path in (course / "feedback" / student / LAB).iterdir()}
        assert feedback <= {f"{LAB}.html", "timestamp.txt", "submission_secret.txt"}, feedback
    said = {student: json.dumps([cell.get("outputs") for cell in nbformat.read(
        course / "autograded" / student / LAB / f"{LAB}.ipynb", as_version=4).cells])
        for student in STUDENTS}
    assert "stopped after 6" in said["attacker_disk"]          # its own 64 MiB, then no more
    assert "48 processes spinning" in said["attacker_cpu"]
    # each kernel in a cpu group of its own (the module's docstring says why)
    groups = {student: re.findall(r'cpu group: ([^\s\\"]+)', said[student])
              for student in STUDENTS}
    assert all(len(found) == 1 for found in groups.values()), groups
    assert len({found[0] for found in groups.values()}) == len(STUDENTS), groups


def test_the_pytest_path_grades_the_honest_beside_a_disk_filler_and_a_cpu_hog(tmp_path, cramped):
    environment, group = cramped
    inbox = _submissions(tmp_path, environment, group)
    out = Path(environment["MINI_COURSE_DIR"]) / "results"
    _autograder(environment, group, "grade", LAB, "--submissions", str(inbox), "--workers", "2",
                "--out", str(out), "--cell-seconds", "15")
    for student in STUDENTS:
        result = json.loads((out / LAB / student / "results.json").read_text())
        if student.startswith("honest"):
            assert result["score"] == 100, result
    _nothing_written_left(out.parent)
    assert not [path for path in Path("/tmp").glob("mini-worker-*/*")
                if path.name.startswith(WRITTEN)]


def test_a_nearly_full_disk_leaves_the_gradebook_whole_and_the_next_run_grades(tmp_path, cramped):
    environment, group = cramped
    course = Path(environment["MINI_COURSE_DIR"])
    _autograder(environment, group, "release", LAB)
    samples.write("full", LAB, tmp_path / "release", tmp_path / "inbox" / "ada" / f"{LAB}.ipynb")
    _autograder(environment, group, "collect", str(tmp_path / "inbox"))
    room = os.statvfs(course)
    taken = course / "taken.bin"            # the disk filled by something else, up to 16 MiB
    with open(taken, "wb") as file:
        os.posix_fallocate(file.fileno(), 0, room.f_bavail * room.f_frsize - 16 * 2**20)
    done = subprocess.run([sys.executable, "-m", "autograder", "autograde", LAB, "--workers", "1"],
                          env=environment, capture_output=True, text=True, timeout=600,
                          preexec_fn=lambda: cgroups.join(group))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not written to the gradebook: the course folder's disk has" in done.stdout + done.stderr
    taken.unlink()
    out = _autograder(environment, group, "autograde", LAB, "--workers", "1")
    assert "graded 1 submission(s)" in out, out
    _autograder(environment, group, "export", "--to", str(tmp_path / "grades.csv"))
    with open(tmp_path / "grades.csv") as file:
        assert [float(row["raw_score"]) for row in csv.DictReader(file)] == [100.0]
