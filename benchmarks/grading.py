"""Grading throughput, three ways on the same submissions, side by side in one run.

    python benchmarks/grading.py [--per-lab 40] [--labs all] [--workers 2]

Makes ``--per-lab`` submissions for each lab (the sample kinds full / untouched / bug / no_test in
turn, so every score is known), then grades all of them:

1. plain nbgrader: ``nbgrader autograde <lab>`` from the command line, one lab after another;
2. ``python -m autograder autograde <labs> --workers N`` (nbgrader, in parallel, sandboxed);
3. ``python -m autograder grade <labs> --workers N`` (the pytest path).

Each way gets its own copy of the same course and an empty cache (``MINI_CACHE_DIR``: the student
editions, lab 5's compiled kernels).  Prints seconds, submissions per minute, the ratio to plain
nbgrader, and whether every submission got the same score three times.

The submissions of one kind are the same notebook, so lab 5's grader compiles each kernel once for
all of them; real students' kernels differ, and each costs about a second to compile.
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.nbgrader_path import course
from autograder.demo import samples  # noqa: E402

KINDS = ("full", "untouched", "bug", "no_test")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-lab", type=int, default=40)
    parser.add_argument("--labs", default="all")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    labs = course.expand(args.labs)
    root = Path(tempfile.mkdtemp(prefix="mini-grading-bench-"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "MINI_RELEASE_DIR": str(root / "release"), "OPENBLAS_NUM_THREADS": "1"}
    try:
        base = root / "base"
        run([sys.executable, "-m", "autograder", "--course", str(base), "release", args.labs,
             "--reveal", "needs"], env)
        inbox = root / "inbox"
        for lab in labs:
            for i in range(args.per_lab):
                samples.write(KINDS[i % len(KINDS)], lab, root / "release",
                              inbox / f"s{i:03d}" / f"{lab}.ipynb")
        run([sys.executable, "-m", "autograder", "--course", str(base), "collect", str(inbox)], env)
        total = args.per_lab * len(labs)

        timings, scores = {}, {}
        plain = copy_course(base, root / "plain")
        started = time.monotonic()
        for lab in labs:
            run(["nbgrader", "autograde", lab, "--force"], {**cold(env, root / "cache" / "plain"),
                                                            "MINI_COURSE_DIR": str(plain)},
                cwd=REPO / "autograder" / "config", check=False)
        timings["plain nbgrader CLI, serial"] = time.monotonic() - started
        scores["plain nbgrader CLI, serial"] = exported(plain, env)

        ours = copy_course(base, root / "ours")
        started = time.monotonic()
        run([sys.executable, "-m", "autograder", "--course", str(ours), "autograde", args.labs,
             "--workers", str(args.workers)], cold(env, root / "cache" / "autograde"),
            check=False)
        name = f"autograder autograde --workers {args.workers}"
        timings[name] = time.monotonic() - started
        scores[name] = exported(ours, env)

        started = time.monotonic()
        run([sys.executable, "-m", "autograder", "--course", str(ours), "grade", args.labs,
             "--workers", str(args.workers), "--seed", "1"],
            cold(env, root / "cache" / "grade"), check=False)
        name = f"autograder grade (pytest path) --workers {args.workers}"
        timings[name] = time.monotonic() - started
        with open(ours / "results" / "grades.csv") as file:
            scores[name] = {(r["student"], r["lab"]): float(r["score"]) for r in csv.DictReader(file)}

        reference = timings["plain nbgrader CLI, serial"]
        print(f"\n{total} submissions ({args.per_lab} per lab x {len(labs)} labs), "
              f"{os.cpu_count()} cores")
        print(f"{'way':<44}{'seconds':>9}{'subs/min':>10}{'speed-up':>10}")
        for name, seconds in timings.items():
            print(f"{name:<44}{seconds:9.1f}{60 * total / seconds:10.1f}{reference / seconds:10.2f}")
        first = next(iter(scores.values()))
        same = all(s == first for s in scores.values())
        print(f"identical scores on all {len(first)} submissions: {'yes' if same else 'NO'}")
        if not same:
            for key in sorted(first):
                row = [s.get(key) for s in scores.values()]
                if len(set(row)) > 1:
                    print(f"  {key}: {row}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def cold(env, cache):
    """``env`` with an empty cache of its own (``MINI_CACHE_DIR``)."""
    return {**env, "MINI_CACHE_DIR": str(cache)}


def copy_course(base, target):
    shutil.copytree(base, target)
    return target


def exported(course_folder, env):
    run([sys.executable, "-m", "autograder", "--course", str(course_folder), "export", "--to",
         str(course_folder / "grades.csv")], env)
    with open(course_folder / "grades.csv") as file:
        return {(r["student_id"], r["assignment"]): float(r["raw_score"] or 0)
                for r in csv.DictReader(file)}


def run(command, env, cwd=None, check=True):
    result = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    if check and result.returncode:
        sys.exit(f"{' '.join(map(str, command))} failed:\n{result.stderr[-2000:]}")


if __name__ == "__main__":
    main()
