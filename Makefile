# Two commands for a fresh machine: `make bench` and `make test`. Each installs what it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RESULTS := .asv/results
HTML := .asv/html
# asv runs the committed HEAD in its own virtualenv; "HEAD --max-count=1" also works on a root commit.
ASV_RANGE ?= HEAD --max-count=1
# The name results are filed under (results/<MACHINE>/); default: the host name, as asv's.
MACHINE ?=
MACHINE_FLAG := $(if $(MACHINE),--machine $(MACHINE))

.PHONY: bench test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.bench-installed: setup.cfg pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[bench]'
	touch $@

$(VENV)/.test-installed: setup.cfg pyproject.toml tools/install-test-deps.sh | $(BIN)/python
	bash tools/install-test-deps.sh $(BIN)/python
	touch $@

bench: $(VENV)/.bench-installed
	$(BIN)/roofline preflight --results $(RESULTS)
	$(BIN)/roofline machine $(MACHINE_FLAG)
	rc=0; $(BIN)/asv run --show-stderr $(MACHINE_FLAG) "$(ASV_RANGE)" || rc=$$?; \
	$(BIN)/asv publish || rc=$$((rc ? rc : 1)); \
	echo "HTML: $(CURDIR)/$(HTML)/index.html  (view with: $(BIN)/asv preview)"; \
	exit $$rc

test: $(VENV)/.test-installed
	$(BIN)/python -m pytest

lint: $(VENV)/.test-installed
	$(BIN)/ruff check roofline benchmarks tests tools

clean:
	rm -rf $(VENV) .asv build *.egg-info
