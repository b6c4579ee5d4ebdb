"""The forger of tests/support/attacks.py, built from each lab's released notebook, against every
grading path: the pytest path (every lab), nbgrader's (labs 2 and 3: a worker's fork server, and
the kernels after it), a Dask worker and the Gradescope zip (lab 3).

The forger has done no work, so it must score 0, and what it found must be nothing: no module or
object of the checks' grader half, no frame holding a case with its expected value, and no
function whose code is an answer of the full mini.  The honest student graded after it, by the
same worker, must get exactly its own score, and the same search at the end of its notebook,
after every check has run in its process (every stand-in handed out), must find nothing either.
"""
import csv
import json
import shutil
import subprocess
import sys

import nbformat
import pytest

from autograder import cli
from autograder.demo import samples
from autograder.labs import LABS
from support import ROOT, attacks
from support.course import course_in

NOTHING = {"grader modules": [], "grader objects": [], "answers": [], "frames": []}
STUDENTS = {"a_forger": None, "b_honest": "full"}      # graded in this order


def _write(folder, lab, layout="flat"):
    for student, kind in STUDENTS.items():
        target = (folder / student / f"{lab}.ipynb" if layout == "flat"
                  else folder / student / lab / f"{lab}.ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        nb = (attacks.attacker(ROOT / "labs" / lab / f"{lab}.ipynb") if kind is None
              else attacks.searched(samples.make(kind, lab, ROOT / "labs"), lab))
        nbformat.write(nb, target)


def _pytest_results(out, lab, student):
    result = json.loads((out / lab / student / "results.json").read_text())
    return result["score"], attacks.found(result["output"].splitlines())


@pytest.fixture(scope="module")
def pytest_path(tmp_path_factory):
    root = tmp_path_factory.mktemp("attacks-pytest")
    for lab in LABS:
        _write(root / "inbox", lab)
    assert cli.main(["grade", "all", "--submissions", str(root / "inbox"), "--out",
                     str(root / "out"), "--seed", "17", "--workers", "1"]) == 0
    return root / "out"


@pytest.mark.parametrize("lab", LABS)
def test_the_forger_gains_nothing_on_the_pytest_path(pytest_path, lab):
    score, found = _pytest_results(pytest_path, lab, "a_forger")
    assert found == NOTHING and score == 0
    assert _pytest_results(pytest_path, lab, "b_honest") == (100, NOTHING)


def test_the_forger_gains_nothing_on_a_dask_worker(tmp_path):
    lab = "lab3_autodiff"
    _write(tmp_path / "inbox", lab)
    assert cli.main(["grade", lab, "--submissions", str(tmp_path / "inbox"), "--out",
                     str(tmp_path / "out"), "--seed", "18", "--scheduler", "local",
                     "--workers", "1"]) == 0
    score, found = _pytest_results(tmp_path / "out", lab, "a_forger")
    assert found == NOTHING and score == 0
    assert _pytest_results(tmp_path / "out", lab, "b_honest") == (100, NOTHING)


NBGRADER_LABS = ["lab2_graphs", "lab3_autodiff"]


@pytest.fixture(scope="module")
def nbgrader_path(tmp_path_factory):
    root = tmp_path_factory.mktemp("attacks-nbgrader")
    with course_in(root):
        assert cli.main(["release", ",".join(NBGRADER_LABS), "--reveal", "needs"]) == 0
        for lab in NBGRADER_LABS:
            _write(root / "inbox", lab)
        assert cli.main(["collect", str(root / "inbox")]) == 0
        assert cli.main(["autograde", ",".join(NBGRADER_LABS), "--workers", "1"]) == 0
        assert cli.main(["export", "--to", str(root / "grades.csv")]) == 0
        with open(root / "grades.csv") as file:
            scores = {(row["student_id"], row["assignment"]): float(row["raw_score"] or 0)
                      for row in csv.DictReader(file)}
        yield root / "course", scores


@pytest.mark.parametrize("lab", NBGRADER_LABS)
def test_the_forger_gains_nothing_on_the_nbgrader_path(nbgrader_path, lab):
    folder, scores = nbgrader_path
    for student in STUDENTS:
        graded = nbformat.read(folder / "autograded" / student / lab / f"{lab}.ipynb", 4)
        printed = [line for cell in graded.cells if cell.cell_type == "code"
                   for output in cell.outputs if output.output_type == "stream"
                   for line in output.text.splitlines()]
        assert attacks.found(printed) == NOTHING, student
    assert scores[("a_forger", lab)] == 0 and scores[("b_honest", lab)] == 100


def test_the_forger_gains_nothing_through_the_gradescope_zip(tmp_path):
    lab = "lab3_autodiff"
    assert cli.main(["gradescope", lab, "--to", str(tmp_path)]) == 0
    root = tmp_path / "autograder"
    shutil.unpack_archive(tmp_path / f"{lab}.zip", root / "source")
    for name in ("run_autograder", "setup.sh"):
        (root / "source" / name).chmod(0o755)
    (root / "submission").mkdir()
    (root / "results").mkdir()
    nbformat.write(attacks.attacker(ROOT / "labs" / lab / f"{lab}.ipynb"),
                   root / "submission" / "mine.ipynb")
    done = subprocess.run([sys.executable, "-m", "autograder.deliveries.gradescope", lab, str(root)],
                          cwd=root / "source", capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads((root / "results" / "results.json").read_text())
    assert attacks.found(result["output"].splitlines()) == NOTHING
    assert result["score"] == 0 and result["tests"]


def test_the_attack_would_find_the_full_mini_and_the_checks(tmp_path):
    """The search is not blind: run where the full mini and the grader half are loaded (a
    self-learner's own process), it finds both, and its profile hook finds a frame that holds
    the checks' cases as soon as that frame calls anything."""
    nb = attacks.attacker(ROOT / "labs" / "lab2_graphs" / "lab2_graphs.ipynb")
    search = next(cell.source for cell in nb.cells if "ANSWER_CODES" in cell.source)
    namespace = {}
    import autograder.checks.lab2  # noqa: F401 (the grader half, as a self-learner has it)
    exec(compile(search.split("sys.setprofile")[0], "<attack>", "exec"),
         namespace)
    assert "backward_pass" in namespace["FOUND"]["answers"]
    assert "autograder.checks.lab2" in namespace["FOUND"]["grader modules"]

    from autograder.checks import cases

    def grader_loop(drawn):          # a frame that holds the cases, calling student code
        for case in drawn:
            len(str(case.inputs))
            namespace["fingerprint"](namespace["fingerprint"].__code__)
    sys.setprofile(namespace["walk_frames"])
    try:
        grader_loop(cases("lab2_graphs", "build_running_example", 0))
    finally:
        sys.setprofile(None)
    assert "grader_loop:case" in namespace["FOUND"]["frames"]
