# Strom: two commands on a fresh Debian machine.
#   make run   set everything up and start a local cluster with console and dashboard
#   make test  set everything up and run the whole suite (control plane on PostgreSQL, the rest on SQLite)
SHELL := /bin/bash
# The interpreter the venv is made from: the distribution's own /usr/bin/python3.11 where it can make a venv (Debian
# and Ubuntu build it with profile-guided optimisation and LTO, libpython linked in; Strom's Python runs 10-20 % faster
# on it than on a plain `--enable-shared` build such as pyenv's default, README "The interpreter"), else the first
# python3.11 or python3 on PATH. `make PYTHON=...` chooses another; the venv is made again when the choice changes.
PYTHON ?= $(or $(shell /usr/bin/python3.11 -c 'import ensurepip' 2>/dev/null && echo /usr/bin/python3.11),\
	$(shell command -v python3.11 || command -v python3))
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: FORCE run test setup lint fuzz bench bench-storage bench-lag bench-metrics bench-dashboard bench-spark bench-metadata \
	bench-metadata-answer bench-metadata-failover bench-reassignment bench-console bench-latency clean

# The real path of $(PYTHON)'s executable, rewritten only when it changes, so that the venv is then made again.
INTERPRETER := $(VENV)/.interpreter
$(INTERPRETER): FORCE
	@mkdir -p $(VENV)
	@exe="$$($(PYTHON) -c 'import os, sys; print(os.path.realpath(sys.executable))')" && \
		{ [ "$$(cat $@ 2>/dev/null)" = "$$exe" ] || echo "$$exe" > $@; }

# Reinstall only when the pins, the packaging or the interpreter change.
$(STAMP): requirements.txt pyproject.toml $(INTERPRETER)
	@grep -qxF "executable = $$(cat $(INTERPRETER))" $(VENV)/pyvenv.cfg 2>/dev/null || { \
		exe="$$(cat $(INTERPRETER))" && $(PYTHON) -m venv --clear $(VENV) && echo "$$exe" > $(INTERPRETER); }
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

# Every fuzz target under atheris for FUZZ_SECONDS each (new inputs kept in var/fuzz/, crashes in var/fuzz/crashes/).
FUZZ_SECONDS ?= 600
fuzz: $(STAMP)
	@mkdir -p var/fuzz
	@status=0; for target in $$($(BIN)/python -c "from tests.fuzz.targets import TARGETS; print(*TARGETS)"); do \
		echo "== $$target ($(FUZZ_SECONDS) s, log var/fuzz/$$target.log)"; \
		$(BIN)/python -m tests.fuzz.run $$target --seconds $(FUZZ_SECONDS) > var/fuzz/$$target.log 2>&1 \
			|| { tail -30 var/fuzz/$$target.log; status=1; }; \
		grep -E "DONE|stat::number_of_executed_units" var/fuzz/$$target.log; \
	done; exit $$status

# Benchmarks print ratios against peers measured in the same run (never timed unit tests).
bench-storage: $(STAMP)
	$(BIN)/python -m bench.storage

# The lag monitor under 2,000 groups x 20,000 partitions committing every 5 s (BENCH_LAG_* to scale).
bench-lag: $(STAMP)
	$(BIN)/python -m bench.lag

bench-spark: $(STAMP)
	$(BIN)/python -m bench.spark

# Produce latency at fixed rates (acks=1/all, make run's cluster and a standalone broker) beside the loopback floor.
bench-latency: $(STAMP)
	$(BIN)/python -m bench.latency

bench-metadata: $(STAMP)
	$(BIN)/python -m bench.metadata

# A client's all-topics Metadata answer right after a change: every topic entry rebuilt vs the changed one only.
bench-metadata-answer: $(STAMP)
	$(BIN)/python -m bench.metadata_answer

# A surviving broker catching up with the fence of the broker leading a third of 100,000 partitions: body, stages,
# the longest event-loop step.
bench-metadata-failover: $(STAMP)
	$(BIN)/python -m bench.metadata_failover

# Issue 13: balance proposals vs Kafka's --generate (300 partitions RF 3: expand 3 -> 4 brokers, decommission).
bench-reassignment: $(STAMP)
	$(BIN)/python -m bench.reassignment_plan

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
