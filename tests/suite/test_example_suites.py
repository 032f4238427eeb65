"""The example suites: cases/test_cases.json fits any agent, a real model's included; the checks that only
the rule-based demo agent can meet (cards, final_agent) live in cases/demo_agent_cases.json."""
from __future__ import annotations

from pathlib import Path

import orjson

from tests.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "cases"
# The built-in `openai` agent (and any agent built on a framework) returns an answer, never cards or a
# final_agent, so these checks can only pass for a Python agent that fills them, like the demo agent.
DEMO_ONLY = {"has_card", "any_card", "no_card", "final_agent"}


def cases_of(name: str) -> list[dict]:
    cases: list[dict] = orjson.loads((CASES / name).read_bytes())["cases"]
    return cases


def test_the_example_suite_asks_nothing_a_model_cannot_give():
    held = {c["id"]: sorted(DEMO_ONLY & set(c.get("expect") or {})) for c in cases_of("test_cases.json")}
    assert {cid: keys for cid, keys in held.items() if keys} == {}
    assert len(held) == 23  # every case is still there; only the demo agent's checks moved out


def test_the_demo_agents_suite_holds_the_cards_and_routing_and_make_demo_runs_it():
    demo = cases_of("demo_agent_cases.json")
    assert demo and all(set(c["expect"]) <= DEMO_ONLY for c in demo)
    assert {c["id"] for c in demo} <= {c["id"] for c in cases_of("test_cases.json")}  # the same users asked
    assert "cases/demo_agent_cases.json" in (ROOT / "Makefile").read_text()


def test_the_demo_agent_meets_its_own_reply_format_but_for_its_keyword_blind_spot(tmp_path):
    done = run_cli("run", "--cases", CASES / "demo_agent_cases.json", "--output-dir", tmp_path, "--no-html", "-q")
    assert done.exit_code == 1, done.stdout + done.stderr
    (path,) = tmp_path.glob("*.json")
    statuses = {c["id"]: c["status"] for c in orjson.loads(path.read_bytes())["cases"]}
    # 환불 ("refund") in a question about the refund policy sends the bot to its refund flow
    assert {cid for cid, status in statuses.items() if status != "passed"} == {"faq-refund-policy-ko"}
    assert run_cli("validate", "--cases", CASES / "test_cases.json").exit_code == 0
