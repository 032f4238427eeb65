"""`agent-eval score` of spans with odd times, as a subprocess (docs/import-and-score.md)."""
from __future__ import annotations

import orjson

from tests.e2e.test_import_score_cli import cli, only_report
from tests.otlp_gen import Trace, assistant, export_request, jsonl, user

TID_OK = "0123456789abcdef0123456789abcdef"
TID_BACK = "fedcba9876543210fedcba9876543210"


def test_a_span_that_ends_before_it_starts_has_null_latency_and_one_warning(tmp_path):
    ok = Trace(TID_OK)
    ok.chat(0, 500, [user("hello")], [assistant("hi")], usage=(3, 2))
    back = Trace(TID_BACK, offset_ms=10_000)
    # the clock went back: this chat span "ends" 1000 s before it starts
    back.chat(1_000_000, 0, [user("bye")], [assistant("bye")], usage=(3, 2))
    traces = tmp_path / "traces.jsonl"
    traces.write_bytes(jsonl([export_request(ok.spans + back.spans)]))
    cases = tmp_path / "cases.json"
    cases.write_bytes(orjson.dumps([
        {"id": "ok", "query": "hello", "metadata": {"trace_id": TID_OK}, "expect": {"icontains": "hi"}},
        {"id": "back", "query": "bye", "metadata": {"trace_id": TID_BACK}, "expect": {"icontains": "bye"}},
    ]))
    out = tmp_path / "out"
    proc = cli("score", traces, "--cases", cases, "--output-dir", out, "--no-html", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, proc.stderr
    assert TID_BACK in warnings[0] and "ends before it starts" in warnings[0]
    assert "-1000" not in proc.stdout
    report = only_report(out)
    runs = {c["id"]: c["runs"][0] for c in report["cases"]}
    assert runs["back"]["trace"]["latency_s"] is None
    assert runs["back"]["trace"]["llm_calls"][0]["latency_s"] is None
    assert runs["ok"]["trace"]["latency_s"] == 0.5
    # P50 over the runs with a latency: only "ok", 0.5 s; the backwards run counts in no latency figure
    assert report["summary"]["latency_p50_s"] == 0.5
    assert report["summary"]["latency_mean_s"] == 0.5
