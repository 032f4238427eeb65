"""The wheel a user installs: built from the sources, installed into a new venv outside the repository
(tests/e2e/installed.py says how, and why it is cheap), then `agent-eval --version`, `validate` and `run`
on a suite written in a temporary folder. This test earns its subprocesses: the installed process is what
is under test.
"""
from __future__ import annotations

import os
import subprocess
import tomllib
import zipfile
from pathlib import Path

import orjson

from tests.e2e.installed import AGENT, ROOT, TOOLS, BaseInstall

DIST = "agent-eval-trials"


def test_the_wheel_installs_into_a_new_venv_and_runs_a_suite_outside_the_repository(base_install: BaseInstall,
                                                                                  tmp_path: Path):
    wheel, meta, venv = base_install.wheel, base_install.meta, base_install.venv
    with zipfile.ZipFile(wheel) as zf:
        files = zf.namelist()
    assert {"agent_eval/report/assets/report.js", "agent_eval/report/assets/report.html",
            "agent_eval/report/assets/report.css", "agent_eval/cli.py"} <= set(files)
    assert not [f for f in files if f.startswith("tests/") or "/tests/" in f or f.startswith("cases/")]
    assert meta["Name"] == DIST
    assert sorted(base_install.runtime) == sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                                                  ["dependencies"])
    python = venv / "bin" / "python"

    work = tmp_path / "work"  # the user's repository: a suite of their own, no agent-eval source
    work.mkdir()
    (work / "tools.py").write_text(TOOLS)
    (work / "bank_agent.py").write_text(AGENT)
    suite = {"name": "bank", "tools": "tools.py", "agent": "bank_agent.py:agent",
             "initial_env": {"balances": {"alice": 42}}}
    cases = [{"id": "balance", "query": "How much does Alice have?", "expected_tools": [{"name": "get_balance"}],
              "expect": {"contains": "42 euros"}}]
    (work / "cases.json").write_bytes(orjson.dumps({"suite": suite, "cases": cases}))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "AGENT_EVAL_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", NO_COLOR="1", COLUMNS="200")

    def sh(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), cwd=work, env=env, capture_output=True, text=True, timeout=300)

    where = sh(str(python), "-c", "import agent_eval, importlib.util as u; "
               "print(agent_eval.__file__); print(u.find_spec('mcp'), u.find_spec('pytest'))")
    assert where.returncode == 0, where.stderr
    assert where.stdout.splitlines() == [f"{next((venv / 'lib').glob('python3*/site-packages'))}/agent_eval/"
                                         "__init__.py", "None None"]
    agent_eval = str(venv / "bin" / "agent-eval")
    version = sh(agent_eval, "--version")
    assert (version.returncode, version.stdout) == (0, f"agent-eval {meta['Version']}\n")
    valid = sh(agent_eval, "validate", "--cases", "cases.json")
    assert valid.returncode == 0, valid.stdout + valid.stderr
    ran = sh(agent_eval, "run", "--cases", "cases.json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (report,) = (work / "reports").glob("*.json")
    assert orjson.loads(report.read_bytes())["summary"]["cases_passed"] == 1
    page = report.with_suffix(".html").read_text()
    assert "balance" in page and "<script" in page  # the page was drawn from the wheel's assets
