# Two commands do all the set-up on a fresh machine: `make demo` (the package, torch, the demo's
# data) and `make test` (adds the development stack). `make test-fast` runs the unit tier alone
# (tests/unit: no training, no server, about a minute).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# Which torch build: `cuda` where an NVIDIA driver is present, else `cpu`, taken from PyTorch's CPU
# index when it answers within 5 s (scripts/torch_index.py); otherwise pip resolves torch as usual.
TORCH_BUILD ?= $(if $(wildcard /proc/driver/nvidia)$(shell command -v nvidia-smi 2>/dev/null),cuda,cpu)
TORCH  ?= torch==2.13.0
# TensorFlow's CPU wheel, for the Keras integration and its tests (the `tensorflow` extra names the
# full `tensorflow` for users; both install the same `tensorflow` module). `make setup TF=` skips it.
TF     ?= tensorflow-cpu==2.21.0
# The cluster engines' Python parts, for the tests that start a Ray cluster (the `ray` extra; Slurm
# is the distribution's, .ci/run). `make setup ENGINES=` leaves them out, and those tests skip.
ENGINES ?= ray
# The versions the tests ran on (scripts/constraints.py); `make setup CONSTRAINTS=` lifts them.
CONSTRAINTS ?= constraints.txt
# The installer: uv, which installs in parallel what pip installs one at a time (59-86 s against
# 215-222 s from empty caches on 2 cores: benchmarks/bench_setup.py), told where pip's configuration
# takes packages from (scripts/install.py); pip wherever uv cannot be. `make setup UV=`: pip alone.
UV     ?= uv==0.13.9
comma  := ,
# When the installed packages are byte-compiled: `install` (every module as it is installed, as pip
# and uv do for a user's venv) or `lazy` (.ci/run): none at install; the tests compile what they
# import, once, into $(PYCACHE) (PYTHONPYCACHEPREFIX, so that a test project's folder gets no
# __pycache__), with PYTHONDONTWRITEBYTECODE lifted for them. On CI's two cores, compiling all
# some 28,000 modules took 94 CPU-seconds of the set-up; the at most 8,000 a test process imports
# compile in about 30.
BYTECODE ?= install
PYCACHE := $(abspath $(VENV))/pycache
LAZY    := $(filter lazy,$(BYTECODE))
# How the targets that run tests start Python: with the compiled modules kept where `lazy` says.
TESTENV := $(if $(LAZY),env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(PYCACHE))
INSTALL := $(PY) scripts/install.py --uv "$(UV)" $(if $(CONSTRAINTS),--constraint $(CONSTRAINTS)) $(if $(LAZY),--lazy-bytecode) --

# What chose the venv's contents. When any of it changes, the venv is built again from nothing
# (a package a setting put there would otherwise stay).
SETTINGS   := python=$(PYTHON) torch=$(TORCH) torch_build=$(TORCH_BUILD) tf=$(TF) engines=$(ENGINES) constraints=$(CONSTRAINTS) bytecode=$(BYTECODE)
CHOSEN     := $(VENV)/.settings
# `make demo` installs the package, torch and scikit-learn (the digits data); `make setup` (and
# every target that runs tests or tools) installs that, TensorFlow and the development stack in one
# pip run.
CREATED    := $(VENV)/.created
DEMO_STAMP := $(VENV)/.installed-demo
STAMP      := $(VENV)/.installed-dev

.PHONY: setup setup-demo demo test test-fast compiled test-hooks lint format bench clean FORCE

setup: $(STAMP)

setup-demo: $(DEMO_STAMP)

# Rewritten only when the settings differ, so that only then do the targets below go stale.
$(CHOSEN): FORCE
	@if [ "$$(cat $@ 2>/dev/null)" != "$(SETTINGS)" ]; then \
		if [ -d $(VENV) ]; then echo "set-up settings changed ($(SETTINGS)): rebuilding $(VENV)"; rm -rf $(VENV); fi; \
		mkdir -p $(VENV) && echo "$(SETTINGS)" > $@; \
	fi

# The venv, and torch's CPU build from PyTorch's index where that is the build to take and the
# index answers (without dependencies: the installs below resolve them, under the constraints).
$(CREATED): $(CHOSEN)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
		|| { echo "mlflow-fingerprint needs Python 3.11 or newer; $(PYTHON) is $$($(PYTHON) -V 2>&1) (make PYTHON=python3.11 ...)"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@index="$$($(PYTHON) scripts/torch_index.py $(TORCH_BUILD))"; \
	if [ -n "$$index" ]; then \
		echo "torch: $(TORCH) from $${index#--index-url }"; \
		$(PY) -m pip install --quiet --no-deps $(if $(LAZY),--no-compile) $$index "$(TORCH)" \
			|| echo "torch: the CPU index failed; pip resolves torch as usual"; \
	fi
	touch $@

$(DEMO_STAMP): $(CREATED) pyproject.toml $(CONSTRAINTS)
	@$(INSTALL) "$(TORCH)" -e ".[demo]"
	touch $@

# Everything the demo has too, so the demo's stamp holds after it.
$(STAMP): $(CREATED) pyproject.toml $(CONSTRAINTS)
	@$(INSTALL) "$(TORCH)" $(if $(TF),"$(TF)") -e ".[demo,dev$(if $(ENGINES),$(comma)$(ENGINES))]"
	touch $(DEMO_STAMP) $@

demo: $(DEMO_STAMP)
	@$(PY) examples/demo.py

# Everything, on $(WORKERS) pytest-xdist workers, a test module on one worker (`--dist loadfile`:
# its module fixtures, a trained pair or a server, are built once; xdist's `loadgroup` does not
# group on pytest 9, which ignores the node id it rewrites); the ten slowest tests at the end.
# The package is byte-compiled first: where PYTHONDONTWRITEBYTECODE is set (these machines, CI),
# Python keeps nothing it compiles on import, and each of the some hundred processes the tests
# start would compile the package again (pip compiled what it installed; an editable install's
# sources it does not).
# Three workers on CI's two cores: with two, the cores sat idle while tests waited on the servers
# they kill and restart (test_faults.py), on Slurm and on Ray; a third fills that time.
WORKERS ?= 3
test: compiled test-hooks
	$(TESTENV) $(PY) -m pytest -n $(WORKERS) --dist loadfile --durations=10

test-fast: compiled test-hooks
	$(TESTENV) $(PY) -m pytest tests/unit

compiled: setup
	$(TESTENV) $(PY) -m compileall -q -q src

# Every Python process the tests start (trainings, reruns, servers) runs with the garbage
# collector off while it imports torch and MLflow, on over a frozen heap after 20 s, and skips
# the interpreter's last collection at exit, as the `fingerprint` command does for itself
# (cli/collector.py): the imports are most of a training's CPU, and the suite starts hundreds.
# tests/support/process_hooks.py, imported at every interpreter's start through
# its .pth, does it only where MFP_TESTS_PROCESS_HOOKS=1 (tests/conftest.py sets it). A program
# run outside the tests is not touched.
# With lazy bytecode, the .pth also keeps what every interpreter of the venv compiles in
# $(PYCACHE), PYTHONPYCACHEPREFIX or not: a process the tests start with a bare environment (a
# README block in a fresh shell, a Slurm job with --export=NONE) would otherwise compile torch and
# MLflow again beside their sources, 8-12 CPU-seconds each time.
test-hooks: setup
	purelib="$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" && \
	cp tests/support/process_hooks.py "$$purelib/mfp_tests_process_hooks.py" && \
	cp tests/support/process_hooks.pth "$$purelib/mfp_tests_process_hooks.pth" $(if $(LAZY),&& \
	echo "import sys; sys.pycache_prefix = sys.pycache_prefix or '$(PYCACHE)'" >> "$$purelib/mfp_tests_process_hooks.pth")

# mypy reads what to check from pyproject.toml ([tool.mypy]: src/, the strict packages).
lint: setup
	$(VENV)/bin/ruff check src tests benchmarks examples scripts
	$(VENV)/bin/ruff format --check src tests benchmarks examples scripts
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-cache

format: setup
	$(VENV)/bin/ruff check --fix src tests benchmarks examples scripts
	$(VENV)/bin/ruff format src tests benchmarks examples scripts

# Compiled first like the tests: a benchmark must time the package as an install runs it, not
# the compiling of its sources in every process it starts.
bench: compiled
	$(PY) benchmarks/bench_capture.py
	$(PY) benchmarks/bench_cli.py
	$(PY) benchmarks/bench_cli_commands.py
	$(PY) benchmarks/bench_start.py
	$(PY) benchmarks/bench_start.py --framework keras
	$(PY) benchmarks/bench_logging.py
	$(PY) benchmarks/bench_diff.py
	$(PY) benchmarks/bench_find.py
	$(PY) benchmarks/bench_explain.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache build dist src/*.egg-info
