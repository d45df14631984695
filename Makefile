VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: install serve test lint types check bench eval

$(VENV)/bin/lithos: pyproject.toml
	python3 -m venv $(VENV) && $(VENV)/bin/pip install -q -e ".[dev]"
	touch $@

install: $(VENV)/bin/lithos

serve: install
	$(VENV)/bin/lithos serve

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

types: install
	$(VENV)/bin/mypy

check: lint types test

# Benchmarks write bench/out/*.json, then bench/report.py rewrites bench/RESULTS.md and the plots.
# bench/setup.sh installs the wrk load generator that bench/load.py drives.
bench: install
	bench/setup.sh
	FASTMCP_CHECK_FOR_UPDATES=off $(PY) bench/perf.py $(BENCH_ARGS)
	FASTMCP_CHECK_FOR_UPDATES=off $(PY) bench/load.py $(LOAD_ARGS)
	$(PY) bench/vector_compact.py $(VECTOR_ARGS)
	FASTMCP_CHECK_FOR_UPDATES=off $(PY) bench/ingest.py $(INGEST_ARGS)
	FASTMCP_CHECK_FOR_UPDATES=off $(PY) bench/write_latency.py $(WRITE_ARGS)
	FASTMCP_CHECK_FOR_UPDATES=off $(PY) bench/scale.py $(SCALE_ARGS)
	FASTMCP_CHECK_FOR_UPDATES=off $(PY) bench/vector_scale.py $(VECTOR_SCALE_ARGS)
	$(PY) bench/report.py

eval: install
	FASTMCP_CHECK_FOR_UPDATES=off $(PY) bench/eval.py $(EVAL_ARGS)
	$(PY) bench/report.py
