"""Grading is repeatable: the same submissions graded again and again, on both paths, many seeds.

    python benchmarks/repeatability.py [--repeats 20] [--nbgrader-repeats 5] [--seeds 10]
                                       [--labs all] [--workers 2]

The submissions are every sample kind of each lab (``autograder.demo.samples``: full, untouched,
bug, no_test), the wrong notebooks of ``tests/labs/test_lab*_wrong_work.py`` (one mistake in each
of several fill-ins), and the solution with each fill-in broken alone (its answer replaced by the
release's stub, as ``tests/labs/test_labs_grading.py`` makes it, which checks on the pytest path
that it loses exactly its own points; here the nbgrader path must give the same score).

The pytest path (``grade --workers N --seed S``) grades all of them ``--repeats`` times and the
nbgrader path (``autograde --workers N`` with ``AUTOGRADER_SEED=S``) ``--nbgrader-repeats``
times.  The pytest runs take the seeds 1 to ``--seeds`` in turn, so that each seed is graded
``repeats / seeds`` times; the nbgrader runs take seeds spread evenly over the same range.  A
submission's score must not depend on the run, the seed or the path: each must get exactly one
score over all the runs.  Prints, per seed, the runs made and the submissions whose score differed
within that seed; then each submission's score, how many distinct scores it got over every run, and
the points each fill-in lost.  Exits with status 1 if anything differed.
"""
import argparse
import csv
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from tqdm import tqdm

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "labs"), str(REPO / "tests")]

from autograder.nbgrader_path import course  # noqa: E402
from autograder.demo import samples  # noqa: E402
import test_labs_grading as labs_grading  # noqa: E402

KINDS = ("full", "untouched", "bug", "no_test")
WRONG = {   # lab -> (its wrong-work test module, the function that makes a notebook, the mistakes)
    "lab1_learning": ("test_lab1_wrong_work", "_solution_with",
                      ("WRONG_ONE", "WRONG_TWO", "WRONG_THREE", "WRONG_FOUR")),
    "lab2_graphs": ("test_lab2_wrong_work", "_solution_with",
                    ("WRONG", "WRONG_TWO", "WRONG_THREE")),
    "lab3_autodiff": ("test_lab3_wrong_work", "_solution_with",
                      ("WRONG", "WRONG_TWO", "WRONG_THREE")),
    "lab4_framework": ("test_lab4_wrong_work", "_solution_with",
                       ("WRONG", "WRONG_TWO", "WRONG_THREE")),
    "lab5_kernels": ("test_lab5_wrong_work", "_notebook",
                     ("CHEATS", "SLIPS", "MORE_SLIPS", "SHORTCUTS", "NARROW")),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--nbgrader-repeats", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--labs", default="all")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    labs = course.expand(args.labs)
    root = Path(tempfile.mkdtemp(prefix="mini-repeatability-"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "MINI_RELEASE_DIR": str(root / "release"), "MINI_CACHE_DIR": str(root / "cache"),
           "OPENBLAS_NUM_THREADS": "1"}
    try:
        base = root / "base"
        run(["release", args.labs, "--reveal", "needs"], base, env)
        names = write_submissions(labs, root / "release", root / "inbox")
        run(["collect", str(root / "inbox")], base, env)
        seeds = list(range(1, args.seeds + 1))
        runs = [("pytest", seeds[r % len(seeds)], r) for r in range(args.repeats)]
        runs += [("nbgrader", seeds[r * len(seeds) // args.nbgrader_repeats], r)
                 for r in range(args.nbgrader_repeats)]
        graded = {}
        for path, seed, r in tqdm(runs, desc="grading runs", unit="run", file=sys.stderr):
            folder = root / f"{path}-{seed}-{r}"
            shutil.copytree(base, folder)
            graded[path, seed, r] = (grade_pytest if path == "pytest" else grade_nbgrader)(
                folder, args, seed, env, names)
            shutil.rmtree(folder)
        return report(graded, names)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def write_submissions(labs, release, inbox):
    """Write each submission as its own student; ``{student: what it is}``."""
    names = {}
    for lab in labs:
        for kind in KINDS:
            student = f"{kind}-{lab[3]}"          # no lab's name in it: collect refuses those
            samples.write(kind, lab, release, inbox / student / f"{lab}.ipynb")
            names[student] = (lab, kind)
        module, make, mistakes = WRONG[lab]
        module = importlib.import_module(module)
        for mistake in mistakes:
            student = f"{mistake.lower()}-{lab[3]}"
            path = inbox / student / f"{lab}.ipynb"
            path.parent.mkdir(parents=True)
            nbformat.write(getattr(module, make)(getattr(module, mistake)), path)
            names[student] = (lab, mistake)
        for fill_in in labs_grading._fill_ins(lab):
            student = f"no-{fill_in.replace('_', '-')}-{lab[3]}"
            path = inbox / student / f"{lab}.ipynb"
            path.parent.mkdir(parents=True)
            nbformat.write(labs_grading._solution_with(lab, broken=fill_in), path)
            names[student] = (lab, f"no {fill_in}")
    return names


def grade_pytest(folder, args, seed, env, names):
    """``{student: (score, [each fill-in that lost points, and how many])}`` from the pytest
    path, for each student's own lab."""
    out = folder / "results"
    run(["grade", args.labs, "--workers", str(args.workers), "--seed", str(seed), "--out",
         str(out)], folder, env, check=False)        # exits 1 where a test cell lost points
    graded = {}
    for student, (lab, _) in names.items():
        results = out / lab / student / "results.json"
        if not results.is_file():
            continue
        data = json.loads(results.read_text())
        lost = sorted(f"{t['name'].removeprefix('test_')} -{t['max_score'] - t['score']:g}"
                      for t in data["tests"] if t["score"] < t["max_score"])
        graded[student] = (data["score"], tuple(lost))
    return graded


def grade_nbgrader(folder, args, seed, env, names):
    """``{student: (score, None)}`` from the nbgrader path, as exported, for each student's own
    lab."""
    run(["autograde", args.labs, "--workers", str(args.workers)], folder,
        {**env, "AUTOGRADER_SEED": str(seed)}, check=False)
    run(["export", "--to", str(folder / "grades.csv")], folder, env)
    with open(folder / "grades.csv") as file:
        return {row["student_id"]: (float(row["raw_score"] or 0), None)
                for row in csv.DictReader(file)
                if names.get(row["student_id"], ("",))[0] == row["assignment"]}


def report(graded, names):
    """Print the tables; 0 if every submission was graded in every run and got one score over
    all of them (every run, seed and path), else 1.  A score that differed within a seed also
    differs over all the runs, so each submission counts once."""
    print(f"\n{len(names)} submissions; per seed: the runs on each path, and the submissions "
          "whose score differed between them")
    print(f"{'seed':>5}{'pytest runs':>13}{'nbgrader runs':>15}{'differing':>11}{'not graded':>12}")
    problems = 0
    for seed in sorted({seed for _, seed, _ in graded}):
        runs = [g for (_, s, _), g in graded.items() if s == seed]
        differing = sum(len({run.get(student, (None,))[0] for run in runs}) > 1
                        for student in names)
        missing = sum(student not in run for run in runs for student in names)
        problems += missing
        print(f"{seed:>5}{sum(p == 'pytest' and s == seed for p, s, _ in graded):>13}"
              f"{sum(p == 'nbgrader' and s == seed for p, s, _ in graded):>15}"
              f"{differing:>11}{missing:>12}")
    first = graded["pytest", min(s for p, s, _ in graded if p == "pytest"), 0]
    print(f"\neach submission over all {len(graded)} runs: its score, how many distinct scores "
          "it got (1 is repeatable), and the points each fill-in lost")
    for student, (lab, what) in sorted(names.items(), key=lambda item: item[1]):
        scores = {run.get(student, (None,))[0] for run in graded.values()}
        problems += len(scores) > 1
        score, lost = first.get(student, (None, []))
        print(f"  {lab:15} {what:34} {score!s:>6} {len(scores):>3}  {', '.join(lost) or '-'}")
        if len(scores) > 1:
            runs_by_score = {}
            for (path, seed, _), run in sorted(graded.items()):
                runs_by_score.setdefault(run.get(student, (None,))[0], set()).add(f"{path} {seed}")
            for other, runs in runs_by_score.items():
                print(f"  {'':15} {'':34} {other!s:>6} on {', '.join(sorted(runs))}")
    print("repeatable on both paths, every seed" if not problems
          else f"{problems} differences: NOT repeatable")
    return 1 if problems else 0


def run(arguments, course_folder, env, check=True):
    result = subprocess.run([sys.executable, "-m", "autograder", "--course", str(course_folder),
                             *arguments], env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    if check and result.returncode:
        sys.exit(f"{' '.join(arguments)} failed:\n{result.stderr[-2000:]}")


if __name__ == "__main__":
    sys.exit(main())
