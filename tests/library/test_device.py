"""GPU or simulator: the choice mini.kernels.device makes, each case in a fresh interpreter.

No test here needs a GPU: a missing driver is simulated by pointing the probe at a library that
does not exist, so "no driver found" is tested on every machine.
"""
import json
import os
import subprocess
import sys

import pytest

NO_DRIVER = ("from mini.kernels import device\n"
             "device._DRIVER_LIBRARY = 'libcuda-absent-for-test.so'\n")
REPORT = ("import json, sys, numba\n"
          "from mini.kernels import describe\n"
          "import numpy as np\n"
          "from mini.kernels import cuda as kc\n"
          "choice = describe()\n"
          "print(json.dumps(dict(target=choice.target, reason=choice.reason,\n"
          "    forced=choice.forced, cudasim=numba.config.ENABLE_CUDASIM,\n"
          "    switch=sys.getswitchinterval(),\n"
          "    result=kc.map(kc.exp, np.zeros(3)).tolist())))\n")


def _run(script, **env):
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("MINI_CUDA", "NUMBA_ENABLE_CUDASIM")}
    environment.update(env)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=environment, timeout=300)


def _report(script, **env):
    run = _run(script, **env)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1]), run.stderr


def _one_clear_line(stderr, target_words):
    lines = [line for line in stderr.splitlines() if line.startswith("mini: CUDA")]
    assert len(lines) == 1, stderr
    assert target_words in lines[0]
    assert "MINI_CUDA=gpu" in lines[0] and "MINI_CUDA=simulator" in lines[0]
    return lines[0]


def test_simulator_forced_by_the_environment_variable():
    report, stderr = _report(REPORT, MINI_CUDA="simulator")
    assert report["target"] == "simulator" and report["forced"]
    assert report["cudasim"] == 1 and report["switch"] == pytest.approx(1e-4)
    assert report["result"] == [1.0, 1.0, 1.0]
    assert "because MINI_CUDA=simulator" in _one_clear_line(stderr, "Numba's CUDA simulator")


def test_simulator_chosen_automatically_without_a_driver():
    report, stderr = _report(NO_DRIVER + REPORT)
    assert report["target"] == "simulator" and not report["forced"]
    assert "no CUDA driver" in report["reason"] and report["cudasim"] == 1
    assert report["result"] == [1.0, 1.0, 1.0]
    assert "libcuda-absent-for-test.so" in _one_clear_line(stderr, "Numba's CUDA simulator")


def test_numba_cuda_imported_first_is_replaced_by_the_simulator():
    script = ("import numba\n"
              "from numba import cuda as early\n"
              "assert numba.config.ENABLE_CUDASIM == 0\n"
              + NO_DRIVER + REPORT +
              "import numba.cuda\n"
              "print('replaced' if numba.cuda is not early else 'kept')\n")
    run = _run(script)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.splitlines()[-2])
    assert report["target"] == "simulator" and report["cudasim"] == 1
    assert report["result"] == [1.0, 1.0, 1.0]   # would fail to launch on the stale numba.cuda
    assert run.stdout.splitlines()[-1] == "replaced"


def test_cpu_kernels_first_then_cuda():
    script = ("import numpy as np\n"
              "from mini.kernels import cpu\n"
              "cpu.map(np.exp, np.zeros(3))\n" + REPORT)
    report, stderr = _report(script, MINI_CUDA="simulator")
    assert report["result"] == [1.0, 1.0, 1.0]
    _one_clear_line(stderr, "simulator")


def test_numba_enable_cudasim_is_respected_when_mini_cuda_is_unset():
    report, stderr = _report(REPORT, NUMBA_ENABLE_CUDASIM="1")
    assert report["target"] == "simulator" and "NUMBA_ENABLE_CUDASIM=1" in report["reason"]


def test_gpu_forced_without_a_driver_is_a_clear_error():
    run = _run(NO_DRIVER + "import mini.kernels.cuda\n", MINI_CUDA="gpu")
    assert run.returncode != 0
    assert "MINI_CUDA=gpu asks for a GPU" in run.stderr and "no CUDA driver" in run.stderr


def test_unknown_setting_is_a_clear_error():
    run = _run("import mini.kernels.cuda\n", MINI_CUDA="tpu")
    assert run.returncode != 0
    assert "MINI_CUDA='tpu' is not understood" in run.stderr


def test_the_choice_is_made_and_announced_once():
    script = ("from mini.kernels import describe, device\n"
              "first = describe()\n"
              "import mini.kernels.cuda\n"
              "assert describe() is first and device.choose() is first\n")
    run = _run(script, MINI_CUDA="simulator")
    assert run.returncode == 0, run.stderr
    _one_clear_line(run.stderr, "simulator")


def test_importing_mini_kernels_decides_nothing():
    run = _run("import sys, mini, mini.kernels\n"
               "print('numba' in sys.modules)\n")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False" and run.stderr == ""
