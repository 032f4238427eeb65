"""OTLP/JSON traces read by the GenAI conventions (docs/import-and-score.md): ids, values, both conventions."""
from __future__ import annotations

import base64

import orjson
import pytest

from agent_eval.ingest.otel import otel_cases, recorded_run_trace, read_recorded
from agent_eval.ingest.otlp import any_value, decode_id, read_spans
from tests.otlp_gen import (Trace, assistant, calls, export_request, jsonl, oa_assistant, oa_calls, oa_system,
                            oa_tool, oa_user, system, tool_result, user)

TID_A = "5b8efff798038103d269b633813fc60c"
TID_B = "0af7651916cd43dd8448eb211c80319c"
TID_C = "4bf92f3577b34da6a3ce929d0e0e4736"


def refund_trace(tid: str = TID_A, offset_ms: float = 0.0) -> Trace:
    """Current convention: agent span (its usage repeats the children's), three chats, two tools."""
    t = Trace(tid, offset_ms)
    a = t.agent(0, 1000, usage=(999, 999))
    t.chat(10, 100, [system("Be brief."), user("Refund order 42")],
           [calls(("c1", "lookup_order", {"order_id": 42}))], usage=(100, 20), parent=a)
    t.tool(110, 150, "lookup_order", "c1", arguments={"order_id": 42}, result='{"status": "paid"}', parent=a)
    t.chat(160, 300, [user("Refund order 42"), calls(("c1", "lookup_order", {"order_id": 42})),
                      tool_result("c1", "paid")],
           [calls(("c2", "refund", {"order_id": 42, "amount": 9.5}))], usage=(150, 30), parent=a)
    # No gen_ai.tool.call.arguments here: the args come from the assistant's tool_call part "c2".
    t.tool(310, 400, "refund", "c2", parent=a)
    t.chat(410, 900, [user("Refund order 42")], [assistant("Refunded 9.50.")], usage=(200, 10), parent=a)
    return t


def legacy_trace(tid: str = TID_B, offset_ms: float = 5000.0) -> Trace:
    """The older convention: prompt/completion events with OpenAI messages, no execute_tool span."""
    t = Trace(tid, offset_ms)
    t.chat(0, 40, [oa_system("sys"), oa_user("Where is order 7?")],
           [oa_calls(("k1", "track", {"order_id": 7}))], usage=(12, 3), legacy=True)
    t.chat(50, 90, [oa_system("sys"), oa_user("Where is order 7?"), oa_calls(("k1", "track", {"order_id": 7})),
                    oa_tool("k1", "in transit")], [oa_assistant("It is in transit.")], usage=(20, 6), legacy=True)
    return t


def write(tmp_path, requests, name="traces.jsonl"):
    path = tmp_path / name
    path.write_bytes(jsonl(requests))
    return path


def test_ids_are_hex_in_any_case_or_base64():
    assert decode_id(TID_A.upper(), 16) == TID_A
    assert decode_id(base64.b64encode(bytes.fromhex(TID_A)).decode(), 16) == TID_A
    assert decode_id("not an id", 16) is None
    assert decode_id("00f067aa0ba902b7", 8) == "00f067aa0ba902b7"


def test_any_values_decode_to_plain_values():
    assert any_value({"intValue": "12"}) == 12
    assert any_value({"intValue": 12}) == 12
    assert any_value({"doubleValue": 0.5}) == 0.5
    assert any_value({"arrayValue": {"values": [{"stringValue": "a"}, {"boolValue": True}]}}) == ["a", True]
    assert any_value({"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "3"}}]}}) == {"k": 3}
    assert any_value({}) is None


def test_spans_are_ordered_by_start_time_not_file_order(tmp_path):
    t = refund_trace()
    path = write(tmp_path, [export_request(list(reversed(t.spans)))])
    traces, bad = read_spans(path)
    starts = [s.start_ns for s in traces[TID_A]]
    assert starts == sorted(starts) and not bad
    cases, bad, _ = otel_cases(path)
    assert [c["name"] for c in cases[0]["expected_tools"]] == ["lookup_order", "refund"]


def test_current_convention_maps_to_the_case(tmp_path):
    path = write(tmp_path, [export_request(refund_trace().spans)])
    cases, bad, notes = otel_cases(path)
    assert not bad and not notes
    assert cases == [{
        "id": "trace-5b8efff79803",
        "query": "Refund order 42",  # the system message is no user message: it is kept apart
        "expected_tools": [{"name": "lookup_order", "args": {"order_id": 42}},
                           {"name": "refund", "args": {"order_id": 42, "amount": 9.5}}],
        "trajectory": "unordered",
        "tags": ["imported"],
        "metadata": {"trace_id": TID_A, "recorded_answer": "Refunded 9.50.",
                     "recorded_replies": ["Refunded 9.50."],
                     "recorded_calls": [{"name": "lookup_order", "args": {"order_id": 42}},
                                        {"name": "refund", "args": {"order_id": 42, "amount": 9.5}}],
                     # summed over the three chat spans, never the agent span's 999: 100+150+200, 20+30+10
                     "recorded_usage": {"prompt_tokens": 450, "completion_tokens": 60},
                     "recorded_model": "gpt-test", "recorded_system_prompt": "Be brief."},
    }]


def test_older_convention_events_and_tool_calls_from_messages(tmp_path):
    path = write(tmp_path, [export_request(legacy_trace().spans)])
    cases, bad, _ = otel_cases(path)
    assert not bad
    assert cases[0]["id"] == "trace-0af7651916cd"
    assert cases[0]["query"] == "Where is order 7?"
    assert cases[0]["expected_tools"] == [{"name": "track", "args": {"order_id": 7}}]
    assert cases[0]["metadata"]["recorded_answer"] == "It is in transit."
    (rec,), _ = read_recorded(path)
    assert (rec.input_tokens, rec.output_tokens) == (32, 9)  # 12+20, 3+6 over the two chat spans


def test_several_traces_in_one_file_mixed_id_encodings_and_lines(tmp_path):
    a, b = refund_trace(), legacy_trace()
    c = Trace(TID_C, offset_ms=2000)
    c.chat(0, 30, [user("hello")], [assistant("Hi! How can I help?")], usage=(4, 6), structured=True)
    spans = a.spans + b.spans + c.spans
    # one trace split over two lines, base64 ids on one line and upper-case hex on the other
    path = write(tmp_path, [export_request(spans[:3], "base64"), export_request(spans[3:], "HEX")])
    cases, bad, _ = otel_cases(path)
    assert not bad
    assert [x["id"] for x in cases] == ["trace-5b8efff79803", "trace-4bf92f3577b3", "trace-0af7651916cd"]
    no_tools = cases[1]
    # no tool call recorded: any call fails the case (section 15b)
    assert no_tools["expected_tools"] == [] and no_tools["trajectory"] == "subset"
    assert no_tools["metadata"]["recorded_answer"] == "Hi! How can I help?"


def test_one_json_document_and_int_values_as_numbers(tmp_path):
    path = tmp_path / "doc.json"
    path.write_bytes(orjson.dumps(export_request(legacy_trace().spans)))
    cases, bad, _ = otel_cases(path)
    assert len(cases) == 1 and not bad


def test_several_user_messages_become_messages(tmp_path):
    t = Trace(TID_C)
    t.chat(0, 10, [user("first"), assistant("ok"), user("second")], [assistant("done")])
    cases, _, _ = otel_cases(write(tmp_path, [export_request(t.spans)]))
    assert cases[0]["messages"] == ["first", "second"] and "query" not in cases[0]


def test_unmappable_records_are_named(tmp_path):
    plain = Trace(TID_B)
    plain.plain(0, 5)
    silent = Trace(TID_C)
    silent.span("chat m", 0, 5, [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}])
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(jsonl([export_request(refund_trace().spans), export_request(plain.spans)]) + b"{oops\n"
                     + jsonl([export_request(silent.spans), {"hello": 1}]))
    cases, bad, _ = otel_cases(path)
    assert [c["id"] for c in cases] == ["trace-5b8efff79803"]
    reasons = {b.where: b.reason for b in bad}
    assert reasons["line 3"].startswith("not JSON")
    assert "resourceSpans" in reasons["line 5"]
    assert reasons[f"trace {TID_B}"].startswith("no GenAI span")
    assert reasons[f"trace {TID_C}"].startswith("no user message recorded")


def test_malformed_arguments_are_left_out_of_the_case_with_a_note(tmp_path):
    t = Trace(TID_C)
    t.chat(0, 10, [user("go")], [assistant("done")])
    t.tool(2, 4, "search", "s1", arguments='{"q": "blue')
    cases, bad, notes = otel_cases(write(tmp_path, [export_request(t.spans)]))
    assert cases[0]["expected_tools"] == [{"name": "search"}]
    assert notes == [f"trace {TID_C}: call 0 (search) has malformed JSON; its args are left out"]


def test_run_trace_times_tokens_and_errors_come_from_the_spans(tmp_path):
    t = refund_trace()
    t.tool(420, 430, "notify", "c3", arguments={"to": "x"}, error_type="TimeoutError", status_error="took 5s")
    (rec,), _ = read_recorded(write(tmp_path, [export_request(t.spans)]))
    trace = recorded_run_trace(rec)
    assert trace["latency_s"] == pytest.approx(1.0)  # agent span 0 ms .. 1000 ms
    assert trace["ttfa_s"] == pytest.approx(0.110)  # the first execute_tool span starts at 110 ms
    first, _, notify = trace["steps"]
    assert first["latency_s"] == pytest.approx(0.040) and first["t_start_s"] == pytest.approx(0.110)
    assert first["output"] == '{"status": "paid"}'
    assert notify["error"] == "TimeoutError: took 5s"
    # tokens over the three chat spans only, not the agent span's 999 (its usage repeats its children's)
    assert [c["prompt_tokens"] for c in trace["llm_calls"]] == [100, 150, 200]
    assert {c["model"] for c in trace["llm_calls"]} == {"gpt-test"}
    assert trace["final_answer"] == "Refunded 9.50." and trace["stop_reason"] == "completed"
    assert trace["final_env_diff"] == []


def test_without_tool_spans_ttfa_runs_to_the_end_of_the_asking_span(tmp_path):
    (rec,), _ = read_recorded(write(tmp_path, [export_request(legacy_trace().spans)]))
    trace = recorded_run_trace(rec)
    assert trace["latency_s"] == pytest.approx(0.090)
    # no execute_tool span: the call "track" starts when the chat span that asked for it ends, at 40 ms
    assert trace["ttfa_s"] == pytest.approx(0.040)
    assert trace["steps"][0]["t_start_s"] == pytest.approx(0.040)
    assert [s["name"] for s in trace["steps"]] == ["track"]
    assert trace["steps"][0]["output"] == "in transit"


def test_an_agent_span_in_error_is_an_agent_error(tmp_path):
    t = Trace(TID_C)
    a = t.agent(0, 100, error="context length exceeded")
    t.chat(0, 50, [user("go")], [calls(("x", "search", {}))], parent=a)
    (rec,), _ = read_recorded(write(tmp_path, [export_request(t.spans)]))
    trace = recorded_run_trace(rec)
    assert trace["stop_reason"] == "agent_error"
    assert trace["agent_error"] == "context length exceeded"
    assert trace["final_answer"] is None


def test_odd_shapes_are_reported_never_raised(tmp_path):
    good = Trace(TID_C)
    good.chat(0, 10, [user("go \x1b[31mred\x1b[0m")], [assistant("<b>done</b>")])
    # structured (kvlist) arguments, and a message attribute that is not JSON
    good.span("execute_tool search", 2, 4, [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}},
        {"key": "gen_ai.tool.call.arguments", "value": {"kvlistValue": {"values": [
            {"key": "q", "value": {"stringValue": "shoes"}}, {"key": "n", "value": {"intValue": 3}}]}}}])
    good.span("chat broken", 5, 6, [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                                    {"key": "gen_ai.output.messages", "value": {"stringValue": "{not json"}}])
    odd_spans = [
        {"traceId": TID_A, "spanId": "0000000000000001", "startTimeUnixNano": "abc"},
        {"traceId": "xyz", "spanId": "0000000000000002"},
        {"traceId": TID_B, "spanId": "0000000000000003", "attributes": "nope"},  # a trace with no GenAI span
        "not a span",
    ]
    requests = [export_request(good.spans), {"resourceSpans": {"not": "a list"}},
                {"resourceSpans": ["x", {"scopeSpans": ["y", {"spans": odd_spans}]}]}]
    path = write(tmp_path, requests)
    cases, bad, _ = otel_cases(path)
    assert [c["id"] for c in cases] == ["trace-4bf92f3577b3"]
    assert cases[0]["expected_tools"] == [{"name": "search", "args": {"q": "shoes", "n": 3}}]
    assert cases[0]["query"] == "go \x1b[31mred\x1b[0m"  # stored as inert data
    assert cases[0]["metadata"]["recorded_answer"] == "{not json"  # the latest span's output, as text
    reasons = [str(b) for b in bad]
    assert "line 3: a resourceSpans entry is not an object" in reasons
    assert "line 3: a scopeSpans entry is not an object" in reasons
    assert any("traceId 'xyz'" in r for r in reasons)
    assert f"trace {TID_B}: no GenAI span (no gen_ai.* attribute or event)" in reasons
    assert "line 3: a span: a span must be an object" in reasons
    assert sum(r.startswith("line 3: a span") for r in reasons) == 3  # "abc" time, "xyz" id, not an object
