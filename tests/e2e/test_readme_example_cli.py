"""The README's example, as written: its two files saved in an empty folder, its three commands run
in-process against the loopback server standing in for the model."""
from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from tests.cli import run_cli
from tests.loopback import tool_then_text

ROOT = Path(__file__).resolve().parents[2]


def example() -> tuple[str, str, list[list[str]]]:
    """The example section's tools.py, case file and commands."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## An example"):text.index("## With a real model")]
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.S)
    tools = next(body for lang, body in blocks if lang == "python")
    cases = next(body for lang, body in blocks if lang == "json")
    commands = next(body for lang, body in blocks if lang == "")
    return tools, cases, [shlex.split(line, comments=True) for line in commands.splitlines() if line.strip()]


def test_the_readme_example_validates_runs_and_gates(loopback, tmp_path):
    tools, cases, commands = example()
    assert len(cases.splitlines()) + len(tools.splitlines()) + len(commands) <= 30
    (tmp_path / "tools.py").write_text(tools)
    (tmp_path / "cases.json").write_text(cases)
    srv = loopback(tool_then_text("get_order", {"order_id": "ORD_1"}, "Your order ORD_1 has shipped with DHL."))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=srv.base_url, COLUMNS="200", NO_COLOR="1",
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    results = []
    for words in commands:
        assert words[0] == "agent-eval"
        results.append(run_cli(*words[1:], cwd=tmp_path, env=env))
    validated, ran, gated = results
    assert validated.exit_code == 0, validated.stderr
    assert ran.exit_code == 0 and "1 passed" in " ".join(ran.stdout.split()), ran.stdout + ran.stderr
    assert gated.exit_code == 0, gated.stdout + gated.stderr
    assert (tmp_path / "ci" / "results.xml").read_text().startswith("<?xml")  # ci/ did not exist
    assert {r["model"] for r in srv.requests} == {"gpt-4o-mini"}
