# The two newcomer commands: `make run` (set up + main job) and `make test` (set up + tests).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.prbench-installed

.PHONY: run test setup clean-outputs

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0          # CPU wheel first; see pyproject.toml
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/prbench run

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q tests

clean-outputs:
	rm -rf data/ingest data/profiles metrics/*.json plots/*
