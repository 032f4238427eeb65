"""Recordings made by the real instrumentation libraries, imported and scored by the CLI as a subprocess.

Each recording is the agent of tests/recorders/agent.py (two user turns, six model calls) talking to
the loopback server, recorded in its own process (tests/recorders/record.py) and exported as OTLP/JSON
lines, one OTLP protobuf request, and two length-delimited protobuf requests.

What the agent really did: lookup_order(42), lookup_order(42) again, refund(42, 9.5), lookup_order(7).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_eval.ingest.otel import otel_cases
from tests.builders import imported_cases
from tests.e2e.test_import_score_cli import ROOT, cli, only_report
from tests.recorders.agent import COMPLETION_TOKENS, PROMPT_TOKENS, SCRIPT, TURNS

SETUPS = {
    # name: (library, recorder options)
    "openai-v2, root and execute_tool spans": ("openai-v2", ["--root", "--tool-spans"]),
    "openai-v2, span only": ("openai-v2", []),
    "openai-v2, execute_tool spans, no root": ("openai-v2", ["--tool-spans"]),
    "openai-v2, content in log events": ("openai-v2", ["--root", "--content", "events"]),
    "openinference, plain": ("openinference", []),
    "openinference, agent and tool spans": ("openinference", ["--root", "--tool-spans"]),
}
# The recorded calls with the consecutive duplicate collapsed: the imported case does not require the mistake.
EXPECTED = [{"name": "lookup_order", "args": {"order_id": 42}},
            {"name": "refund", "args": {"order_id": 42, "amount": 9.5}},
            {"name": "lookup_order", "args": {"order_id": 7}}]


def record(loopback, tmp_path: Path, setup: str) -> Path:
    library, options = SETUPS[setup]
    server = loopback(list(SCRIPT))
    out = tmp_path / "recording"
    proc = subprocess.run([sys.executable, "-m", "tests.recorders.record", library, server.base_url, str(out),
                           *options], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert server.count == len(SCRIPT)
    return out


@pytest.mark.parametrize("setup", list(SETUPS))
def test_a_real_recording_imports_and_scores_as_what_the_agent_did(loopback, tmp_path, setup):
    rec = record(loopback, tmp_path, setup)
    logs = ["--logs", rec / "logs.jsonl"] if (rec / "logs.jsonl").exists() else []
    imported = cli("import", "otel", rec / "traces.jsonl", "--out", tmp_path / "cases.json", *logs, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "Traceback" not in imported.stderr
    (case,) = imported_cases(tmp_path / "cases.json")
    assert case["messages"] == TURNS  # both user turns, the system message dropped
    assert case["expected_tools"] == EXPECTED and case["trajectory"] == "unordered"
    assert [c["name"] for c in case["metadata"]["recorded_calls"]] == ["lookup_order"] * 2 + ["refund", "lookup_order"]
    assert case["metadata"]["recorded_replies"] == ["Refunded 9.50.", "Order 7 is in transit."]
    usage = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS}
    assert case["metadata"]["recorded_usage"] == usage

    # the protobuf exports of the same spans give the same case
    for name in ("traces.pb", "traces.pbd"):
        cases, bad, _ = otel_cases(rec / name, rec / "logs.jsonl" if logs else None)
        assert not bad and [c["expected_tools"] for c in cases] == [EXPECTED]

    out = tmp_path / "out"
    scored = cli("score", rec / "traces.jsonl", "--cases", tmp_path / "cases.json", "--output-dir", out,
                 "--no-html", *logs, cwd=tmp_path)
    assert scored.returncode == 0, scored.stdout + scored.stderr
    report = only_report(out)
    (run,) = report["cases"][0]["runs"]
    m = run["metrics"]
    # E = {lookup_order, refund, lookup_order}; A = {lookup_order x3, refund}: |E ∩ A| = 3
    assert m["tool_recall"] == 1.0  # 3/3
    assert m["tool_precision"] == 0.75  # 3/4
    assert m["step_efficiency"] == 0.75  # min(1, 3/4)
    # fields: order_id (42), order_id + amount (refund), order_id (7): 4 of 4 matched
    assert m["param_accuracy"] == 1.0
    assert m["has_loop"] is True  # lookup_order({"order_id": 42}) twice in a row
    assert (m["prompt_tokens"], m["completion_tokens"]) == (PROMPT_TOKENS, COMPLETION_TOKENS)  # 750, 75
    trace = run["trace"]
    assert [s["name"] for s in trace["steps"]] == ["lookup_order", "lookup_order", "refund", "lookup_order"]
    assert trace["replies"] == ["Refunded 9.50.", "Order 7 is in transit."]
    assert 0 < m["ttfa_s"] < m["latency_s"]
    if "--tool-spans" not in SETUPS[setup][1]:
        # no execute_tool span: the first call starts when the model call that asked for it ends
        first = trace["llm_calls"][0]
        assert m["ttfa_s"] == pytest.approx(first["t_start_s"] + first["latency_s"], abs=1e-6)


def test_a_pydantic_ai_run_keeps_final_result_as_the_frameworks_own_call(loopback, tmp_path):
    """pydantic-ai's own instrumentation (tests/recorders/pydantic_ai_agent.py): its structured answer
    comes through `final_result`, a tool of the framework's with no tool span: neither expected nor a step."""
    from tests.recorders import pydantic_ai_agent as pai

    server = loopback(list(pai.SCRIPT))
    rec = tmp_path / "recording"
    proc = subprocess.run([sys.executable, "-m", "tests.recorders.pydantic_ai_agent", server.base_url, str(rec)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    imported = cli("import", "otel", rec / "traces.jsonl", "--out", tmp_path / "cases.json", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    (case,) = imported_cases(tmp_path / "cases.json")
    assert case["query"] == pai.PROMPT
    assert case["expected_tools"] == EXPECTED[:2]  # lookup_order(42) once (collapsed), refund(42, 9.5)
    assert [c["name"] for c in case["metadata"]["recorded_calls"]] == ["lookup_order", "lookup_order", "refund"]
    assert case["metadata"]["framework_calls"] == [{"name": "final_result", "args": {"order_id": 42, "refunded": 9.5}}]
    assert case["metadata"]["recorded_usage"] == {"prompt_tokens": pai.PROMPT_TOKENS,
                                                  "completion_tokens": pai.COMPLETION_TOKENS}
    out = tmp_path / "out"
    scored = cli("score", rec / "traces.jsonl", "--cases", tmp_path / "cases.json", "--output-dir", out,
                 "--no-html", cwd=tmp_path)
    assert scored.returncode == 0, scored.stdout + scored.stderr
    (run,) = only_report(out)["cases"][0]["runs"]
    m = run["metrics"]
    assert [(s["name"], s["executed"]) for s in run["trace"]["steps"]] == [
        ("lookup_order", True), ("lookup_order", True), ("refund", True)]
    assert [c["name"] for c in run["trace"]["framework_calls"]] == ["final_result"]
    # E = {lookup_order(42), refund(42, 9.5)}; A = lookup_order(42) x2, refund (final_result is no step)
    assert m["tool_recall"] == 1.0  # 2/2
    assert m["tool_precision"] == pytest.approx(2 / 3)  # 2/3
    assert m["step_efficiency"] == pytest.approx(2 / 3)  # min(1, 2/3)
    assert (m["invalid_calls"], m["tool_errors"]) == (0, 0)
    assert (m["prompt_tokens"], m["completion_tokens"]) == (460, 46)  # 100+110+120+130, 10+11+12+13
