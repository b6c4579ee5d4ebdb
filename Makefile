# Two entry points, each sets up .venv/ on first use and reuses it afterwards:
#   make demo   release every lab, autograde sample submissions, print the grade table
#   make test   run the full test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: demo test setup clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: setup
	$(BIN)/python -m autograder demo

# One BLAS thread per test process: two xdist workers share the two cores, taking a file at a
# time, the slowest first (tests/conftest.py orders them); the 15 slowest tests are listed.
test: setup
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=15

clean:
	rm -rf $(VENV) course
