"""Test-wide settings: pictures without a screen, Jupyter and the course kept in temp folders."""
import os
import tempfile

_home = tempfile.mkdtemp(prefix="mini-tests-")
for variable, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                      ("JUPYTER_RUNTIME_DIR", "runtime")):
    os.environ[variable] = os.path.join(_home, "jupyter", sub)
os.environ["MINI_COURSE_DIR"] = os.path.join(_home, "course")
os.environ["MPLBACKEND"] = "Agg"
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
