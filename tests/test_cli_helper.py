"""tests/cli.py: the CLI called in-process answers as the process does, and leaves nothing behind."""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tests.builders import ROOT, clean_env, write_suite
from tests.cli import run_cli, run_cli_process

PLUGIN = '''
from agent_eval.report.outputs import OUTPUTS, Output
from agent_eval.redaction import remember_secret

OUTPUTS.append(Output("Marker", lambda cfg, report_path: report_path.with_suffix(".marker"), lambda job: None))
remember_secret("plugin-secret-0123456789")
'''
TOOLS = '''
from agent_eval import tool

FLAVOUR = "{flavour}"


@tool
def lookup(key: str, env: dict) -> str:
    """Look a key up."""
    return FLAVOUR
'''


@pytest.mark.e2e  # starts the CLI as a subprocess
def test_same_answer_in_process_and_as_a_subprocess(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"cases": [{"id": "a"}]}')
    inside = run_cli("validate", "--cases", bad, cwd=tmp_path)
    outside = run_cli_process("validate", "--cases", bad, cwd=tmp_path)
    assert (inside.exit_code, inside.stdout, inside.stderr) == (outside.exit_code, outside.stdout, outside.stderr)
    assert inside.exit_code == inside.returncode == 2 and "bad.json" in inside.stderr


def test_the_process_state_is_put_back(tmp_path: Path) -> None:
    import agent_eval.redaction as redaction
    from agent_eval import cli
    from agent_eval.report.outputs import OUTPUTS

    (tmp_path / "plugin.py").write_text(PLUGIN)
    environ, cwd, path, outputs = dict(os.environ), os.getcwd(), list(sys.path), list(OUTPUTS)
    known, consoles = set(redaction._KNOWN), (cli.console, cli.err_console)
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    done = run_cli("validate", "--cases", ROOT / "cases" / "test_cases.json", cwd=tmp_path,
                   env=clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "plugin.py"), AGENT_EVAL_ONLY_HERE="1"))
    assert done.exit_code == 0, done.stderr
    assert "valid" in done.stdout
    assert dict(os.environ) == environ and os.getcwd() == cwd and sys.path == path
    assert outputs == OUTPUTS and "plugin-secret-0123456789" not in redaction._KNOWN and known == redaction._KNOWN
    assert (cli.console, cli.err_console) == consoles
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
    assert not [name for name, m in sys.modules.items() if str(getattr(m, "__file__", "")).startswith(str(tmp_path))]


def test_a_user_module_of_the_same_name_is_imported_afresh(tmp_path: Path) -> None:
    """Two suites whose tools modules share a dotted name: each call sees its own, as two processes would."""
    answers = []
    for flavour in ("first", "second"):
        folder = tmp_path / flavour
        cases = write_suite(folder, [{"id": "c", "query": "q", "expect": {"contains": flavour}}],
                            {"tools": "shop_tools"}, files={"shop_tools.py": TOOLS.format(flavour=flavour)})
        agent = folder / "agent.py"
        agent.write_text("def agent(task):\n    return task.call_tool('lookup', key='k')\n")
        done = run_cli("run", "--cases", cases, "--agent", f"{agent}:agent", "--output-dir", folder / "out",
                       "--no-html", cwd=folder)
        assert done.exit_code == 0, done.stdout + done.stderr
        answers.append((folder / "out").glob("*.json").__next__().read_text())
    assert '"first"' in answers[0] and '"second"' in answers[1]


def test_an_escaping_exception_is_a_traceback_and_exit_1(tmp_path: Path, monkeypatch) -> None:
    from agent_eval.commands import validate

    def broken(*args: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(validate, "validate_command", broken)
    done = run_cli("validate", cwd=tmp_path)
    assert done.exit_code == 1 and "Traceback" in done.stderr and "RuntimeError: a bug" in done.stderr


def test_stdin_is_given(tmp_path: Path) -> None:
    done = run_cli("label", tmp_path / "missing.json", input="p\n", cwd=tmp_path)
    assert done.exit_code == 2 and "missing.json" in done.stderr


@pytest.mark.e2e
def test_run_cli_process_is_the_installed_script() -> None:
    done = run_cli_process("--help")
    assert done.exit_code == 0 and "agent-eval" in done.stdout
