"""What grading costs per submission, by lab, and the cluster that grades 10,000 in an hour.

    python benchmarks/grading_cost.py [--per-lab 8] [--labs all] [--submissions 10000] [--hours 1]

For each lab, ``--per-lab`` sample submissions (full / bug / untouched / no_test in turn) are
graded with ``python -m autograder grade`` on one worker.  The figure that sizes a cluster is CPU
seconds per submission (the grader, its sandboxed worker and everything they start, from the
operating system's accounting), which a loaded machine inflates much less than wall time; the
wall seconds on this machine are printed beside it.  A Dask worker with one thread grades one
submission at a time on one core, so a batch of S submissions of a lab in H hours needs
S x (CPU seconds per submission) / (3600 H) cores, here rounded up with 25% headroom for start-up,
stragglers and the scheduler.
"""
import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.nbgrader_path import course
from autograder.demo import samples  # noqa: E402

KINDS = ("full", "bug", "untouched", "no_test")
HEADROOM = 1.25


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-lab", type=int, default=8)
    parser.add_argument("--labs", default="all")
    parser.add_argument("--submissions", type=int, default=10_000)
    parser.add_argument("--hours", type=float, default=1.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mini-grading-cost-"))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "MINI_COURSE_DIR": str(root / "course")}
    print(f"{'lab':<16}{'CPU s/submission':>18}{'wall s/submission':>19}"
          f"{'cores for ' + format(args.submissions, ',') + f' in {args.hours:g} h':>26}")
    for lab in course.expand(args.labs):
        inbox = root / lab
        for i in range(args.per_lab):
            samples.write(KINDS[i % len(KINDS)], lab, REPO / "labs",
                          inbox / f"s{i:03d}" / f"{lab}.ipynb")
        cpu, wall = measure([sys.executable, "-m", "autograder", "grade", lab, "--submissions",
                             str(inbox), "--out", str(root / "out" / lab), "--workers", "1",
                             "--seed", "1"], env)
        per = cpu / args.per_lab
        cores = math.ceil(HEADROOM * args.submissions * per / (3600 * args.hours))
        print(f"{lab:<16}{per:>18.2f}{wall / args.per_lab:>19.2f}{cores:>26}")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; results in {root})")


def measure(command, env):
    """CPU seconds (user + system, the command and all it waited for) and wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime), wall


if __name__ == "__main__":
    main()
