"""The student kit: the folder (and its .zip) that students receive; nothing an instructor keeps.

design.md, "Distribution": students get the released labs, a student edition of ``mini``, the
environment files and a README with two commands (set up; open JupyterLab); never ``solutions/``,
the hidden checks or the grader.  The kit is written from what nbgrader released (those notebooks
have no solutions and no hidden tests) and from the repository's ``mini/``, with the answers of
every lab not *revealed* (its deadline not passed) left out (``autograder.edition``); its
``pyproject.toml`` is a distribution of ``mini`` alone, with the students' dependencies taken
from the repository's, so the two stay in step.  ``python -m autograder release`` calls
:func:`write` after every release.
"""
import html
import json
import shutil
import tomllib
from pathlib import Path

import nbformat

from autograder import REPO, edition
from autograder.labs import LABS, missing_needs, needs, short_name

DISTRIBUTION = "mini-labs"
# What a student's notebooks need: mini's own imports, NVIDIA's compilers for lab 5's PTX (no GPU
# needed), JupyterLab 4, and nbgrader 0.9 for the Validate button.  Versions come from the
# repository's pyproject.toml.
STUDENT_PACKAGES = ("numpy", "numba", "numba-cuda", "nvidia-cuda-nvrtc-cu12",
                    "nvidia-cuda-nvcc-cu12", "matplotlib", "tqdm", "jupyterlab", "nbgrader")
# from pip in the conda environment, as the repository's environment.yml
PIP_ONLY = {"numba-cuda", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvcc-cu12"}
SKIPPED = ("__pycache__", "*.pyc", "*.nbi", "*.nbc", ".ipynb_checkpoints")   # caches, not sources


def default_folder(released):
    """``kit/`` beside the release folder: ``kit/`` at the repository root for ``labs/``."""
    return Path(released).resolve().parent / "kit"


def write(released, folder=None, repo=REPO, revealed=()):
    """Write the kit for the labs in ``released`` to ``folder``, and ``folder``.zip beside it.

    Its mini is the student edition that holds the answers of the labs ``revealed`` and of no
    other lab.  A kit in which a lab that is not revealed needs a lab that is not revealed either
    (``autograder.labs.NEEDS``) is refused (ValueError, naming the lab to reveal): its students
    could not run it.  ``folder`` is replaced when it holds an earlier kit; any other existing,
    non-empty folder is refused (ValueError), so a mistyped ``--kit`` never deletes someone's
    files.  Returns the paths of the folder and of the zip.
    """
    released = Path(released).resolve()
    folder = Path(folder).resolve() if folder else default_folder(released)
    labs = [lab for lab in LABS if (released / lab / f"{lab}.ipynb").is_file()]
    if not labs:
        raise FileNotFoundError(f"{released} holds no released lab ({', '.join(LABS)}): "
                                "release one first")
    revealed = [lab for lab in LABS if lab in set(revealed)]
    for lab in labs:
        missing = missing_needs(lab, revealed) if lab not in revealed else []
        if missing:
            raise ValueError(f"the kit would hold {lab}, which builds on {', '.join(missing)}, "
                             "whose answers its students need: release with --reveal "
                             f"{','.join(short_name(name) for name in [*revealed, *missing])} "
                             "(once their deadlines have passed)")
    _clear(folder)
    for lab in labs:
        shutil.copytree(released / lab, folder / "labs" / lab,
                        ignore=shutil.ignore_patterns(*SKIPPED))
    edition.write(folder, [lab for lab in LABS if lab not in revealed], source=repo / "mini")
    project = tomllib.loads((repo / "pyproject.toml").read_text())
    requirements = student_requirements(project)
    (folder / "pyproject.toml").write_text(_pyproject(project, requirements))
    (folder / "environment.yml").write_text(_environment(requirements))
    (folder / "Makefile").write_text(MAKEFILE)
    _write_jupyter_config(folder / JUPYTER_CONFIG)
    (folder / "README.md").write_text(_readme(folder / "labs", labs, revealed))
    archive = shutil.make_archive(str(folder), "zip", root_dir=folder.parent, base_dir=folder.name)
    return folder, Path(archive)


def needed(released):
    """The labs that the labs in ``released`` build on (``autograder.labs.NEEDS``): the least a
    kit of them must reveal."""
    labs = [lab for lab in LABS if (Path(released) / lab / f"{lab}.ipynb").is_file()]
    return [lab for lab in LABS if any(lab in needs(other) for other in labs)]


def student_requirements(project):
    """The repository's requirement strings for :data:`STUDENT_PACKAGES`, in that order."""
    by_name = {_name(r): r for r in project["project"]["dependencies"]}
    missing = [name for name in STUDENT_PACKAGES if name not in by_name]
    if missing:
        raise ValueError(f"pyproject.toml does not list {', '.join(missing)}, which the student "
                         "kit installs; add them to [project] dependencies")
    return [by_name[name] for name in STUDENT_PACKAGES]


def _name(requirement):
    for stop in "<>=!~[ ;":
        requirement = requirement.split(stop, 1)[0]
    return requirement.strip().lower().replace("_", "-")


def _clear(folder):
    if folder.exists():
        earlier = folder / "pyproject.toml"
        is_kit = earlier.is_file() and f'name = "{DISTRIBUTION}"' in earlier.read_text()
        if not is_kit and any(folder.iterdir()):
            raise ValueError(f"{folder} exists and is not a student kit: choose an empty or new "
                             "folder for the kit (--kit DIR)")
        shutil.rmtree(folder)
    zipped = folder.with_name(folder.name + ".zip")
    zipped.unlink(missing_ok=True)


def _pyproject(project, requirements):
    meta = project["project"]
    package_data = project.get("tool", {}).get("setuptools", {}).get("package-data", {})
    data = ", ".join(f'"{pattern}"' for pattern in package_data.get("mini", []))
    dependencies = "".join(f'    "{requirement}",\n' for requirement in requirements)
    return (
        "# The labs' library, mini, and what the lab notebooks need (JupyterLab, nbgrader's\n"
        "# Validate button).  `make setup` installs it in .venv/.\n"
        "[build-system]\n"
        'requires = ["setuptools>=64"]\n'
        'build-backend = "setuptools.build_meta"\n\n'
        "[project]\n"
        f'name = "{DISTRIBUTION}"\n'
        f'version = "{meta["version"]}"\n'
        f'description = "The labs of the mini course and mini, the library they import."\n'
        'readme = "README.md"\n'
        f'requires-python = "{meta["requires-python"]}"\n'
        f"dependencies = [\n{dependencies}]\n\n"
        "[tool.setuptools.packages.find]\n"
        'include = ["mini", "mini.*"]\n\n'
        "[tool.setuptools.package-data]\n"
        f"mini = [{data}]\n")


def _environment(requirements):
    conda = [r for r in requirements if _name(r) not in PIP_ONLY]
    pip = [r for r in requirements if _name(r) in PIP_ONLY]
    lines = ["# The same packages as pyproject.toml, for conda users:",
             "#   conda env create -f environment.yml && conda activate mini-labs",
             "#   pip install --no-deps -e .      (then: JUPYTER_CONFIG_PATH=jupyter jupyter lab labs)",
             f"name: {DISTRIBUTION}", "channels:", "  - conda-forge", "dependencies:",
             "  - python>=3.11", "  - pip", *(f"  - {r}" for r in conda)]
    if pip:
        lines += ["  - pip:", *(f"      - {r}" for r in pip)]
    return "\n".join(lines) + "\n"


# The kit's own Jupyter config folder, which `make lab` puts first on JUPYTER_CONFIG_PATH: the
# student's side of nbgrader (the exchange; no instructor's menu items or server extension).
JUPYTER_CONFIG = "jupyter"
# nbgrader's instructor tools, hidden from students as nbgrader's documentation does it with
# `jupyter labextension disable` and `jupyter server extension disable`: the Formgrader, Create
# Assignment and the course list (which lists the courses of a formgrader).
INSTRUCTOR_LAB_PLUGINS = ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
                          "@jupyter/nbgrader:course-list")
INSTRUCTOR_SERVER_EXTENSIONS = ("nbgrader.server_extensions.formgrader",
                                "nbgrader.server_extensions.course_list")
def _write_jupyter_config(folder):
    """The kit's Jupyter config folder: nbgrader's student configuration, and nbgrader's
    instructor extensions disabled (labconfig/page_config.json for JupyterLab's plugins,
    jupyter_server_config.json for the server's)."""
    (folder / "labconfig").mkdir(parents=True)
    shutil.copy(REPO / "autograder" / "config" / "student_nbgrader_config.py",
                folder / "nbgrader_config.py")
    (folder / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {name: True for name in INSTRUCTOR_LAB_PLUGINS}}, indent=2) + "\n")
    (folder / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {name: False
                                               for name in INSTRUCTOR_SERVER_EXTENSIONS}}},
        indent=2) + "\n")


MAKEFILE = """\
# make setup   once: a virtual environment in .venv/ with mini, JupyterLab and nbgrader
# make lab     JupyterLab on the labs (sets up first if needed), with the course's nbgrader
#              settings from jupyter/ (the exchange; no instructor's tools)
PYTHON ?= python3

.PHONY: setup lab

setup: .venv/.installed

.venv/.installed: pyproject.toml
\t$(PYTHON) -m venv .venv
\t.venv/bin/python -m pip install --upgrade pip
\t.venv/bin/python -m pip install -e .
\ttouch $@

lab: setup
\tJUPYTER_CONFIG_PATH="$(CURDIR)/jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \\
\t\t.venv/bin/jupyter lab labs
"""


def _title(notebook):
    """The first heading of a notebook, e.g. "Lab 2 — Computation graphs"."""
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("#"):
            return html.unescape(cell.source.lstrip().splitlines()[0].lstrip("# ").strip())
    return notebook.stem


def _readme(labs_folder, labs, revealed):
    rows = "\n".join(f"| `labs/{lab}/{lab}.ipynb` | {_title(labs_folder / lab / f'{lab}.ipynb')} |"
                     for lab in labs)
    withheld = [lab for lab in LABS if lab not in revealed]
    shown = (f"the answers of {', '.join(revealed)} (their deadlines have passed: later labs run "
             "on them)" if revealed else "the answers of no lab")
    return README.format(rows=rows, revealed=shown, withheld=", ".join(withheld) or "none")


README = """\
# mini: the labs

In these labs you build, piece by piece, what a deep-learning framework does when it computes
gradients. Each lab is a Jupyter notebook; `mini/` is the library the notebooks import (read it:
start with `mini/graph.py`).

## Two commands

Needs Python 3.11 or newer and `make`:

```
make setup    # once: .venv/ with mini, JupyterLab and nbgrader (a few minutes)
make lab      # JupyterLab on the labs
```

Without `make`, the same two steps are
`python3 -m venv .venv && .venv/bin/python -m pip install -e .` and
`JUPYTER_CONFIG_PATH=jupyter .venv/bin/jupyter lab labs` (on Windows:
`.venv\\Scripts\\python -m pip install -e .`, `set JUPYTER_CONFIG_PATH=jupyter` and
`.venv\\Scripts\\jupyter lab labs`).
With conda: `conda env create -f environment.yml`, `conda activate mini-labs`,
`pip install --no-deps -e .`, then `JUPYTER_CONFIG_PATH=jupyter jupyter lab labs`.

`jupyter/` holds the course's nbgrader settings: `jupyter/nbgrader_config.py` names the course and
the exchange folder that JupyterLab's Assignments panel fetches from and submits to (your
instructor tells you whether your course uses it, and which folder, through `MINI_EXCHANGE_DIR`).

## The labs

| notebook | topic |
|---|---|
{rows}

## What `mini/` holds

This `mini` holds {revealed}.  The functions that answer the labs still to do ({withheld}) are
left out: calling one raises an error that names the lab and the fill-in that asks for it.
Writing them is the lab.  So are a few answers of earlier labs that a lab still to do asks for
again in a new setting (lab 4's `gradients` is lab 3's backward pass on graph nodes).

## Working on a lab

1. Open the lab's notebook in JupyterLab and run its first code cell (the setup cell).
2. In each cell marked `# YOUR CODE HERE`, replace `raise NotImplementedError()` with your code.
3. Run the test cell under it. A test cell prints that its tests pass, or stops with a message
   saying what is wrong (which function, which input, what was expected). The tests you see are
   a part of grading: grading also checks your code on inputs it draws itself, so passing the
   visible tests is needed, not enough.
4. Before you hand in: Kernel > Restart Kernel and Run All Cells, or the **Validate** button in
   the notebook's toolbar, which runs the whole notebook and lists every test cell that fails.

## Handing in

Submit the notebook file, `labs/<lab>/<lab>.ipynb`, the way your course asks. Keep its name, and
keep the test cells as they are (grading uses its own copy of them). Only the notebook is graded:
changes you make to `mini/` stay on your machine.

## GPU or simulator (lab 5)

Lab 5's CUDA kernels run on an NVIDIA GPU when there is one, and otherwise on Numba's CUDA
simulator, where every CUDA thread is a Python thread: slow (keep arrays to 32-64 per side), but
`print` and `pdb` work inside kernels. The setup cell prints which one it chose, and why. Set
`MINI_CUDA` before starting JupyterLab to choose yourself: `MINI_CUDA=simulator make lab` always
uses the simulator, `MINI_CUDA=gpu` requires the GPU. A real GPU also needs
`.venv/bin/python -m pip install "numba-cuda[cu12]"` (or `[cu13]`, matching your CUDA driver).
"""
