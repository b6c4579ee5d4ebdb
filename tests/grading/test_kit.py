"""The student kit that ``python -m autograder release`` writes: everything a student needs, and
nothing that gives grading away.

Two promises (design.md, "Distribution").  The kit holds no answer of a lab it does not reveal,
no hidden test and none of the grader: for the kit of each lab (its needs revealed, as its
students get it), its mini is searched by AST for a working answer of a withheld lab, and every
file of it for the text of those labs' answers in solutions/, of the hidden test cells and of
autograder/checks.  And it works on its own: with each lab's answers typed into its kit's
notebook the way a student would, every visible test passes against that kit's mini, in a fresh
virtual environment, while ``import autograder`` fails there.

The last test is the slow one of this file (five notebooks, two at a time).
"""
import functools
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path

import nbformat
import pytest
import yaml

from autograder import edition
from autograder.deliveries import kit
from autograder.nbgrader_path import course
from autograder.labs import LABS, needs, withheld_marks
from support import ROOT
from support.answer_search import code_passages, solution_passages, working_answers

WINDOW = 3            # consecutive code lines that make a passage recognisable
SHORTEST_BLOCK = 30   # characters: a shorter one- or two-line answer ("return g * y") tells nothing


# -- what must not be in a kit ------------------------------------------------------------------

def _lines(text):
    """The code-like lines of ``text``: blank lines and comments dropped, spacing normalised."""
    return [" ".join(line.split()) for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def _passages(lines):
    """Every run of WINDOW consecutive lines; a shorter, long enough block as one passage."""
    if len(lines) < WINDOW:
        joined = "\n".join(lines)
        return {joined} if len(joined) >= SHORTEST_BLOCK else set()
    return {"\n".join(lines[i:i + WINDOW]) for i in range(len(lines) - WINDOW + 1)}


def _between(source, begin, end):
    """The blocks of ``source`` between lines holding ``begin`` and ``end``."""
    blocks, block = [], None
    for line in source.splitlines():
        if begin in line:
            block = []
        elif end in line and block is not None:
            blocks.append("\n".join(block))
            block = None
        elif block is not None:
            block.append(line)
    return blocks


def _notebook_text(path):
    parts = []
    for cell in nbformat.read(path, as_version=4).cells:
        parts.append(cell.source)
        for output in cell.get("outputs", []):
            parts += [output.get("text", ""), *output.get("data", {}).values()]
    return "\n".join(str(part) for part in parts)


def _text(path):
    if path.suffix == ".ipynb":
        return _notebook_text(path)
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise AssertionError(f"{path} is not a text file: the kit should hold only sources, "
                             "notebooks, the data set and the environment files") from None


def _public_lines(paths):
    return "\n".join("\n".join(_lines(_text(path))) for path in paths)


@functools.cache
def _secrets(withheld, notebooks, code):
    """{passage or name: where it comes from} for all that a kit withholding the labs
    ``withheld`` must not contain.  ``notebooks``: what the released notebooks show, given code
    included; ``code``: the student edition of mini, which holds the same words and imports as
    the grader's code (its answers are searched for apart, by ``working_answers`` and
    ``code_passages``)."""
    public = notebooks + "\n" + code
    public_words = set(re.findall(r"\w+", public))
    found = {"### BEGIN SOLUTION": "nbgrader's solution marker",
             "### BEGIN HIDDEN TESTS": "nbgrader's hidden-test marker"}
    for notebook in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        where = notebook.relative_to(ROOT)
        for cell in nbformat.read(notebook, as_version=4).cells:
            if notebook.parent.name in withheld:
                for block in _between(cell.source, "### BEGIN SOLUTION", "### END SOLUTION"):
                    found.update({p: f"an answer in {where}" for p in _passages(_lines(block))
                                  if p not in notebooks})
            for block in _between(cell.source, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"):
                found.update({line: f"a hidden test in {where}" for line in _lines(block)})
    for module in sorted((ROOT / "autograder" / "checks").rglob("*.py")):
        where = module.relative_to(ROOT)
        source = module.read_text()
        found.update({p: f"the code of {where}" for p in _passages(_lines(source))
                      if p not in public})
        for name in re.findall(r"^(?:def|class) (\w+)", source, flags=re.MULTILINE):
            if len(name) >= 8 and name not in public_words:
                found[name] = f"a name defined in {where}"
    found["autograder"] = "the grader's package name"
    return found


def leaks(folder, withheld, released):
    """[(file, what it holds)] for every file of the kit ``folder`` holding a secret of a kit
    withholding the labs ``withheld``, or named like the grader (``released``: the folder of
    the notebooks nbgrader released, whose text is public).

    A file is compared run by run of its lines (1 to WINDOW of them, spacing normalised), so
    an answer is found whatever its indentation, in a notebook, a module or a README.
    """
    edition_folder = Path(tempfile.mkdtemp(prefix="edition-"))
    edition.write(edition_folder, withheld)
    known = _secrets(tuple(sorted(withheld)),
                     _public_lines(sorted(Path(released).glob("*/*.ipynb"))),
                     _public_lines(sorted(edition_folder.rglob("*.py"))))
    shutil.rmtree(edition_folder)
    names = re.compile("|".join(rf"\b{s}\b" for s in known if re.fullmatch(r"\w+", s)))
    problems = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = str(path.relative_to(folder))
        if {"autograder", "solutions"} & set(path.relative_to(folder).parts):
            problems.append((relative, "a grader's or solutions' file"))
        lines = _lines(_text(path))
        runs = {"\n".join(lines[i:i + n]) for n in range(1, WINDOW + 1)
                for i in range(len(lines) - n + 1)}
        problems += [(relative, f"{known[s]}: {s[:80]!r}") for s in sorted(runs & known.keys())]
        problems += [(relative, f"{known[m]}: {m!r}")
                     for m in sorted(set(names.findall("\n".join(lines))))]
    return problems


# -- the kit of each lab ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def kits(tmp_path_factory):
    """For each lab, ``release <lab> --reveal needs`` into a temporary folder (labs/ and kit/ stay
    untouched): ``{lab: the folder holding release/ and kit/}``."""
    root, folders = tmp_path_factory.mktemp("release"), {}
    for lab in LABS:
        folders[lab] = folder = root / lab
        done = subprocess.run(
            [sys.executable, "-m", "autograder", "--course", str(folder / "course"), "release",
             lab, "--to", str(folder / "release"), "--kit", str(folder / "kit"), "--reveal",
             "needs"], cwd=root, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return folders


def _files(folder):
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _withheld(lab):
    return [name for name in LABS if name not in needs(lab)]


@pytest.mark.parametrize("lab", LABS)
def test_a_labs_kit_holds_no_answer_it_withholds_no_hidden_test_and_no_grader(kits, lab, tmp_path):
    folder = kits[lab] / "kit"
    withheld = _withheld(lab)
    assert working_answers(folder, *withheld_marks(withheld)) == []
    code = code_passages(folder)
    for name in withheld:
        assert sorted(solution_passages(name) & code) == [], f"{name}'s answers in {lab}'s kit"
    assert leaks(folder, withheld, kits[lab] / "release") == []
    notebook = folder / "labs" / lab / f"{lab}.ipynb"        # the notebook nbgrader released
    assert notebook.read_bytes() == (kits[lab] / "release" / lab / f"{lab}.ipynb").read_bytes()
    edition.write(tmp_path, withheld)
    assert _files(folder / "mini") == _files(tmp_path / "mini"), "kit/mini is not the edition"
    with zipfile.ZipFile(kits[lab] / "kit.zip") as archive:
        zipped = {name.removeprefix("kit/"): archive.read(name)
                  for name in archive.namelist() if not name.endswith("/")}
    assert zipped == _files(folder), "kit.zip does not hold exactly the kit folder"
    readme = (folder / "README.md").read_text()
    assert f"({', '.join(withheld)})" in readme and ", ".join(needs(lab) or ["no lab"]) in readme


def test_the_search_finds_an_answer_a_hidden_test_or_the_checks_planted_in_a_kit(kits, tmp_path):
    folder = tmp_path / "kit"
    shutil.copytree(kits["lab3_autodiff"] / "kit", folder)
    shutil.copy(ROOT / "solutions" / "lab3_autodiff" / "lab3_autodiff.ipynb",
                folder / "labs" / "lab3_autodiff")
    shutil.copy(ROOT / "autograder" / "checks" / "lab2.py", folder / "mini" / "dags.py")
    (folder / "mini" / "copied.py").write_text(
        (ROOT / "mini" / "reverse.py").read_text())               # the full mini's reverse pass
    found = leaks(folder, _withheld("lab3_autodiff"), kits["lab3_autodiff"] / "release")
    kinds = {(name, what.partition(":")[0]) for name, what in found}
    assert ("labs/lab3_autodiff/lab3_autodiff.ipynb",
            "an answer in solutions/lab3_autodiff/lab3_autodiff.ipynb") in kinds, found[:5]
    assert ("labs/lab3_autodiff/lab3_autodiff.ipynb",
            "a hidden test in solutions/lab3_autodiff/lab3_autodiff.ipynb") in kinds, found[:5]
    assert ("mini/dags.py", "the code of autograder/checks/lab2.py") in kinds, found[:5]
    assert ("mini/dags.py", "a name defined in autograder/checks/lab2.py") in kinds, found[:5]
    assert ("copied.py", "backward_pass") in working_answers(folder, {"lab3"}, {})


def test_a_kit_whose_lab_needs_a_lab_it_does_not_reveal_is_refused(kits, tmp_path):
    released = kits["lab4_framework"] / "release"
    with pytest.raises(ValueError, match=r"lab4_framework, which builds on lab2_graphs, "
                                         r"lab3_autodiff(.|\n)*--reveal lab1,lab2,lab3"):
        kit.write(released, tmp_path / "kit", revealed=["lab1_learning"])
    assert not (tmp_path / "kit").exists()
    assert kit.needed(released) == ["lab1_learning", "lab2_graphs", "lab3_autodiff"]


def test_kit_environment_files_name_the_students_packages_and_nothing_else(kits):
    folder = kits["lab5_kernels"] / "kit"
    project = tomllib.loads((folder / "pyproject.toml").read_text())
    requirements = project["project"]["dependencies"]
    assert [kit._name(r) for r in requirements] == [
        "numpy", "numba", "numba-cuda", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvcc-cu12",
        "matplotlib", "tqdm", "jupyterlab", "nbgrader"]
    repo = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert set(requirements) <= set(repo), "the kit's versions differ from the repository's"
    assert "jupyterlab>=4,<5" in requirements and "nbgrader>=0.9,<0.10" in requirements
    assert "optional-dependencies" not in project["project"]
    assert project["tool"]["setuptools"]["packages"]["find"]["include"] == ["mini", "mini.*"]

    conda = yaml.safe_load((folder / "environment.yml").read_text())["dependencies"]
    listed = [r for r in conda if isinstance(r, str) and r not in ("pip",)
              and not r.startswith("python")]
    listed += [r for item in conda if isinstance(item, dict) for r in item["pip"]]
    assert sorted(listed) == sorted(requirements), "environment.yml and pyproject.toml differ"

    readme, makefile = (folder / "README.md").read_text(), (folder / "Makefile").read_text()
    assert "make setup" in readme and "make lab" in readme
    assert re.search(r"^setup:", makefile, re.M) and re.search(r"^lab:", makefile, re.M)
    assert "labs/lab5_kernels/lab5_kernels.ipynb" in readme


def test_a_folder_that_is_not_a_kit_is_never_replaced(kits, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="is not a student kit"):
        kit.write(kits["lab1_learning"] / "release", tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    with pytest.raises(FileNotFoundError, match="holds no released lab"):
        kit.write(tmp_path, tmp_path / "kit")


# -- the kit installed, the labs answered -------------------------------------------------------

def _fresh_venv(where):
    """A new venv that sees this environment's packages but neither mini nor the grader.

    Made without pip (the project's pip serves it); the project environment's site-packages are
    on its path through a .pth file, with that folder's own .pth hooks copied except the editable
    install of this repository (which is what would bring mini and the grader in).
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], check=True, capture_output=True,
                               text=True).stdout.strip())
    project_site = Path(sysconfig.get_paths()["purelib"])
    (site / "00-project-packages.pth").write_text(f"{project_site}\n")
    for hook in project_site.glob("*.pth"):
        if not hook.name.startswith("__editable__") and str(ROOT) not in hook.read_text():
            shutil.copy(hook, site)
    return python, site


def _answered(kit_notebook, lab):
    """The kit's notebook with the solution's answers typed into its fill-in cells."""
    answers = {}
    for cell in nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            answers[meta["grade_id"]] = "\n".join(
                line for line in cell.source.splitlines()
                if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
    nb = nbformat.read(kit_notebook, as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            cell.source = answers[meta["grade_id"]]
    nb.cells.append(nbformat.v4.new_code_cell(
        "import importlib.util, json, sys\nimport mini\n"
        "print(json.dumps({'python': sys.executable, 'mini': mini.__file__,\n"
        "                  'autograder': importlib.util.find_spec('autograder') is not None}))"))
    return nb


INSTALLED = "lab5_kernels"     # its kit is installed as a wheel; the others' mini is put on the path


def test_each_kit_in_a_fresh_venv_passes_every_visible_test_once_answered(kits, tmp_path):
    python, site = _fresh_venv(tmp_path / "venv")
    setuptools = tuple(int(n) for n in importlib.metadata.version("setuptools").split(".")[:2])
    assert setuptools >= (70, 1) or importlib.util.find_spec("wheel"), \
        "building the kit's wheel offline needs setuptools 70.1+ or the wheel package (dev extra)"
    folders = {lab: tmp_path / f"kit-{lab}" for lab in LABS}
    for lab, folder in folders.items():
        shutil.copytree(kits[lab] / "kit", folder)
    offline = ["--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
    subprocess.run([python, "-m", "pip", "wheel", *offline, "-w", tmp_path / "wheel",
                    folders[INSTALLED]], check=True, timeout=300)
    [wheel] = (tmp_path / "wheel").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        packaged = {name.split("/")[0] for name in archive.namelist()}
    metadata = [name for name in packaged if name.endswith(".dist-info")]
    assert packaged == {"mini", *metadata} and len(metadata) == 1, packaged
    subprocess.run([python, "-m", "pip", "install", *offline, wheel], check=True, timeout=300)
    installed = {name: data for name, data in _files(site / "mini").items()
                 if "__pycache__" not in name}
    assert installed == _files(folders[INSTALLED] / "mini"), "the installed mini is not the kit's"

    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env.update(PATH=f"{python.parent}{os.pathsep}{env['PATH']}", MPLBACKEND="Agg",
               JUPYTER_DATA_DIR=str(tmp_path / "jupyter"), JUPYTER_PATH="")
    running = {}
    for lab in sorted(LABS, key=lambda lab: lab != "lab5_kernels"):   # the slowest first
        notebook = folders[lab] / "labs" / lab / f"{lab}.ipynb"
        nbformat.write(_answered(notebook, lab), notebook)
        while len(running) == 2:
            _finish_one(running)
        log = open(tmp_path / f"{lab}.log", "w")
        path = {} if lab == INSTALLED else {"PYTHONPATH": str(folders[lab])}
        running[lab] = (log, subprocess.Popen(
            [python, "-m", "nbconvert", "--to", "notebook", "--execute", "--output-dir",
             str(tmp_path / "executed"), "--ExecutePreprocessor.timeout=300", notebook.name],
            cwd=notebook.parent, env={**env, **path}, stdout=log, stderr=subprocess.STDOUT))
    while running:
        _finish_one(running)

    for lab in LABS:
        nb = nbformat.read(tmp_path / "executed" / f"{lab}.ipynb", as_version=4)
        tests = [c for c in nb.cells
                 if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
        assert tests and all(c.execution_count for c in tests), f"{lab}: a test cell did not run"
        probe = json.loads(nb.cells[-1].outputs[0]["text"])
        assert Path(probe["python"]).parent == python.parent, probe
        where = site if lab == INSTALLED else folders[lab]
        assert Path(probe["mini"]).is_relative_to(where), f"{lab} imported mini from {probe['mini']}"
        assert not probe["autograder"], f"{lab}: the grader is importable in the kit"


def _finish_one(running, seconds=600):
    """Wait until one of the running notebooks ends; fail with its error if it had one."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for lab, (log, process) in running.items():
            if process.poll() is not None:
                del running[lab]
                log.close()
                output = Path(log.name).read_text()
                assert process.returncode == 0, f"{lab} failed in the kit:\n{output[-4000:]}"
                return
        time.sleep(0.2)
    for log, process in running.values():
        process.kill()
    raise AssertionError(f"{', '.join(running)} still running after {seconds} s")


# -- the student's JupyterLab: nbgrader's student side only --------------------------------------

# What the kit's JupyterLab sees of its Jupyter config folders, read as `make lab` starts it:
# the server extensions it loads, the lab plugins it disables, the exchange nbgrader names, and
# what nbgrader's Assignments panel lists there (nbgrader's own handler code).
STUDENT_SIDE = r'''
import json, sys
from jupyter_core.paths import jupyter_config_path
from jupyter_server.extension.config import ExtensionConfigManager
from jupyterlab_server.config import get_page_config
from jupyter_core.paths import jupyter_path
from nbgrader.apps import NbGrader
from nbgrader.server_extensions.assignment_list.handlers import AssignmentList

extensions = ExtensionConfigManager(read_config_path=jupyter_config_path()).get_jpserver_extensions()
disabled = get_page_config(jupyter_path("labextensions"))["disabledExtensions"]
app = NbGrader()
app.load_config_file()
panel = AssignmentList(config=app.config)
panel.root_dir = "labs"          # the server's root: `jupyter lab labs`
assignments = panel.list_released_assignments()
print(json.dumps({"extensions": extensions, "disabled": sorted(disabled if isinstance(disabled, list)
                                                       else (k for k, v in disabled.items() if v)),
                  "course": app.config.CourseDirectory.course_id,
                  "exchange": app.config.Exchange.root, "assignments": assignments}))
'''


def test_the_kits_jupyterlab_shows_students_no_instructors_tool_and_lists_the_exchange(
        kits, tmp_path, monkeypatch):
    lab = "lab1_learning"
    folder = kits[lab] / "kit"
    makefile = (folder / "Makefile").read_text()
    lab_recipe = makefile.split("\nlab:", 1)[1]
    assert 'JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter' in lab_recipe, makefile
    assert "JUPYTER_CONFIG_PATH=jupyter" in (folder / "README.md").read_text()
    exchange = tmp_path / "exchange"
    exchange.mkdir(mode=0o1777)
    exchange.chmod(0o1777)
    monkeypatch.setenv("MINI_COURSE_DIR", str(kits[lab] / "course"))   # the instructor releases
    monkeypatch.setenv("MINI_RELEASE_DIR", str(kits[lab] / "release"))
    monkeypatch.setenv("MINI_EXCHANGE_DIR", str(exchange))
    assert course.api().release_assignment(lab)["success"]
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
           "JUPYTER_CONFIG_PATH": str(folder / "jupyter"), "MINI_EXCHANGE_DIR": str(exchange)}
    done = subprocess.run([sys.executable, "-c", STUDENT_SIDE], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["extensions"]["nbgrader.server_extensions.formgrader"] is False
    assert seen["extensions"]["nbgrader.server_extensions.assignment_list"] is True
    assert seen["extensions"]["nbgrader.server_extensions.validate_assignment"] is True
    assert {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment"} <= set(
        seen["disabled"]), seen["disabled"]
    assert "@jupyter/nbgrader:assignment-list" not in seen["disabled"]
    assert (seen["course"], seen["exchange"]) == ("mini", str(exchange)), seen
    assert seen["assignments"]["success"], seen["assignments"]
    assert [(a["course_id"], a["assignment_id"], a["status"])
            for a in seen["assignments"]["value"]] == [("mini", lab, "released")], seen
