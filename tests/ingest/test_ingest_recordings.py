"""Recorded runs for `score`: the format detected, our reports read with shape checks, runs matched to cases."""
from __future__ import annotations

import orjson
import pytest

from agent_eval.errors import ConfigError
from agent_eval.ingest.formats import detect_format
from agent_eval.ingest.recordings import Recording, agent_eval_recordings, match
from agent_eval.ingest.score_traces import env_skipped

TRACE = {"steps": [], "final_env_diff": [], "stop_reason": "completed", "llm_calls": []}


def test_the_format_is_detected(tmp_path):
    report = tmp_path / "r.json"
    report.write_bytes(orjson.dumps({"schema_version": 1, "cases": []}))
    journal = tmp_path / "r.jsonl"
    journal.write_bytes(orjson.dumps({"run_id": "x", "settings": {}}) + b"\n" + b'{"case_id":"a","trial":0,"run":{}}\n')
    otel = tmp_path / "t.jsonl"
    otel.write_bytes(b'{"resourceSpans": []}\n{"resourceSpans": []}\n')
    assert (detect_format(report), detect_format(journal), detect_format(otel)) == ("agent-eval", "agent-eval", "otel")


def test_a_journal_keeps_each_trials_latest_line(tmp_path):
    path = tmp_path / "run.jsonl"
    lines = [{"run_id": "r1", "settings": {"agent": "a.py:f", "model": "m"}},
             {"case_id": "a", "trial": 0, "run": {"trial": 0, "error": "provider down", "trace": TRACE}},
             {"case_id": "a", "trial": 0, "run": {"trial": 0, "error": None, "trace": TRACE}},
             {"case_id": "b", "trial": 0, "run": {"trial": 0, "error": None}}]
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    recs, bad, head = agent_eval_recordings(path)
    assert [(r.case_id, r.trial, r.error) for r in recs] == [("a", 0, None)]
    assert [str(b) for b in bad] == ["case b trial 0: run.trace is missing"]
    assert head == {"agent": "a.py:f", "model": "m"}


def test_a_report_key_of_the_wrong_type_is_exit_2_naming_it(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(orjson.dumps({"schema_version": 1, "cases": [{"id": "a", "runs": {"not": "a list"}}]}))
    with pytest.raises(ConfigError, match=r"cases\[0\]\.runs must be a list, found an object"):
        agent_eval_recordings(path)


def test_runs_match_by_trace_id_then_case_id():
    cases = [{"id": "named", "metadata": {"trace_id": "AB" * 16}}, {"id": "trace-cdcdcdcdcdcd"}, {"id": "c"}]
    recs = [Recording("t1", TRACE, trace_id="ab" * 16), Recording("t2", TRACE, trace_id="cd" * 16),
            Recording("r", TRACE, case_id="c", trial=0), Recording("t3", TRACE, trace_id="ef" * 16)]
    matched, unmatched = match(recs, cases)
    assert {k: [r.label for r in v] for k, v in matched.items()} == {"named": ["t1"], "trace-cdcdcdcdcdcd": ["t2"],
                                                                     "c": ["r"]}
    assert [r.label for r in unmatched] == ["t3"]


def test_env_checks_are_listed_as_skipped():
    case = {"id": "a", "expected_env_check": [{"path": ["orders", 0, "status"], "equals": "x"}],
            "expected_env": {"k": 1}, "expect": {"contains": "x"}}
    scored, skipped = env_skipped(case)
    assert scored == {"id": "a", "expect": {"contains": "x"}}
    assert skipped == [{"name": "env:orders.0.status:equals", "reason": "no recorded environment"},
                       {"name": "expected_env", "reason": "no recorded environment"}]
