# Two entry points, each sets up .venv/ on first use and reuses it afterwards:
#   make demo   release every lab, autograde sample submissions, print the grade table
#   make test   run the full test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: demo test setup browser clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# The browser tests (tests/browser/) drive Debian's chromium through its chromedriver.
APT_BROWSER := apt-get update && apt-get install -y chromium chromium-driver
browser: /usr/bin/chromedriver

/usr/bin/chromedriver:
	@if [ "$$(id -u)" = 0 ]; then $(APT_BROWSER); \
	elif command -v sudo >/dev/null; then sudo sh -c '$(APT_BROWSER)'; \
	else echo "the browser tests need chromium; as root, run: $(APT_BROWSER)" >&2; exit 1; fi

demo: setup
	$(BIN)/python -m autograder demo

# One BLAS thread per test process: two xdist workers share the two cores, taking a file at a
# time, the slowest first (tests/conftest.py orders them); the 15 slowest tests are listed.
test: setup browser
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=15

clean:
	rm -rf $(VENV) course
