# Relevance Judge: `make run` serves the app with demo data, `make setup` / `make serve` an
# empty install without it, `make test` runs the suite.
# Both set up everything they need (a .venv, the embedded PostgreSQL) on a fresh clone.

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=
# Settings default DEBUG off (production); the development targets turn it on.
export DEBUG ?= 1
# glibc keeps freed memory for the next computation, as the Dockerfile sets it.
export MALLOC_MMAP_THRESHOLD_ ?= 33554432
export MALLOC_TRIM_THRESHOLD_ ?= 268435456

.PHONY: run setup serve test e2e bench lint format db-stop clean

$(STAMP): pyproject.toml scripts/find-python
	@python=$$(scripts/find-python) || exit 1; \
	  [ -x $(PY) ] || { echo "Creating $(VENV) with $$python"; "$$python" -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,dev]"
	@touch $(STAMP)

$(VENV)/.installed-bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[test,dev,bench]"
	@touch $@

# An empty install: the .venv, the embedded PostgreSQL and the tables, no demo project.
setup: $(STAMP)
	$(PY) manage.py migrate --no-input

# Serves what the database holds, without loading the demo (after `make setup`).
serve: setup
	@echo "Serving on http://$(HOST):$(PORT)/ (Ctrl-C stops it)"
	$(PY) manage.py runserver $(HOST):$(PORT)

run: setup
	$(PY) manage.py load_demo
	@echo "Serving on http://$(HOST):$(PORT)/ (Ctrl-C stops it)"
	$(PY) manage.py runserver $(HOST):$(PORT)

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

e2e: $(STAMP)
	$(PY) -m pytest -m e2e $(PYTEST_ARGS)

# Benchmarks hold what a user feels to budgets (bench_budgets: pages now and as of a past
# moment, a list's recompute after a grade, a grade with its refresh; bench_queue: the
# next pair; bench_export: a 1M-row import), each printed with its median and p95, and
# the trec_eval-style command to its peers; bench_engines: a 1,000-query capture from a
# local engine against the engine's own time. The Django ones use the development
# database and build a generate_load project if missing (10k queries, 1M judgements:
# about a minute; bench_generate_load). bench_scaling builds three more projects (10k,
# 100k and 1M queries x 10 hits, 100k judgements each: about 13 minutes and 6 GB the
# first time) and prints how a grade's cost grows; bench_queue_to_the_end has 20 raters
# grade a 5k-query project's queue to the end (about 3.5 minutes), failing unless no
# pair is left short and derived_state --check is clean. Each benchmark records its
# figures in .bench/summary.tsv, and the last step prints them all (tests/bench/summary.py).
bench: $(VENV)/.installed-bench
	$(PY) manage.py migrate --no-input
	$(PY) tests/bench/summary.py --reset
	$(PY) tests/bench/bench_metrics_core.py
	$(PY) tests/bench/bench_queue.py
	$(PY) tests/bench/bench_queue_to_the_end.py
	$(PY) tests/bench/bench_new_list.py
	$(PY) tests/bench/bench_budgets.py
	$(PY) tests/bench/bench_dashboards.py
	$(PY) tests/bench/bench_export.py
	$(PY) tests/bench/bench_searchlogs.py
	$(PY) tests/bench/bench_engines.py
	$(PY) tests/bench/bench_upload.py
	$(PY) tests/bench/bench_delete.py
	$(PY) tests/bench/bench_grading_load.py
	$(PY) tests/bench/bench_api.py
	$(PY) tests/bench/bench_scaling.py
	$(PY) tests/bench/bench_generate_load.py
	$(PY) tests/bench/bench_freshness.py
	$(PY) tests/bench/summary.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

db-stop:
	@if [ -f .pgdata/postmaster.pid ]; then \
	  $(PY) -c "import pgserver, pathlib; pgserver.pg_ctl(['-w', 'stop'], pgdata=pathlib.Path('.pgdata').resolve(), user='pgserver' if __import__('os').geteuid() == 0 else None)"; \
	else echo "The embedded PostgreSQL is not running."; fi

clean: db-stop
	rm -rf $(VENV) .pgdata staticfiles
