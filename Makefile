# mcpcore: `make run` serves the example server, `make test` runs the whole suite.
# Both create the virtualenv on first use and install everything the tests need.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000
STAMP  := $(VENV)/.installed

.PHONY: help install run run-stdio test test-fast lint format typecheck conformance bench bench-proxy bench-smoke budget soak fuzz docs lock clean

help:
	@echo "make run        serve examples/everything.py on http://$(HOST):$(PORT)/mcp (HOST/PORT overridable)"
	@echo "make test       run the whole suite under coverage, gated (creates .venv when missing)"
	@echo "make lint       ruff;  make typecheck: mypy --strict on mcpcore/"
	@echo "make conformance  official conformance suites against the example server"
	@echo "make bench      side-by-side benchmark (BENCH_ARGS='--duration 5');  make bench-smoke: a few seconds of it"
	@echo "make bench-proxy  a proxied tools/call against a direct one (PROXY_BENCH_ARGS='--rounds 5'), also run by make bench"
	@echo "make budget     instructions per request held to benchmarks/budget/budgets.toml (also part of make test)"
	@echo "make soak       10 minutes of sessions that come and go, RSS sampled (SOAK_ARGS='--minutes 10')"
	@echo "make docs       the documentation site with the API reference, in site/ (mkdocs --strict)"
	@echo "make lock       docker/requirements.lock again, with hashes (pip-compile)"

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,redis]'
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) -m mcpcore run examples.everything:app --host $(HOST) --port $(PORT)

run-stdio: $(STAMP)
	$(PY) -m mcpcore run examples.everything:app --transport stdio

# The whole suite under coverage, as two streams then the timing-bound tests alone (tests/tools/run_suite.py;
# MCPCORE_TEST_WORKERS=0 for one stream): fails under [tool.coverage.report] fail_under of pyproject.toml.
test: $(STAMP)
	$(PY) -m tests.tools.ensure_system
	$(PY) -m tests.tools.ensure_node
	$(PY) -m tests.tools.run_suite

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

conformance: $(STAMP)
	$(PY) -m tests.tools.ensure_node
	$(PY) -m pytest -q tests/conformance

bench: $(STAMP)
	$(PY) -m tests.tools.ensure_system
	$(PY) -m benchmarks.run $(BENCH_ARGS)
	$(PY) -m benchmarks.openapi_cost
	$(PY) -m benchmarks.proxy_bench $(PROXY_BENCH_ARGS)

bench-proxy: $(STAMP)
	$(PY) -m tests.tools.ensure_system
	$(PY) -m benchmarks.proxy_bench $(PROXY_BENCH_ARGS)

bench-smoke: $(STAMP)
	$(PY) -m tests.tools.ensure_system
	$(PY) -m benchmarks.run --smoke

budget: $(STAMP)
	$(PY) -m tests.tools.ensure_system
	$(PY) -m benchmarks.budget

soak: $(STAMP)
	$(PY) -m benchmarks.soak $(SOAK_ARGS)

fuzz: $(STAMP)
	MCPCORE_FUZZ_EXAMPLES=$${MCPCORE_FUZZ_EXAMPLES:-100000} $(PY) -m pytest -q -p no:randomly tests/test_hostile.py tests/tasks/test_bounds.py -k fuzzed --timeout 0

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --site-dir site

lock: $(STAMP)
	$(VENV)/bin/pip-compile --quiet --generate-hashes --strip-extras --extra redis --extra metrics \
		--no-emit-index-url --no-emit-find-links --output-file docker/requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache site
