"""Recordings made by real libraries too heavy to be dev dependencies, committed under
tests/fixtures/recordings/ (tests/recorders/regenerate.py makes them again; each folder's versions.json
names the library, its version and the options), imported and scored by the CLI as a subprocess.

- The plain agent (tests/recorders/agent.py) under OpenLLMetry and logfire's `instrument_openai`
  (version 1 and 2): two user turns; lookup_order(42), lookup_order(42) again, refund(42, 9.5), then
  lookup_order(7); six model calls.
- An Agents SDK agent (tests/recorders/agents_sdk.py) under OpenInference and logfire: the same calls,
  plus a handoff from Support to Refunds (`transfer_to_refunds`, the framework's own tool); seven calls.
"""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from agent_eval.ingest.otel import otel_cases
from tests.e2e.test_import_score_cli import ROOT, cli, only_report
from tests.recorders import agent, agents_sdk

RECORDINGS = ROOT / "tests" / "fixtures" / "recordings"
# The recorded calls with the consecutive duplicate collapsed: the imported case does not require the mistake.
EXPECTED = [{"name": "lookup_order", "args": {"order_id": 42}},
            {"name": "refund", "args": {"order_id": 42, "amount": 9.5}},
            {"name": "lookup_order", "args": {"order_id": 7}}]
PLAIN = (agent.PROMPT_TOKENS, agent.COMPLETION_TOKENS)  # 750, 75
SDK = (agents_sdk.PROMPT_TOKENS, agents_sdk.COMPLETION_TOKENS)  # 865, 80
# folder: (tokens, the framework's own calls)
SETUPS = {
    "openllmetry": (PLAIN, []),
    "openllmetry-root-tool-spans": (PLAIN, []),
    "logfire-v1": (PLAIN, []),
    "logfire-v2": (PLAIN, []),
    "logfire-v2-root": (PLAIN, []),
    "agents-sdk-openinference": (SDK, ["transfer_to_refunds"]),
    "agents-sdk-logfire": (SDK, ["transfer_to_refunds"]),
}


def import_and_score(tmp_path: Path, traces: Path) -> tuple[dict, dict]:
    """`import otel` then `score` of one recording: (the one case, the one scored run)."""
    imported = cli("import", "otel", traces, "--out", tmp_path / "cases.json", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "Traceback" not in imported.stderr and "could not be" not in imported.stderr
    (case,) = orjson.loads((tmp_path / "cases.json").read_bytes())
    out = tmp_path / "out"
    scored = cli("score", traces, "--cases", tmp_path / "cases.json", "--output-dir", out, "--no-html", cwd=tmp_path)
    assert scored.returncode == 0, scored.stdout + scored.stderr
    (run,) = only_report(out)["cases"][0]["runs"]
    return case, run


@pytest.mark.parametrize("name", list(SETUPS))
def test_a_committed_recording_imports_and_scores_as_what_the_agent_did(tmp_path, name):
    (prompt, completion), framework = SETUPS[name]
    folder = RECORDINGS / name
    assert orjson.loads((folder / "versions.json").read_bytes())["versions"]  # what made it is said
    case, run = import_and_score(tmp_path, folder / "traces.jsonl")
    assert case["messages"] == agent.TURNS == agents_sdk.TURNS  # both user turns, system messages dropped
    assert case["expected_tools"] == EXPECTED and case["trajectory"] == "unordered"
    assert [c["name"] for c in case["metadata"]["recorded_calls"]] == ["lookup_order"] * 2 + ["refund", "lookup_order"]
    assert all(c.get("executed") is not False for c in case["metadata"]["recorded_calls"])
    assert [c["name"] for c in case["metadata"].get("framework_calls", [])] == framework
    assert case["metadata"]["recorded_replies"] == ["Refunded 9.50.", "Order 7 is in transit."]
    assert case["metadata"]["recorded_usage"] == {"prompt_tokens": prompt, "completion_tokens": completion}
    for binary in ("traces.pb", "traces.pbd"):  # the protobuf exports of the same spans give the same case
        if (folder / binary).exists():
            cases, bad, _ = otel_cases(folder / binary)
            assert not bad and [c["expected_tools"] for c in cases] == [EXPECTED]

    m = run["metrics"]
    # E = {lookup_order(42), refund(42, 9.5), lookup_order(7)}; A = the four calls the agent made (the
    # handoff is the framework's, not a step): |E ∩ A| = 3
    assert m["tool_recall"] == 1.0  # 3/3
    assert m["tool_precision"] == 0.75  # 3/4
    assert m["step_efficiency"] == 0.75  # min(1, 3/4)
    assert m["param_accuracy"] == 1.0  # order_id; order_id + amount; order_id: 4 of 4 fields
    assert m["has_loop"] is True  # lookup_order({"order_id": 42}) twice in a row
    assert (m["tool_errors"], m["invalid_calls"]) == (0, 0)
    assert (m["prompt_tokens"], m["completion_tokens"]) == (prompt, completion)
    trace = run["trace"]
    assert [(s["name"], s["executed"]) for s in trace["steps"]] == [
        ("lookup_order", True), ("lookup_order", True), ("refund", True), ("lookup_order", True)]
    assert [c["name"] for c in trace.get("framework_calls") or []] == framework
    assert trace["replies"] == ["Refunded 9.50.", "Order 7 is in transit."]
    assert 0 < m["ttfa_s"] < m["latency_s"]
