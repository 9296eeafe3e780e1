# Two commands for a fresh machine: `make bench` and `make test`. Each installs what it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Where roofline bench files results and HTML: asv.conf.json's .asv/results and .asv/html; a quick look's own
# .asv/quick/results and .asv/quick/html (RESULTS=, HTML= choose others).
RESULTS :=
HTML :=
FOLDER_FLAGS := $(if $(RESULTS),--results $(RESULTS)) $(if $(HTML),--html $(HTML))
# The name results are filed under (results/<MACHINE>/); default: what the machine is (CPU, core, cores, LLC:
# epyc-zen4-2core-32mib-l3), never the host name (docs/machines.md).
MACHINE ?=
MACHINE_FLAG := $(if $(MACHINE),--machine $(MACHINE))
# QUICK=1: a quick look, every class at small sizes, filed in .asv/quick (ROOFLINE_QUICK; a ROOFLINE_* size
# variable set wins; docs/bench.md).
ifneq ($(QUICK),)
export ROOFLINE_QUICK := $(QUICK)
endif
# ALLOW_BUSY=1: measure even on a busy machine (the run is flagged in the report and the results).
BUSY_FLAG := $(if $(ALLOW_BUSY),--allow-busy)
# What asv's virtualenv gets beside the package: torch and transformers for models.ModelDecode (once,
# about a minute from a local wheel). MODELS_REQUIREMENTS= leaves them out: ModelDecode then skips.
MODELS_REQUIREMENTS ?= requirements/models.txt
MODELS_FLAG := $(if $(MODELS_REQUIREMENTS),--asv-env-requirements $(MODELS_REQUIREMENTS))
# ... and llama.cpp for engines.LlamaCppDecode (built from source once, minutes; docs/engines.md).
# ENGINES_REQUIREMENTS= leaves it out: LlamaCppDecode then skips.
ENGINES_REQUIREMENTS ?= requirements/engines.txt
ENGINES_FLAG := $(if $(ENGINES_REQUIREMENTS),--asv-env-requirements $(ENGINES_REQUIREMENTS))
# An empty one of the two is a choice: its class is left out of the run, with one line naming the variable, even
# where an earlier run installed its packages in asv's environment (ROOFLINE_WITHOUT, roofline/suite/runnable.py).
empty :=
comma := ,
WITHOUT := $(subst $(empty) $(empty),$(comma),$(strip $(if $(MODELS_REQUIREMENTS),,models) $(if $(ENGINES_REQUIREMENTS),,engines)))
ifneq ($(WITHOUT),)
export ROOFLINE_WITHOUT := $(WITHOUT)
endif

# make gallery: a full default run of this machine, filed under what it is (CPU, cores, LLC), merged into
# examples/results beside the machines already there (docs/machines.md: add every CPU model the gallery lacks).
GALLERY ?= examples/results
# TRIAL=1: accept the ROOFLINE_* sizes set (trying make gallery itself on a scratch GALLERY)
GALLERY_FLAGS := $(if $(TRIAL),--trial)

# make fleet: this machine's two ReFrame partitions, merged, published, compared (docs/fleet.md);
# FLEET_ARGS="--bench ''" runs the whole suite, "-- -S results_dir=..." passes options to ReFrame.
FLEET_OUT ?= .fleet
FLEET_ARGS ?=

.PHONY: bench gallery test test-fast lint clean fleet

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.bench-installed: setup.cfg pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[bench]'
	touch $@

$(VENV)/.test-installed: setup.cfg pyproject.toml tools/install-test-deps.sh requirements/models.txt requirements/engines.txt | $(BIN)/python
	bash tools/install-test-deps.sh $(BIN)/python
	touch $@

$(VENV)/.fleet-installed: setup.cfg pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[fleet]'
	touch $@

# make exits 2 whatever a recipe's status (it prints "Error 3"): roofline bench's own exit status (1 a benchmark
# failed, 2 bad input, 3 a busy machine, 130/143 stopped) is written to $(STATUS) for scripts to read.
STATUS := .asv/exit-status
KEEP_STATUS = status=$$?; mkdir -p $(dir $(STATUS)); echo $$status > $(STATUS); exit $$status
# A status left by an earlier run goes first: where the install fails, no status of roofline's is there to read.
ifneq ($(filter bench gallery,$(MAKECMDGOALS)),)
$(shell rm -f $(STATUS))
endif

bench: $(VENV)/.bench-installed
	$(BIN)/roofline bench $(FOLDER_FLAGS) $(MACHINE_FLAG) $(BUSY_FLAG) $(MODELS_FLAG) $(ENGINES_FLAG); $(KEEP_STATUS)

gallery: $(VENV)/.bench-installed
	$(BIN)/roofline bench --gallery $(GALLERY) $(GALLERY_FLAGS) $(FOLDER_FLAGS) $(MACHINE_FLAG) $(BUSY_FLAG) $(MODELS_FLAG) $(ENGINES_FLAG); $(KEEP_STATUS)

fleet: $(VENV)/.fleet-installed
	$(BIN)/python fleet/run.py --out $(FLEET_OUT) $(FLEET_ARGS)

# The two tiers (setup.cfg's markers): test-fast, what no asv, `roofline bench`, Chromium or ReFrame
# runs in and no long measurement needs; then the e2e and slow tests. make test runs both.
# Both tiers on TEST_WORKERS pytest-xdist workers; the e2e tier's tests that share a fixture on one, the longest
# groups first (tests/conftest.py): its runs wait mostly on asv's processes, sleeps and timed minimums, and on one
# worker this VM's 2 cores stood half idle. TEST_WORKERS=0: one process, as before. Then the `alone` e2e tests, one
# process with nothing beside it: tests/test_slowdown.py's 2x is significant only when no neighbour halves its share.
TEST_WORKERS ?= 2
test-fast: $(VENV)/.test-installed
	$(BIN)/ruff check roofline benchmarks tests tools fleet
	$(BIN)/python -m pytest -p randomly -m "not e2e and not slow" -n $(TEST_WORKERS) --durations=5

test: test-fast
	$(BIN)/python -m pytest -p randomly -m "(e2e or slow) and not alone" -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder --durations=15
	$(BIN)/python -m pytest -p randomly -m "(e2e or slow) and alone" --durations=3

lint: $(VENV)/.test-installed
	$(BIN)/ruff check roofline benchmarks tests tools fleet

clean:
	rm -rf $(VENV) .asv .fleet build *.egg-info
