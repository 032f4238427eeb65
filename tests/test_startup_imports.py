"""Nothing is imported before it is used: what a fresh interpreter holds after starting the CLI.

Each test is a subprocess (what a fresh process imports is the point). The times are in bench/startup.py.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.builders import ROOT, clean_env

pytestmark = pytest.mark.e2e  # fresh interpreters: out of `make test-fast`

HEAVY = ("numpy", "openai", "jsonschema", "aiohttp", "httpx2", "pydantic", "sqlite3", "mcp", "ray", "langchain",
         "pydantic_ai", "agents", "opentelemetry", "playwright", "genai_prices", "regex", "rich.table")

SHOW = '''
import sys
from agent_eval.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("\\nLOADED " + " ".join(m for m in {heavy!r} if m in sys.modules))
'''


def loaded_after(*args: str, heavy: tuple[str, ...] = HEAVY) -> set[str]:
    """The `heavy` modules a fresh interpreter holds once `agent-eval ARGS...` has run."""
    done = subprocess.run([sys.executable, "-c", SHOW.format(heavy=heavy), *args], capture_output=True, text=True,
                          cwd=ROOT, env=clean_env(), timeout=120)
    line = done.stdout.rsplit("LOADED", 1)[1]
    return set(line.split())


def test_importing_the_cli_imports_no_heavy_module() -> None:
    done = subprocess.run([sys.executable, "-c", f"import sys, agent_eval.cli; "
                           f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"],
                          capture_output=True, text=True, cwd=ROOT, env=clean_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []


def test_help_and_version_import_no_heavy_module_but_the_help_table() -> None:
    # typer's help is drawn with rich's tables. The plugin scan imports importlib.metadata only when a
    # distribution names agent_eval.plugins, and none of this venv's does (tests/test_plugins.py makes one).
    assert loaded_after("--help", heavy=(*HEAVY, "importlib.metadata")) <= {"rich.table"}
    assert loaded_after("--version") == set()


def test_validate_imports_what_checking_a_case_file_uses_and_no_more() -> None:
    # The demo suite's tools are checked against their JSON schemas (jsonschema, pydantic); its matchers
    # compile patterns (regex). Nothing runs: no statistics, no LLM client, no HTTP, no history.
    loaded = loaded_after("validate", "--cases", str(ROOT / "cases" / "test_cases.json"))
    assert loaded <= {"jsonschema", "pydantic", "regex"}, loaded
