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

bench: $(STAMP)
	$(BIN)/python bench/run_all.py $(ARGS)

openapi: $(STAMP)
	$(BIN)/python -m app.openapi openapi.json
