# Each target bootstraps .venv on a fresh machine; when already installed it skips that step.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test bench lint clean-db

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip
	@$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/podledger demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python -m bench
	$(BIN)/python -m bench.report --write

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy ledger scheduler

clean-db:
	rm -rf .podledger
