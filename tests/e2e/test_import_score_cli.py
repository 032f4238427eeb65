"""`agent-eval import` and `agent-eval score` end to end, in-process (docs/import-and-score.md)."""
from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from tests.cli import CliResult, run_cli
from tests.otlp_gen import (Trace, assistant, calls, export_request, jsonl, oa_assistant, oa_user, tool_result,
                            user)

ROOT = Path(__file__).resolve().parents[2]

TID_A = "aaaa0000000000000000000000000001"
TID_B = "bbbb0000000000000000000000000002"
TID_C = "cccc0000000000000000000000000003"
TID_E = "eeee0000000000000000000000000005"
TID_F = "ffff0000000000000000000000000006"

TOOLS = '''
from agent_eval import tool


@tool
def lookup_order(order_id: int) -> str:
    """Look an order up."""
    return "paid"


@tool
def refund(order_id: int, amount: float) -> str:
    """Refund an order."""
    return "ok"


@tool
def search(q: str) -> list:
    """Search the catalogue."""
    return []
'''


def cli(*args, cwd=None, env=None) -> CliResult:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    full.update(COLUMNS="200", NO_COLOR="1", **(env or {}))
    if cwd is not None:  # else this pytest process's own cache (tests/conftest.py), never one in the repository
        full.setdefault("XDG_CACHE_HOME", str(Path(cwd) / ".cache"))
    return run_cli(*args, cwd=cwd or ROOT, env=full, timeout=120)


def flat(text: str) -> str:
    return " ".join(text.split())


def only_report(out: Path) -> dict:
    (path,) = out.glob("*.json")
    return orjson.loads(path.read_bytes())


def traces_file(tmp_path: Path) -> Path:
    """Five traces: A (a loop, a wrong amount), B (older convention, no tools), C (a tool error, base64 ids),
    E (matches no case), F (its case has only an env check)."""
    a = Trace(TID_A)
    agent = a.agent(0, 1000, usage=(999, 999))
    a.chat(10, 100, [user("Refund order 42")], [calls(("c1", "lookup_order", {"order_id": 42}))],
           usage=(100, 20), parent=agent)
    a.tool(110, 150, "lookup_order", "c1", arguments={"order_id": 42}, parent=agent)
    a.tool(150, 200, "lookup_order", "c1b", arguments={"order_id": 42}, parent=agent)
    a.chat(210, 300, [user("Refund order 42"), tool_result("c1", "paid")],
           [calls(("c2", "refund", {"order_id": 42, "amount": 10}))], usage=(150, 30), parent=agent)
    a.tool(310, 400, "refund", "c2", parent=agent)
    a.chat(410, 900, [user("Refund order 42")], [assistant("Refunded.")], usage=(200, 10), parent=agent)
    b = Trace(TID_B, offset_ms=5000)
    b.chat(0, 50, [oa_user("hi")], [oa_assistant("hello there")], usage=(5, 2), legacy=True)
    c = Trace(TID_C, offset_ms=8000)
    c.chat(0, 40, [user("blue shoes?")], [calls(("s1", "search", {"q": "blue shoes"}))], model="gpt-mini",
           usage=(30, 5), structured=True)
    c.tool(50, 150, "search", "s1", arguments={"q": "blue shoes"}, error_type="TimeoutError")
    c.chat(160, 400, [user("blue shoes?")], [assistant("None in stock.")], model="gpt-mini", usage=(40, 8))
    e = Trace(TID_E, offset_ms=9000)
    e.chat(0, 10, [user("unrelated")], [assistant("ok")])
    f = Trace(TID_F, offset_ms=9500)
    f.chat(0, 10, [user("set status")], [assistant("done")])
    spans = a.spans + b.spans + e.spans + f.spans
    path = tmp_path / "traces.jsonl"
    path.write_bytes(jsonl([export_request(list(reversed(spans))), export_request(c.spans, "base64")]))
    return path


def case_file(tmp_path: Path, **suite) -> Path:
    cases = [
        {"id": "refund", "query": "Refund order 42", "metadata": {"trace_id": TID_A.upper()},
         "expected_tools": [{"name": "lookup_order", "args": {"order_id": 42}},
                            {"name": "refund", "args": {"order_id": 42, "amount": 9.5}}],
         "trajectory": "unordered"},
        {"id": f"trace-{TID_B[:12]}", "query": "hi", "expected_tools": [], "trajectory": "subset",
         "expect": {"icontains": "hello"}},
        {"id": "search", "query": "blue shoes?", "metadata": {"trace_id": TID_C},
         "expected_tools": [{"name": "search", "args": {"q": {"$regex": "blue.*"}}}], "trajectory": "unordered",
         "expected_env_check": {"path": ["orders", "1", "status"], "equals": "refunded"}},
        {"id": "no-trace", "query": "x", "expect": {"contains": "x"}},
        {"id": "env-only", "query": "set status", "metadata": {"trace_id": TID_F},
         "expected_env_check": {"path": ["status"], "equals": "done"}},
    ]
    block = {"name": "prod", "pricing": {"gpt-test": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
                                         "gpt-mini": {"input_per_mtok": 0.5, "output_per_mtok": 1.0}}, **suite}
    path = tmp_path / "cases.json"
    path.write_bytes(orjson.dumps({"suite": block, "cases": cases}))
    return path


def test_score_gives_the_metrics_a_run_would_give(tmp_path):
    out = tmp_path / "out"
    result = cli("score", traces_file(tmp_path), "--cases", case_file(tmp_path), "--output-dir", out,
                 "--junit", tmp_path / "junit.xml", "--markdown", tmp_path / "summary.md", "-v", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr  # case "refund" failed its trajectory
    assert "Failed checks refund #0 failed - trajectory:" in flat(result.stdout)  # -v, as for run
    assert "1 case had no trace" in flat(result.stdout)
    assert "Skipped for want of a recorded environment: env:orders.1.status:equals (1 run)" in flat(result.stdout)
    assert f"trace {TID_E}" in flat(result.stderr) and "match no case" in flat(result.stderr)
    report = only_report(out)
    by_id = {c["id"]: c for c in report["cases"]}
    assert set(by_id) == {"refund", f"trace-{TID_B[:12]}", "search", "env-only"}  # "no-trace" left out
    assert by_id["env-only"]["status"] == "skipped"
    assert by_id["env-only"]["skip_reason"] == "no recorded environment"

    a = by_id["refund"]["runs"][0]["metrics"]
    # E = {lookup_order, refund}; A = {lookup_order, lookup_order, refund}: |E ∩ A| = 2
    assert a["tool_recall"] == 1.0  # 2/2
    assert a["tool_precision"] == pytest.approx(2 / 3)  # 2/3
    # fields: lookup_order.order_id (matched), refund.order_id (matched), refund.amount (10 != 9.5): 2/3
    assert a["param_accuracy"] == pytest.approx(2 / 3)
    assert a["step_efficiency"] == pytest.approx(2 / 3)  # min(1, 2/3)
    assert a["has_loop"] is True  # lookup_order({"order_id": 42}) twice in a row
    assert a["success"] == 0
    assert (a["prompt_tokens"], a["completion_tokens"]) == (450, 60)  # 100+150+200, 20+30+10; not the agent's 999
    assert a["latency_s"] == pytest.approx(1.0) and a["ttfa_s"] == pytest.approx(0.110)
    assert a["cost_usd"] == pytest.approx(570e-6)  # 450 * $1/M + 60 * $2/M

    b = by_id[f"trace-{TID_B[:12]}"]["runs"][0]["metrics"]
    assert (b["tool_recall"], b["tool_precision"], b["param_accuracy"], b["step_efficiency"]) == (1.0, 1.0, 1.0, 1.0)
    assert b["success"] == 1 and (b["prompt_tokens"], b["completion_tokens"]) == (5, 2)
    assert b["latency_s"] == pytest.approx(0.050) and b["ttfa_s"] == pytest.approx(0.050)  # no tool: to the end

    run_c = by_id["search"]["runs"][0]
    c = run_c["metrics"]
    assert c["success"] == 1 and c["tool_errors"] == 1 and c["recovered"] is True
    assert c["param_accuracy"] == 1.0  # "blue shoes" matches {"$regex": "blue.*"}
    assert c["latency_s"] == pytest.approx(0.400) and c["ttfa_s"] == pytest.approx(0.050)
    assert c["cost_usd"] == pytest.approx(48e-6)  # priced as gen_ai.request.model gpt-mini: 70 * 0.5/M + 13 * 1/M
    assert run_c["skipped_checks"] == [{"name": "env:orders.1.status:equals", "reason": "no recorded environment"}]
    assert [ch["name"] for ch in run_c["checks"]] == ["trajectory"]
    assert run_c["trace"]["steps"][0]["error"] == "TimeoutError"

    s = report["summary"]
    assert s["pass_at_1"] == pytest.approx(2 / 3)  # (0 + 1 + 1) / 3; the skipped case counts in no figure
    assert s["tool_recall"] == 1.0
    assert s["tool_precision"] == pytest.approx(8 / 9)  # (2/3 + 1 + 1) / 3
    assert s["param_accuracy"] == pytest.approx(8 / 9)
    assert s["step_efficiency"] == pytest.approx(8 / 9)
    assert s["loop_rate"] == pytest.approx(1 / 3)
    assert s["recovery_rate"] == 1.0  # 1 recovered / 1 run with a tool error
    assert s["tokens_total"] == 600  # 510 + 7 + 83
    assert s["cost_total_usd"] == pytest.approx(627e-6)  # 570 + 9 + 48 micro-dollars
    assert s["latency_mean_s"] == pytest.approx((1.0 + 0.05 + 0.4) / 3)
    assert s["ttfa_mean_s"] == pytest.approx((0.11 + 0.05 + 0.05) / 3)
    assert (s["cases_passed"], s["cases_failed"], s["cases_skipped"]) == (2, 1, 1)
    assert report["settings"]["scored_from"] == {"traces": str(tmp_path / "traces.jsonl"), "format": "otel"}
    assert report["agent"] == "otel" and report["model"] == "gpt-test" and report["exit_code"] == 1
    assert {k: report["settings"]["sources"][k] for k in ("agent", "model", "repeat")} == dict.fromkeys(
        ("agent", "model", "repeat"), "traces")
    assert (out / f"{report['run_id']}.html").exists() and (out / "history.sqlite").exists()
    assert "<testsuite" in (tmp_path / "junit.xml").read_text()
    assert (tmp_path / "summary.md").read_text()


def test_import_then_score_round_trips(tmp_path):
    traces = traces_file(tmp_path)
    (tmp_path / "tools.py").write_text(TOOLS)
    imported = cli("import", "otel", traces, "--out", tmp_path / "imported.json", "--tools", tmp_path / "tools.py",
                   cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    doc = orjson.loads((tmp_path / "imported.json").read_bytes())
    assert doc["suite"] == {"tools": "tools.py"}
    assert len(doc["cases"]) == 5
    assert cli("validate", "--cases", tmp_path / "imported.json").returncode == 0
    out = tmp_path / "out"
    result = cli("score", traces, "--cases", tmp_path / "imported.json", "--output-dir", out, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    report = only_report(out)
    assert all(c["status"] == "passed" for c in report["cases"])
    assert all(r["checks"][0]["name"] == "trajectory" and r["checks"][0]["passed"]
               for c in report["cases"] for r in c["runs"])


def test_import_writes_stdout_reports_unmappable_and_exits_2_when_nothing_maps(tmp_path):
    traces = traces_file(tmp_path)
    result = cli("import", "otel", traces, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [c["id"] for c in orjson.loads(result.stdout)][0] == f"trace-{TID_A[:12]}"
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"resourceSpans": []}\nnot json\n')
    result = cli("import", "otel", junk, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "line 2: not JSON" in flat(result.stderr) and "no record of" in flat(result.stderr)
    result = cli("import", "csv", junk, cwd=tmp_path)
    assert result.returncode == 2 and "unknown import format" in flat(result.stderr)


def test_import_against_tools_leaves_out_cases_that_do_not_validate(tmp_path):
    (tmp_path / "tools.py").write_text("from agent_eval import tool\n\n\n@tool\ndef search(q: str) -> str:\n"
                                       "    \"\"\"Search.\"\"\"\n    return q\n")
    result = cli("import", "otel", traces_file(tmp_path), "--out", tmp_path / "c.json", "--tools", "tools.py",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    message = flat(result.stderr)
    assert f"trace {TID_A}: case 'trace-{TID_A[:12]}' does not validate" in message
    assert "no tool named 'lookup_order'" in message
    assert cli("validate", "--cases", tmp_path / "c.json").returncode == 0


def test_score_with_no_match_exits_2(tmp_path):
    cases = tmp_path / "other.json"
    cases.write_bytes(orjson.dumps([{"id": "x", "query": "q", "expect": {"contains": "x"}}]))
    result = cli("score", traces_file(tmp_path), "--cases", cases, "--output-dir", tmp_path / "out", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "matches a selected case" in flat(result.stderr)
    assert not (tmp_path / "out").exists()


def test_score_a_report_against_a_newer_case_file(tmp_path):
    out = tmp_path / "out"
    traces = traces_file(tmp_path)
    first = cli("score", traces, "--cases", case_file(tmp_path), "--output-dir", out, "--quiet", cwd=tmp_path)
    assert first.returncode == 1
    (report_path,) = out.glob("*.json")
    # The corrected reference: the agent was right to refund 10.
    cases = orjson.loads((tmp_path / "cases.json").read_bytes())
    cases["cases"][0]["expected_tools"][1]["args"]["amount"] = 10
    (tmp_path / "cases.json").write_bytes(orjson.dumps(cases))
    second = cli("score", report_path, "--cases", tmp_path / "cases.json", "--output-dir", tmp_path / "out2",
                 "--baseline", report_path, "--gate", "pass_at_1", cwd=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    report = only_report(tmp_path / "out2")
    assert report["settings"]["scored_from"]["format"] == "agent-eval"
    assert report["summary"]["pass_at_1"] == 1.0
    assert report["gate"] is not None and not report["gate"]["regression"]


def test_score_baseline_last_follows_run_s_rule(tmp_path):
    """score --baseline last picks a baseline as run does (report/baseline.pick_last): exit 2 before anything is
    written when no earlier run is comparable, including one that scored fewer cases than are selected now
    (with no earlier run at all, a warning and an ungated report)."""
    out = tmp_path / "out"
    traces, cases = traces_file(tmp_path), case_file(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    none_yet = cli("score", traces, "--cases", cases, "--output-dir", elsewhere, "--baseline", "last",
                   cwd=tmp_path)
    assert none_yet.returncode == 1, none_yet.stdout + none_yet.stderr  # ungated: "refund" fails
    assert "warning: --baseline last" in flat(none_yet.stderr) and "no earlier run" in flat(none_yet.stderr)
    narrow = cli("score", traces, "--cases", cases, "--output-dir", out, "--filter", "search", "--quiet", cwd=tmp_path)
    assert narrow.returncode == 0, narrow.stdout + narrow.stderr
    # The earlier run scored only "search"; now 4 cases are selected, so it is no baseline for them.
    wider = cli("score", traces, "--cases", cases, "--output-dir", out, "--baseline", "last", cwd=tmp_path)
    assert wider.returncode == 2, wider.stdout + wider.stderr
    assert "did not select 3 cases selected now" in flat(wider.stderr) and len(list(out.glob("*.json"))) == 1
    before = set(out.glob("2*.json"))
    full = cli("score", traces, "--cases", cases, "--output-dir", out, "--quiet", cwd=tmp_path)
    assert full.returncode == 1  # case "refund" failed its trajectory
    (full_report,) = set(out.glob("2*.json")) - before
    before = set(out.glob("2*.json"))
    gated = cli("score", traces, "--cases", cases, "--output-dir", out, "--baseline", "last", "--gate", "pass_at_1",
                cwd=tmp_path)
    assert gated.returncode == 1, gated.stdout + gated.stderr  # the same runs: no regression, "refund" still fails
    (gated_report,) = set(out.glob("2*.json")) - before
    gate = orjson.loads(gated_report.read_bytes())["gate"]
    assert gate["base_run_id"] == full_report.stem and not gate["regression"]


def test_gate_without_baseline_is_exit_2(tmp_path):
    result = cli("score", traces_file(tmp_path), "--cases", case_file(tmp_path), "--gate", "pass_at_1",
                 cwd=tmp_path)
    assert result.returncode == 2 and "--baseline" in flat(result.stderr)


def test_score_asks_the_judge_like_run(loopback, tmp_path):
    from tests.judged_suite import judge_script

    judge = loopback(judge_script())
    cases = [{"id": "good", "query": "Refund order 42", "metadata": {"trace_id": TID_A}, "rubric": "RUBRIC_PASS"},
             {"id": "bad", "query": "hi", "metadata": {"trace_id": TID_B}, "rubric": "RUBRIC_FAIL"}]
    path = tmp_path / "judged.json"
    path.write_bytes(orjson.dumps(cases))
    traces = traces_file(tmp_path)
    env = {"AGENT_EVAL_JUDGE_BASE_URL": judge.base_url, "AGENT_EVAL_JUDGE_API_KEY": "k",
           "AGENT_EVAL_JUDGE_MODEL": "judge-m"}
    result = cli("score", traces, "--cases", path, "--output-dir", tmp_path / "out", "--judge-timeout", "30",
                 cwd=tmp_path, env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    report = only_report(tmp_path / "out")
    assert report["settings"]["judge_timeout"] == 30
    runs = {c["id"]: c["runs"][0] for c in report["cases"]}
    assert runs["good"]["judge"] == {"verdict": "PASS", "reason": "the refund is stated", "model": "judge-m"}
    assert runs["bad"]["judge"]["verdict"] == "FAIL" and runs["bad"]["status"] == "failed"
    assert report["summary"]["judge"]["calls"] == 2
    # Under --no-judge both cases have only judged checks: skipped, and all skipped is exit 2.
    result = cli("score", traces, "--cases", path, "--output-dir", tmp_path / "out2", "--no-judge", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert {c["skip_reason"] for c in only_report(tmp_path / "out2")["cases"]} == {"judge disabled"}


def test_a_score_run_cannot_be_resumed(tmp_path):
    out = tmp_path / "out"
    cli("score", traces_file(tmp_path), "--cases", case_file(tmp_path), "--output-dir", out, "--quiet",
        cwd=tmp_path)
    run_id = only_report(out)["run_id"]
    result = cli("run", "--resume", run_id, "--output-dir", out, cwd=tmp_path)
    assert result.returncode == 2 and "nothing to resume" in flat(result.stderr)
