"""The instructor's command line: ``python -m autograder <command> --help``.

    release LAB|all        make the student notebooks (labs/) from solutions/ with nbgrader
    collect DIR|ZIP        bring submissions into the course folder
    autograde LAB|all      grade them with nbgrader, in parallel (the gradebook path)
    grade LAB|all          grade them with the pytest path (isolated workers, JSON results)
    feedback LAB|all       HTML feedback for each student, hidden tests removed
    export                 every score as CSV: nbgrader's, or Canvas's or Moodle's import
    similarity LAB         the pairs of submissions that share the most code, as an HTML page
    demo                   all of the above on generated sample submissions
    gradescope LAB|all     the autograder zip to upload to Gradescope, one per lab
    settings               the environment variables the grader reads, with their values
    report LAB             an HTML page of what the class got wrong: grades, pass rates, failures

Exit status: 0 when every submission was graded (whatever its score); 1 when some could not be,
or grading itself failed (a grader-side error, results that could not be written); 2 for a usage
error (an unknown lab, a folder that does not exist); 130 when Ctrl-C stopped ``autograde`` (run it
again to grade the rest).
"""
import argparse
import csv
import os
import sys
from pathlib import Path

from autograder import settings
from autograder.sandbox import Limits


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if args.course:
        settings.COURSE_DIR.set(Path(args.course).resolve())
    try:
        return args.run(args)
    except (ValueError, FileNotFoundError, NotADirectoryError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except PermissionError as error:
        print(f"error: {permission_denied(error)}", file=sys.stderr)
        return 1


def permission_denied(error):
    """A PermissionError that names its file by its full path and says what to do: the OS's own
    message names only what was opened ("[Errno 13] Permission denied: 'SOURCES.txt'", from a
    tool writing into the folder it was started in)."""
    if error.filename is None:
        return str(error)
    paths = [str(Path(name).resolve()) for name in (error.filename, error.filename2) if name]
    return (f"permission denied: {' -> '.join(paths)} ({error.strerror or error}): this account "
            "cannot write there; make it writable by this account (or run from a folder it can "
            "write, e.g. give --course and --to a folder of your own)")


def _parser():
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--course", help="the course folder (default: $MINI_COURSE_DIR or course/)")
    commands = parser.add_subparsers(required=True, metavar="command")

    def command(name, run, help_text):
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(run=run)
        return sub

    sub = command("release", _release, "make labs/<lab>/<lab>.ipynb from solutions/ with nbgrader, "
                                        "and the student kit from them")
    sub.add_argument("lab", help="a lab (lab3 or lab3_autodiff) or 'all'")
    sub.add_argument("--to", help="release folder (default: labs/ in the repository)")
    sub.add_argument("--kit", help="student kit folder, written with a .zip beside it (default: "
                                   "kit/ beside the release folder: kit/ at the repository root)")
    sub.add_argument("--reveal", default="", metavar="LABS",
                     help="labs whose deadline has passed, e.g. lab1,lab2: the kit's mini holds "
                          "their answers (every other lab's are left out); a lab in the kit "
                          "needs the labs it builds on revealed ('needs': exactly those)")

    sub = command("collect", _collect, "copy submissions from a folder or zip into the course")
    sub.add_argument("source", help="a folder or .zip of <student>/<lab>.ipynb or LMS downloads")

    sub = command("autograde", _autograde, "autograde collected submissions with nbgrader")
    sub.add_argument("lab", help="a lab or 'all'")
    sub.add_argument("--workers", type=int, default=os.cpu_count(),
                     help="submissions graded at once (default: the number of cores)")
    sub.add_argument("--force", action="store_true", help="regrade submissions already graded")

    sub = command("grade", _grade, "grade submissions with the pytest path (no nbgrader)")
    sub.add_argument("lab", help="a lab or 'all'")
    sub.add_argument("--submissions", help="folder of <student>/<lab>.ipynb or "
                                           "<student>/<lab>/<lab>.ipynb (default: the course's "
                                           "submitted/)")
    sub.add_argument("--out", help="results folder (default: the course's results/)")
    sub.add_argument("--seed", type=int, help="seed for the checks' inputs (default: random; "
                                              "recorded in every results.json)")
    sub.add_argument("--workers", type=int, default=os.cpu_count(),
                     help="submissions graded at once (default: the number of cores)")
    sub.add_argument("--scheduler", metavar="ADDRESS",
                     help="grade on the Dask cluster whose scheduler is at ADDRESS "
                          "(tcp://host:8786), each submission on one of its workers, instead of "
                          "on this machine's cores; 'local': on a Dask LocalCluster of --workers "
                          "workers started here")
    _limit_options(sub)
    sub.add_argument("-v", "--verbose", action="store_true",
                     help="pytest's report of every test cell, with each failure's message")

    sub = command("feedback", _feedback, "generate HTML feedback for autograded submissions")
    sub.add_argument("lab", help="a lab or 'all'")

    sub = command("export", _export, "export the gradebook's scores as CSV")
    sub.add_argument("--to", help="CSV file (default: the course's grades.csv, or "
                                  "grades-canvas.csv, grades-moodle.csv)")
    sub.add_argument("--format", default="nbgrader", choices=["nbgrader", "canvas", "moodle"],
                     help="nbgrader's CSV (default), or Canvas's or Moodle's gradebook import")

    sub = command("demo", _demo, "release, grade sample submissions both ways, print the table")
    sub.add_argument("--keep", help="run the demo in this folder (default: a new temporary "
                                    "folder; either way it is kept and its path printed)")
    sub.add_argument("--labs", default="all", help="comma-separated labs (default: all)")

    sub = command("gradescope", _gradescope, "write <lab>.zip, the autograder to upload to "
                                             "Gradescope (no solutions in it)")
    sub.add_argument("lab", help="a lab or 'all' (one zip each)")
    sub.add_argument("--to", help="folder of the zips (default: the course's gradescope/)")
    _limit_options(sub, " on Gradescope")

    command("settings", _settings, "the environment variables the grader reads: each one's "
                                   "value in force and what it changes")

    sub = command("report", _report, "an HTML page of what the class got wrong in a lab: the "
                                     "grade histogram, each test cell's and behaviour's pass "
                                     "rate, the commonest failure messages per fill-in")
    sub.add_argument("lab", help="a lab (lab2 or lab2_graphs)")
    sub.add_argument("--path", choices=["nbgrader", "pytest"],
                     help="whose results to read (default: the path that graded the lab; the "
                          "later one if both did)")
    sub.add_argument("--results", help="the pytest path's results folder (default: the course's "
                                       "results/)")
    sub.add_argument("--out", help="the HTML file, its histogram PNG written beside it (default: "
                                   "the course's report/<lab>/index.html)")

    sub = command("similarity", _similarity, "rank the pairs of a lab's submissions that share the "
                                             "most code, and each against mini's answers; an HTML "
                                             "page shows them side by side (it decides nothing)")
    sub.add_argument("lab", help="a lab (lab2 or lab2_graphs)")
    sub.add_argument("--submissions", help="folder of <student>/<lab>.ipynb or "
                                           "<student>/<lab>/<lab>.ipynb (default: the course's "
                                           "submitted/)")
    sub.add_argument("--top", type=int, default=20, help="pairs listed (default 20)")
    sub.add_argument("--out", help="the HTML file (default: the course's "
                                   "similarity/<lab>/index.html)")
    return parser


def _limit_options(sub, where=""):
    """The pytest path's limits, for ``grade`` and for the Gradescope zip; by default those of
    ``sandbox.Limits``, which the nbgrader path has too."""
    sub.add_argument("--check-seconds", type=float, default=Limits.check_seconds,
                     help=f"time limit of one check{where} (default {Limits.check_seconds:g}; "
                          "lab 5's simulator is slow)")
    sub.add_argument("--cell-seconds", type=float, default=Limits.cell_seconds,
                     help=f"time limit of one notebook cell{where} (default "
                          f"{Limits.cell_seconds:g})")
    sub.add_argument("--worker-seconds", type=float, default=Limits.worker_seconds,
                     help=f"wall-clock limit of one worker process{where} (default "
                          f"{Limits.worker_seconds:g})")


def _limits(args):
    """The ``sandbox.Limits`` given with :func:`_limit_options`."""
    return Limits(check_seconds=args.check_seconds, cell_seconds=args.cell_seconds,
                  worker_seconds=args.worker_seconds)


def _release(args):
    from autograder.deliveries import kit
    from autograder.nbgrader_path import course
    if args.to:
        settings.RELEASE_DIR.set(Path(args.to).resolve())
    course.release(args.lab)
    released = Path(settings.RELEASE_DIR.get())
    print(f"released {', '.join(course.expand(args.lab))} to {released}")
    revealed = (kit.needed(released) if args.reveal == "needs"
                else course.expand(args.reveal) if args.reveal else [])
    folder, archive = kit.write(released, args.kit, revealed=revealed)
    print(f"student kit in {folder} (and {archive.name} beside it), revealing "
          f"{', '.join(revealed) or 'no lab'}")
    return 0


def _collect(args):
    from autograder.deliveries.collect import gather
    collected, problems, replaced, kept = gather(args.source)
    print(f"collected {len(collected)} notebook(s) into the course's submitted/")
    for name, reason in problems:
        print(f"  skipped {name}: {reason}")
    for student, lab, old, new in replaced:
        print(f"  {student}/{lab}: replaced {old} with the newer {new}")
    for student, lab, stays, older in kept:
        print(f"  {student}/{lab}: kept {stays} instead of {older}, which is not newer")
    return 0


def _autograde(args):
    from autograder.nbgrader_path import batch, course
    try:
        outcomes = batch.autograde(course.expand(args.lab), workers=args.workers,
                                   force=args.force)
    except KeyboardInterrupt as stopped:
        print(f"\ninterrupted: {stopped or 'autograde stopped'}; the scores merged so far are in "
              "the gradebook, and running autograde again grades the rest", file=sys.stderr)
        return 130
    for lab, (graded, zeroed, failed) in outcomes.items():
        print(f"{lab}: graded {len(graded)} submission(s)"
              + (f", {len(zeroed)} scored 0 as unusable" if zeroed else "")
              + (f", {len(failed)} could not be graded:" if failed else ""))
        for student, reason in zeroed.items():
            print(f"  {student}: 0 points: {reason}")
        for student, reason in failed.items():
            print(f"  {student}: {reason.strip().splitlines()[-1] if reason.strip() else reason}")
    return 1 if any(outcome.failed for outcome in outcomes.values()) else 0


def _grade(args):
    import pytest

    from autograder.checks import new_seed
    from autograder.nbgrader_path import course
    from autograder.pytest_path import plugin
    seed = args.seed if args.seed is not None else new_seed()
    submissions = Path(args.submissions or course.place("submitted")).resolve()
    if not submissions.is_dir():
        raise FileNotFoundError(f"there is no folder of submissions {submissions}")
    if not any(path.is_dir() for path in submissions.iterdir()):
        raise ValueError(f"{submissions} holds no student folders (<student>/<lab>.ipynb)")
    out = Path(args.out or course.place("results")).resolve()
    batch = plugin.Batch(submissions, course.expand(args.lab), out, seed, args.workers,
                  args.scheduler or "", _limits(args))
    # pytest's own report counts test cells ("38 failed"), which reads like a crash of the grader;
    # without -v the grade table below says what happened, and results.json says why.
    quiet = ["-o", "addopts=", "-p", "no:terminal"]
    report = ["-v", "--tb=short"] if args.verbose else quiet
    failures = _GraderFailures()
    code = pytest.main([plugin.__file__, "-p", "no:cacheprovider",
                        "--capture=no",    # the progress bar; no student code runs in this process
                        "-W", "ignore::pytest.PytestAssertRewriteWarning", *report],
                       plugins=[batch, failures])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        failures.problems.append(f"pytest stopped ({code!r})")
    if failures.problems:
        print(f"error: grading failed: {failures.problems[0]}", file=sys.stderr)
        return 1
    _print_scores(out / "grades.csv")
    print(f"results in {out} (seed {seed})")
    return 0


def _print_scores(grades, listed=40):
    """Each lab's scores from ``grades.csv``: every student's for a small batch, else a summary."""
    by_lab = {}
    with open(grades) as file:
        for row in csv.DictReader(file):
            by_lab.setdefault(row["lab"], []).append((row["student"], float(row["score"]),
                                                      float(row["max_score"])))
    for lab, scores in by_lab.items():
        full = sum(score == top for _, score, top in scores)
        mean = sum(score for _, score, _ in scores) / len(scores)
        print(f"{lab}: {len(scores)} submission(s) graded, mean score {mean:.1f}, "
              f"{full} with full marks")
        if len(scores) <= listed:
            for student, score, top in scores:
                print(f"  {student:<24} {score:6.1f} / {top:g}")


class _GraderFailures:
    """A pytest plugin that notes what went wrong in the grader rather than in a submission.

    A test cell a student lost fails with the verdict's AssertionError, and pytest's exit status
    is then 1, the same as for an error while collecting or setting up the tests (the batch could
    not be graded, or its results not written): only the reports tell the two apart.
    """

    def __init__(self):
        self.problems = []

    def pytest_collectreport(self, report):
        if report.failed:
            self.problems.append(report.longreprtext.strip().rpartition("\n")[2]
                                 or f"could not collect {report.nodeid}")

    def pytest_runtest_makereport(self, item, call):
        if call.excinfo is not None and not (
                call.when == "call" and call.excinfo.errisinstance(AssertionError)):
            self.problems.append(call.excinfo.exconly().partition("\n")[0])


def _feedback(args):
    from autograder.nbgrader_path import batch, course
    problems = {}
    for lab in course.expand(args.lab):
        problems.update({f"{lab}/{s}": why for s, why in batch.feedback(lab).items()})
    print(f"feedback in {course.place('feedback')}")
    for name, why in problems.items():
        print(f"  {name}: {why.strip().splitlines()[-1] if why.strip() else 'failed'}")
    return 1 if problems else 0


def _export(args):
    from autograder.nbgrader_path import exports
    path = exports.export(Path(args.to or exports.default_path(args.format)).resolve(), args.format)
    print(f"grades written to {path} ({args.format} format)")
    return 0


def _demo(args):
    from autograder.demo import run
    return run(main, keep=args.keep, labs=args.labs)


def _settings(args):
    print(settings.table())
    return 0


def _gradescope(args):
    from autograder.deliveries import gradescope
    from autograder.nbgrader_path import course
    folder = Path(args.to or course.place("gradescope")).resolve()
    limits = _limits(args)
    for lab in course.expand(args.lab):
        print(f"{lab}: {gradescope.build(lab, folder, limits=limits)}")
    return 0


def _report(args):
    from autograder.reports import class_report
    _, _, text = class_report.build(args.lab, out=args.out, path=args.path, results=args.results)
    print(text)
    return 0


def _similarity(args):
    from autograder.labs import lab_name
    from autograder.nbgrader_path import course
    from autograder.reports import similarity
    lab = lab_name(args.lab)
    report = similarity.compare(lab, Path(args.submissions or course.place("submitted")).resolve())
    out = Path(args.out or course.place("similarity", lab, "index.html")).resolve()
    similarity.write_html(report, out, args.top)
    print(similarity.summary(report, args.top))
    print(f"report in {out}")
    return 0
