# Every target that needs Python depends on $(STAMP): on a fresh machine it creates .venv
# and installs the project with its dev extra; afterwards it reinstalls only when
# pyproject.toml is newer than the stamp.

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.stamp
BIN := $(VENV)/bin
LINT_PATHS := $(wildcard engine app tests bench)
ARGS ?=

.PHONY: run test lint bench openapi

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/threadline serve

test: $(STAMP)
	$(BIN)/python -m pytest $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

# The reference server (`langgraph dev`) gets its own venv: its pins clash with the dev
# extra's (schemathesis wants a newer jsonschema-rs than langgraph-api accepts).
REF := .venv-ref
$(REF)/.stamp: pyproject.toml
	test -x $(REF)/bin/python || $(PYTHON) -m venv $(REF)
	$(REF)/bin/python -m pip install -e . 'langgraph-cli[inmem]'
	touch $(REF)/.stamp

bench: $(STAMP) $(REF)/.stamp
	$(BIN)/python bench/run_all.py $(ARGS)

openapi: $(STAMP)
	$(BIN)/python -m app.openapi openapi.json
