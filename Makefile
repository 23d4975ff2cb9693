# Strom: two commands on a fresh Debian machine.
#   make run   set everything up and start a local cluster with console and dashboard
#   make test  set everything up and run the whole suite (control plane on PostgreSQL, the rest on SQLite)
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup lint bench bench-storage bench-lag bench-metrics bench-dashboard bench-spark bench-metadata bench-console \
	clean

# Reinstall only when the pins or the packaging change.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	@touch $@

setup: $(STAMP)
	@scripts/ensure_system_packages.sh run
	@$(BIN)/python manage.py migrate --noinput -v 0
	@$(BIN)/python manage.py ensure_admin

run: setup
	@$(BIN)/python scripts/run_local.py

test: $(STAMP)
	@scripts/ensure_system_packages.sh test
	@scripts/test.sh

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

# Benchmarks print ratios against peers measured in the same run (never timed unit tests).
bench-storage: $(STAMP)
	$(BIN)/python -m bench.storage

# The lag monitor under 2,000 groups x 20,000 partitions committing every 5 s (BENCH_LAG_* to scale).
bench-lag: $(STAMP)
	$(BIN)/python -m bench.lag

bench-spark: $(STAMP)
	$(BIN)/python -m bench.spark

bench-metadata: $(STAMP)
	$(BIN)/python -m bench.metadata

bench: $(STAMP)
	@scripts/ensure_system_packages.sh test
	$(BIN)/python -m bench.clients
	$(BIN)/python -m bench.metrics_cost
	$(BIN)/python -m bench.dashboard

bench-metrics: $(STAMP)
	$(BIN)/python -m bench.metrics_cost

bench-dashboard: $(STAMP)
	@scripts/ensure_system_packages.sh test
	$(BIN)/python -m bench.dashboard

bench-console: $(STAMP)
	$(BIN)/python -m bench.console

clean:
	rm -rf $(VENV) var *.egg-info
