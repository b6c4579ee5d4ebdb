"""What a process about to run student code forgets and refuses: the grader but for the probes it
runs, and the packages that differentiate (``autograder.sandbox.guard``)."""
import subprocess
import sys

from support import ROOT

SCRIPT = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from autograder import probes
from autograder.sandbox import guard
kept = probes.lab_probes("lab2_graphs")
guard.hide_autograder(keep=["autograder.probes", kept])
results = {{}}
for name in ("autograder.checks", "autograder.checks.lab2", "autograder.pytest_path.runner", "autograd",
             "autograd.numpy", "torch", "hypothesis"):
    try:
        __import__(name)
        results[name] = "imported"
    except ImportError as error:
        results[name] = str(error)
results["kept"] = sorted(n for n in sys.modules if n.startswith("autograder"))
results["probe"] = probes.PROBES[("lab2", "toposort_order")].__name__
print(results)
"""


def test_the_grader_and_other_differentiators_cannot_be_imported_but_the_probes_stay():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    results = eval(done.stdout.strip().splitlines()[-1])
    for name in ("autograder.checks", "autograder.checks.lab2", "autograder.pytest_path.runner"):
        assert results[name] == "the autograder cannot be imported from a submission", name
    for name in ("autograd", "autograd.numpy", "torch", "hypothesis"):
        assert results[name].startswith(f"{name.split('.')[0]} cannot be imported while a lab "
                                        "is graded"), name
    assert results["kept"] == ["autograder", "autograder.probes", "autograder.probes.lab2"]
    assert results["probe"] == "toposort_order"
