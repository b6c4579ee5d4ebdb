# Two entry points, each sets up .venv/ on first use and reuses it afterwards:
#   make demo   release every lab, autograde sample submissions, print the grade table
#   make test   run the full test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: demo test setup browser hub clean

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

# tests/browser/test_hub.py runs a real JupyterHub, whose proxy is configurable-http-proxy from
# npm: installed in .hub/ (git ignores it) when missing, Node.js and npm from Debian if need be.
CHP := .hub/node_modules/.bin/configurable-http-proxy
APT_NODE := apt-get update && apt-get install -y nodejs npm
hub: $(CHP)

$(CHP):
	@if ! command -v npm >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then $(APT_NODE); \
		elif command -v sudo >/dev/null; then sudo sh -c '$(APT_NODE)'; \
		else echo "the hub test needs npm; as root, run: $(APT_NODE)" >&2; exit 1; fi; fi
	npm install --prefix .hub --no-audit --no-fund configurable-http-proxy
	test -x $@ && touch $@

demo: setup
	$(BIN)/python -m autograder demo

# One BLAS thread per test process: two xdist workers share the two cores, taking a file at a
# time, the slowest first (tests/conftest.py orders them); the 15 slowest tests are listed.
test: setup browser hub
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=15

clean:
	rm -rf $(VENV) course
