# Two commands do all the set-up on a fresh machine: `make demo` and `make test`. `make test-fast`
# runs the unit tier alone (tests/unit: no training, no server, about a minute).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The CPU wheel; an open range or a bare `torch` would pull a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
# TensorFlow's CPU wheel, for the Keras integration and its tests (the `tensorflow` extra names the
# full `tensorflow` for users; both install the same `tensorflow` module). `make setup TF=` skips it.
TF     ?= tensorflow-cpu==2.21.0

.PHONY: setup demo test test-fast lint format bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH)" $(if $(TF),"$(TF)")
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: setup
	$(PY) examples/demo.py

# Everything, on $(WORKERS) pytest-xdist workers (a module stays on one worker, and the modules
# that share a trained sweep or a service share one: tests/support/tiers.py); the ten slowest
# tests are listed at the end.
WORKERS ?= 2
test: setup
	$(PY) -m pytest -n $(WORKERS) --dist loadgroup --durations=10

test-fast: setup
	$(PY) -m pytest tests/unit

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/ruff format --check src tests benchmarks examples

format: setup
	$(VENV)/bin/ruff check --fix src tests benchmarks examples
	$(VENV)/bin/ruff format src tests benchmarks examples

bench: setup
	$(PY) benchmarks/bench_capture.py
	$(PY) benchmarks/bench_cli.py
	$(PY) benchmarks/bench_logging.py
	$(PY) benchmarks/bench_diff.py
	$(PY) benchmarks/bench_find.py
	$(PY) benchmarks/bench_explain.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build dist src/*.egg-info
