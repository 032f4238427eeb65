# Quick start: `make demo` then `make test`. Both create .venv when it is missing.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The demo agent is honest and fails some cases, so exit 1 (failed cases) is a normal outcome here.
demo: $(STAMP)
	@rc=0; $(VENV)/bin/agent-eval run --cases cases/test_cases.json --no-judge || rc=$$?; \
	  echo "agent-eval exited $$rc (0 = all passed, 1 = some cases failed, 2 = error)"; test $$rc -le 1
	@# The same shop served by an MCP server (cases/mcp_server.py), one server process per run.
	@rc=0; $(VENV)/bin/agent-eval run --cases cases/mcp_cases.json --no-judge || rc=$$?; \
	  echo "agent-eval exited $$rc (0 = all passed, 1 = some cases failed, 2 = error)"; test $$rc -le 1

# pytest runs on every core (pytest-xdist), at most 4 workers; `make test JOBS=1` runs in one process.
JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)

test: $(STAMP)
	$(PY) -m ruff check agent_eval tests bench cases
	$(PY) -m mypy agent_eval
	$(PY) -m pytest -n $(JOBS) --dist worksteal --durations=15

# The unit tests only (in-process: no CLI subprocess, no browser): the quick loop while editing.
test-fast: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist worksteal -m unit

lint: $(STAMP)
	$(PY) -m ruff check agent_eval tests bench

bench: $(STAMP)
	$(PY) bench/overhead.py

clean:
	rm -rf $(VENV) reports/*.json reports/*.jsonl reports/*.html
