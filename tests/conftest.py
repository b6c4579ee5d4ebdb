"""Test-wide settings: pictures without a screen, Jupyter and the course kept in temp folders."""
import os
import shutil
import tempfile

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


# The slowest files first (measured, slowest at the top), so that `make test`'s two xdist workers
# (--dist loadfile --no-loadscope-reorder: a file at a time, in this order) end together instead of
# one of them running a long file alone at the end.
SLOWEST_FIRST = ["test_labs_grading.py", "test_autograder.py", "test_hostile_nbgrader.py",
                 "test_reruns.py", "test_parity.py", "test_exchange.py",
                 "test_pytest_path_samples.py", "test_hostile.py", "test_kit.py", "test_labs.py",
                 "test_verdicts_outside.py", "test_browser_student.py", "test_sandbox.py",
                 "test_browser_instructor.py", "test_lab5_wrong_work.py", "test_ptx.py",
                 "test_formgrader.py", "test_neighbours.py", "test_forkserver.py",
                 "test_demo_cells.py", "test_kernels_cuda.py", "test_gradescope.py",
                 "test_exit_codes.py", "test_feedback_pending.py", "test_cluster.py"]


def pytest_collection_modifyitems(items):
    missing = [name for name in SLOWEST_FIRST
               if not os.path.isfile(os.path.join(os.path.dirname(__file__), name))]
    if missing:
        raise RuntimeError(f"tests/conftest.py's SLOWEST_FIRST lists files that are not there: "
                           f"{', '.join(missing)}; take them out or rename them there too")

    def rank(item):
        name = item.path.name
        return SLOWEST_FIRST.index(name) if name in SLOWEST_FIRST else len(SLOWEST_FIRST)
    items.sort(key=rank)    # stable: within a file, and among the rest, the collected order
