# Each target bootstraps .venv on a fresh machine; when already installed it skips that step.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test test-long check bench paper lint clean-db

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip
	@$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/podledger demo

# The suite CI runs (under 15 minutes); `make test-long` runs the few tests marked `long`.
# TEST_JOBS processes (pytest-xdist), each with its own embedded PostgreSQL (or its own
# databases on PODLEDGER_DATABASE_URL's server); a test file stays in one process, so its
# module fixtures (a k8s endpoint, an attached cluster) start once. The schemathesis fuzz file
# runs beside them in a process of its own (pytest-xdist would drop its cases: see the file);
# its output follows the others'. TEST_JOBS=0: the rest in one process too.
TEST_JOBS ?= 2
FUZZ := tests/http/test_schemathesis.py
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider -m "not long"
test: $(STAMP)
	@log=$$(mktemp); $(PYTEST) $(FUZZ) >$$log 2>&1 & fuzz=$$!; \
	$(PYTEST) -n $(TEST_JOBS) --dist loadfile --ignore=$(FUZZ); rest=$$?; \
	wait $$fuzz; fz=$$?; echo "== $(FUZZ) (run beside the others) =="; cat $$log; rm -f $$log; \
	test $$rest -eq 0 && test $$fz -eq 0

test-long: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m long

bench: $(STAMP)
	$(BIN)/python -m bench
	$(BIN)/python -m bench.report --write

# The FGD paper's experiment (docs/paper.md): TRACES (all 17 pod lists, or a comma-separated
# subset) x 6 policies x SEEDS seeds, in JOBS processes; prints an ETA first, then one line per run.
SEEDS ?= 10
TRACES ?= all
JOBS ?= 2
paper: $(STAMP)
	@$(BIN)/python -c "import matplotlib" 2>/dev/null || $(BIN)/python -m pip install -q -e '.[paper]'
	$(BIN)/python -m bench.paper --seeds $(SEEDS) --traces $(TRACES) --jobs $(JOBS)

# Lint, formatting and types (mypy strict on every package).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy ledger scheduler api

# Before a commit, under a minute: lint and types, then the tests that need no PostgreSQL
# (tests/conftest.py marks the others `db`).
check: lint
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not db" --ignore=tests/test_lint.py

clean-db:
	rm -rf .podledger
