"""The formgrader's Autograde button, over HTTP, on a real Jupyter server: it grades in the sandbox.

One server (started from ``autograder/config/`` as docs/instructors.md says, with only the
formgrader's extension, to start quickly) on a lab 2 course, with namespaces but no Landlock,
so that each folder the grading kernel must not see is hidden by the sandbox itself and
not only unreadable.  The first submission graded attacks; two sample students come after it.
"""
import contextlib
import json
import os
from pathlib import Path

import nbformat
import pytest
from jupyter_core.paths import jupyter_config_path
from jupyter_server.extension.config import ExtensionConfigManager
from nbgrader.api import Gradebook

from autograder import cli, edition
from autograder.nbgrader_path import course, formgrader
from autograder.demo import samples
from support import ROOT, hostile_cases
from support.course import course_in
from support.course import formgrader as formgrader_server
from support.residue import digest

LAB = "lab2_graphs"
ATTACKER, FULL, BUG = "a_attacker", "b_full", "c_bug"   # graded in this order
ANSWERS = [str(ROOT / "mini" / "graph.py"),              # lab 2's toposort: in the full mini,
           str(edition.for_grading("lab4_framework") / "mini" / "graph.py")]   # and lab 4's mini

# Reads every file it finds of the solutions, and reads and appends to every file of the course and
# of the server's Jupyter folders (where the formgrader keeps the kernelspecs it grades with), but
# those of its own two folders; rewrites every kernelspec it finds there to one that starts
# outside the sandbox; plants one where the server looks for kernelspecs, in the course and in the
# solutions, and a module in mini, the checks and numpy (``hostile_cases.PLANTED``).  The test
# looks for what it planted outside: the sandbox's root has no Jupyter folder of the server's, no
# course and no solutions, and holds the rest read-only.  It also reads the full mini's source and
# a later lab's edition of mini (not there), starts more threads than a kernel may run, and imports
# the lab's checks (refused).
ATTACK = r'''
import glob, json, os
stolen, rewritten = [], []
own = (os.getcwd() + os.sep, os.path.dirname(os.environ["HOME"]) + os.sep)
for pattern, append in [(SOLUTIONS, False)] + [(pattern, True) for pattern in PATTERNS]:
    for path in glob.glob(pattern, recursive=True):
        if os.path.isdir(path) or os.path.abspath(path).startswith(own):
            continue
        try:
            stolen.append(open(path, 'rb').read()[:10])
            if append:
                open(path, 'a').write('tampered')
        except OSError:
            pass
        if path.endswith('kernel.json'):
            try:
                json.dump({"argv": ["python3", "-m", "ipykernel_launcher", "-f",
                                    "{connection_file}"], "display_name": "unsandboxed",
                           "language": "python"}, open(path, 'w'))
                rewritten.append(path)
            except OSError:
                pass
reference = []              # the full mini, and an edition holding this lab's answers
for path in REFERENCE:
    try:
        reference.append(len(open(path, 'rb').read()))
    except OSError:
        reference.append(0)
def threads(count):          # more than the kernel's limit on processes and threads
    import threading
    threading.stack_size(1 << 16)
    stop, started = threading.Event(), 0
    try:
        for _ in range(count):
            threading.Thread(target=stop.wait).start()
            started += 1
    except RuntimeError:
        pass
    finally:
        stop.set()
    return started
started = threads(600)
try:                        # the checks' working copies of the reference: refused to a kernel
    __import__("autograder.checks." + LAB.split("_")[0])
    imported = "imported"
except ImportError as error:
    imported = str(error)
for path in PLANT:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, 'w').write('planted = True' if path.endswith('.py') else '{}')
    except OSError:
        pass
print("ATTACK " + json.dumps({"read": len(stolen), "rewritten": rewritten, "cwd": os.getcwd(),
                              "reference": reference, "threads": started, "import": imported,
                              "environment": sorted(os.environ)}))
'''


def attacker(release, jupyter):
    """The "bug" sample with, after its first cell, one that kills its kernel and then the attack,
    run in the kernel that replaced it: it must score what "bug" scores."""
    nb = samples.make("bug", LAB, release)
    nb.cells.insert(1, nbformat.v4.new_code_cell("import os\nos._exit(0)"))
    patterns = [course.course_dir().as_posix() + "/**",
                *(str(Path(folder) / "**") for folder in jupyter.values())]
    plant = [str(path) for path in planted(jupyter)]
    nb.cells.insert(2, nbformat.v4.new_code_cell(
        f"SOLUTIONS = {str(ROOT / 'solutions' / '**')!r}\nPATTERNS = {patterns!r}\n"
        f"PLANT = {plant!r}\nREFERENCE = {ANSWERS!r}\nLAB = {LAB!r}\n"
        + ATTACK))
    return nb


def planted(jupyter):
    """Where the attack plants files, outside the folders it may write."""
    return [*(folder / "kernels" / "planted" / "kernel.json"
              for folder in (Path(jupyter["data"]), course.course_dir(), ROOT / "solutions")),
            *hostile_cases.PLANTED]




@contextlib.contextmanager
def jupyter_server(root_dir):
    """``jupyter server`` on loopback, started from autograder/ (where nbgrader reads the course's
    config) with the formgrader as its only extension; yields a function that POSTs to the
    formgrader's API and returns the decoded JSON answer."""
    found = ExtensionConfigManager(read_config_path=jupyter_config_path()).get_jpserver_extensions()
    only = {name: name == "nbgrader.server_extensions.formgrader" for name in found}
    config = Path(root_dir) / "only_the_formgrader.json"
    config.write_text(json.dumps({"ServerApp": {"jpserver_extensions": only}}))
    with formgrader_server(root_dir, arguments=[f"--config={config}"]) as api:
        yield lambda path: api(path, post=True)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("formgrader")
    # MINI_SANDBOX: what the server's kernels are started with
    with course_in(root, MINI_CELL_TIMEOUT=10, MINI_SANDBOX="namespaces-only"):
        jupyter = {sub: os.environ[f"JUPYTER_{sub.upper()}_DIR"]
                   for sub in ("config", "data", "runtime")}     # the server's (tests/conftest.py)
        course.release(LAB)
        inbox = root / "inbox"
        for student, nb in ((ATTACKER, attacker(root / "release", jupyter)),
                            (FULL, samples.make("full", LAB, root / "release")),
                            (BUG, samples.make("bug", LAB, root / "release"))):
            (inbox / student).mkdir(parents=True)
            nbformat.write(nb, inbox / student / f"{LAB}.ipynb")
        assert cli.main(["collect", str(inbox)]) == 0
        folder = course.course_dir()
        written = (folder / "autograded", folder / "gradebook.db")    # by grading, outside the kernel

        def watched():
            return [digest([folder], written), digest([root / "release"])]

        before = watched()
        with jupyter_server(root) as autograde:   # the Autograde button's request
            answers = {student: autograde(f"submission/{LAB}/{student}/autograde")
                       for student in (ATTACKER, FULL, BUG)}
        after = watched()
        left = [path for path in planted(jupyter) if path.exists()]
        for path in left:               # so that a failure here does not spoil later runs
            path.unlink()
            with contextlib.suppress(OSError):
                os.removedirs(path.parent)      # its folders, up to the first one not empty
        grader = course.api()
        with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
            scores = {student: gb.find_submission(LAB, student).score for student in answers}
        yield dict(answers=answers, scores=scores, report=attack_report(folder), before=before,
                   after=after, planted=left, course=folder, jupyter=jupyter)


def attack_report(folder):
    """What the attack printed, read from the attacker's autograded notebook ({} if nothing)."""
    path = folder / "autograded" / ATTACKER / LAB / f"{LAB}.ipynb"
    printed = [line for cell in nbformat.read(path, 4).cells if cell.cell_type == "code"
               for out in cell.outputs for line in out.get("text", "").splitlines()]
    return next((json.loads(line[len("ATTACK "):]) for line in printed
                 if line.startswith("ATTACK ")), {})


def test_the_autograde_button_grades_as_the_command_line_does(graded):
    assert all(answer["success"] for answer in graded["answers"].values()), graded["answers"]
    assert graded["scores"] == {ATTACKER: samples.expected_score("bug", LAB),
                                FULL: samples.expected_score("full", LAB),
                                BUG: samples.expected_score("bug", LAB)}


def test_the_submission_ran_in_the_sandboxed_kernel(graded):
    report = graded["report"]
    assert report, "the attack printed no report"
    assert report["cwd"] == str(graded["course"] / "autograded" / ATTACKER / LAB)
    # autograder.nbgrader_path.jupyter_kernel's short environment, not the server's
    assert not {"MINI_COURSE_DIR", "JUPYTER_RUNTIME_DIR"} & set(
        report["environment"]), report["environment"]


def test_an_attacker_reads_writes_and_rewrites_nothing(graded):
    report = graded["report"]
    assert report, "the attack printed no report"
    assert (report["read"], report["rewritten"]) == (0, []), report
    assert len(report["reference"]) >= 2 and set(report["reference"]) == {0}, report
    assert report["threads"] < 600, report      # the process limit, or the kernel's pids cgroup
    assert report["import"] == "the autograder cannot be imported from a submission", report
    assert graded["before"] == graded["after"]
    assert graded["planted"] == []


def test_each_kernel_folder_is_removed_with_its_kernel(graded):
    assert list(Path(graded["jupyter"]["runtime"]).glob("mini-grading-*")) == []


def test_the_server_runs_the_command_lines_preprocessors(monkeypatch):
    """Inside a server the course's config differs in one setting only: what starts kernels."""
    on_the_command_line = course.load_config()
    monkeypatch.setattr(formgrader, "inside_jupyter_server", lambda: True)
    in_a_server = course.load_config()
    for stage in ("sanitize_preprocessors", "autograde_preprocessors"):
        assert in_a_server.Autograde[stage] == on_the_command_line.Autograde[stage]
    assert "kernel_manager" not in on_the_command_line.ResilientExecute
    assert in_a_server.ResilientExecute.kernel_manager == \
        "autograder.nbgrader_path.formgrader.SandboxedKernelManager"


def test_a_runtime_folder_too_long_for_the_sockets_is_named(tmp_path, monkeypatch):
    runtime = tmp_path / ("r" * 100)
    runtime.mkdir()                 # a server's runtime folder, there as the server runs
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    with pytest.raises(ValueError, match="too long for a Unix socket .* shorter "
                                         "JUPYTER_RUNTIME_DIR"):
        formgrader.SandboxedKernelManager()
    assert list(runtime.iterdir()) == []
