"""Test-wide settings: pictures without a screen, Jupyter and the course kept in temp folders."""
import os
import shutil
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# The helpers of support/ fail with the same detail as the tests that call them.
pytest.register_assert_rewrite("support")

_home = tempfile.mkdtemp(prefix="mini-tests-")
for variable, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                      ("JUPYTER_RUNTIME_DIR", "runtime")):
    os.environ[variable] = os.path.join(_home, "jupyter", sub)
os.environ["MINI_COURSE_DIR"] = os.path.join(_home, "course")
os.environ["MPLBACKEND"] = "Agg"
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_unconfigure():
    shutil.rmtree(_home, ignore_errors=True)


# The slowest files first (each file's total from `pytest --durations=0`, slowest at the top;
# paths from this folder), so that `make test`'s two xdist workers (--dist loadfile
# --no-loadscope-reorder: a file at a time, in this order) end together instead of one of them
# running a long file alone at the end.
SLOWEST_FIRST = ["sandbox/test_neighbours.py", "grading/test_parity.py",
                 "labs/test_labs_grading.py", "grading/test_autograder.py",
                 "grading/test_reruns.py", "grading/test_pytest_path_samples.py",
                 "sandbox/test_hostile_nbgrader.py", "labs/test_lab5_wrong_work.py",
                 "sandbox/test_sandbox.py", "grading/test_kit.py", "sandbox/test_hostile.py",
                 "sandbox/test_attacks.py", "sandbox/test_forkserver.py",
                 "grading/test_class_report.py", "labs/test_labs.py", "labs/test_demo_cells.py",
                 "browser/test_browser_student.py", "grading/test_exchange.py",
                 "grading/test_cluster.py", "grading/test_late_work.py",
                 "grading/test_verdicts_outside.py", "labs/test_lab4_wrong_work.py",
                 "browser/test_browser_instructor.py", "labs/test_lab2_wrong_work.py",
                 "grading/test_formgrader.py", "labs/test_lab1_wrong_work.py",
                 "browser/test_hub.py", "grading/test_feedback_pending.py",
                 "labs/test_lab3_wrong_work.py", "library/test_ptx.py",
                 "library/test_kernels_cuda.py", "library/test_backend.py",
                 "grading/test_exit_codes.py", "grading/test_edition.py",
                 "library/test_kernels_cpu.py", "grading/test_formgrader_rubric.py",
                 "grading/test_gradescope.py"]


def pytest_collection_modifyitems(items):
    missing = [name for name in SLOWEST_FIRST if not (HERE / name).is_file()]
    if missing:
        raise RuntimeError(f"tests/conftest.py's SLOWEST_FIRST lists files that are not there: "
                           f"{', '.join(missing)}; take them out or rename them there too")

    ranks = {HERE / name: place for place, name in enumerate(SLOWEST_FIRST)}

    def rank(item):
        return ranks.get(item.path.resolve(), len(SLOWEST_FIRST))
    items.sort(key=rank)    # stable: within a file, and among the rest, the collected order
