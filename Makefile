# Every target that needs Python depends on a stamp: on a fresh machine it creates .venv
# and installs from a lock file what the target needs, then the project (editable);
# afterwards it reinstalls only when that lock file or a build file changed.
#   $(RUN_STAMP)  requirements.txt: what the server needs (`make run`)
#   $(STAMP)      requirements-dev.txt: that, the dev and mcp-client extras (every other target)
# `make lock` resolves the lock files again after pyproject.toml changed; `pip check`
# stops a target whose lock file lacks a dependency that pyproject.toml names.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.run-stamp
STAMP := $(VENV)/.stamp
BUILD_FILES := pyproject.toml setup.py
LINT_PATHS := $(wildcard engine app tests bench)
ARGS ?=

.PHONY: run test test-lowest lock fuzz lint bench openapi

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUN_STAMP): requirements.txt $(BUILD_FILES) | $(BIN)/python
	$(BIN)/python -m pip install -r requirements.txt
	$(BIN)/python -m pip install --no-deps -e .
	$(BIN)/python -m pip check
	touch $@

$(STAMP): requirements-dev.txt $(BUILD_FILES) | $(BIN)/python
	$(BIN)/python -m pip install -r requirements-dev.txt
	$(BIN)/python -m pip install --no-deps -e .
	$(BIN)/python -m pip check
	touch $@

run: $(RUN_STAMP)
	$(BIN)/threadline serve

test: $(STAMP)
	$(BIN)/python -m pytest $(ARGS)

# The test suite on the lowest versions of the runtime dependencies that pyproject.toml
# allows, the dev extra resolved around them (requirements-lowest.txt), in a venv of its
# own: what makes each lower bound a tested one. `make test-lowest ARGS=tests/api`: a part.
LOWEST := .venv-lowest
$(LOWEST)/.stamp: requirements-lowest.txt $(BUILD_FILES)
	test -x $(LOWEST)/bin/python || $(PYTHON) -m venv $(LOWEST)
	$(LOWEST)/bin/python -m pip install -r requirements-lowest.txt
	$(LOWEST)/bin/python -m pip install --no-deps -e .
	touch $@

test-lowest: $(LOWEST)/.stamp
	$(LOWEST)/bin/python -m pytest $(ARGS)

# uv resolves the lock files (pip installs them: a fresh machine needs no uv). Existing
# pins are kept where pyproject.toml still allows them; `make lock ARGS=--upgrade` moves
# every package to its latest release. requirements.txt is requirements-dev.txt's subset
# (the same versions), so `make run` and `make test` share one venv.
UV_VERSION := 0.13.9
COMPILE := $(BIN)/uv pip compile pyproject.toml --python-version 3.11 --quiet \
	--custom-compile-command 'make lock'
lock: | $(BIN)/python
	$(BIN)/python -m pip install --quiet 'uv==$(UV_VERSION)'
	$(COMPILE) --universal --extra dev --extra mcp-client -o requirements-dev.txt $(ARGS)
	$(COMPILE) --universal --constraint requirements-dev.txt -o requirements.txt
	$(COMPILE) --resolution lowest-direct --no-deps -o $(VENV)/lower-bounds.txt
	$(COMPILE) --extra dev --constraint $(VENV)/lower-bounds.txt -o requirements-lowest.txt

# The property tests and schemathesis of tests/security with FUZZ times more examples than
# `make test` tries, new ones on every run (`make test` tries the same ones every time).
FUZZ ?= 20
fuzz: $(STAMP)
	THREADLINE_FUZZ=$(FUZZ) $(BIN)/python -m pytest tests/security/test_properties.py \
		tests/security/test_fuzz.py tests/security/test_schemathesis.py $(ARGS)

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
