"""Span conventions other than GenAI's, OTLP logs and protobuf, and stitched conversations (docs/import-and-score.md).

Recordings made by the real libraries come from tests/recorders. logfire is not installed here, so its
spans are written by hand exactly as its source writes them (logfire/_internal/integrations/
llm_providers/openai.py and llm_provider.py for `instrument_openai`, openai_agents.py for the Agents SDK).
"""
from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

from agent_eval.ingest.otel import otel_cases, read_recorded, recorded_run_trace
from tests.otlp_gen import Trace, as_json, export_request, jsonl, key_values
from tests.recorders.agent import COMPLETION_TOKENS, PROMPT_TOKENS, SCRIPT, TURNS

ROOT = Path(__file__).resolve().parents[2]
TID = "1234567890abcdef1234567890abcdef"
EXPECTED_NAMES = ["lookup_order", "refund", "lookup_order"]


def test_genai_content_in_log_events_joins_its_spans(loopback, tmp_path):
    server = loopback(list(SCRIPT))
    out = tmp_path / "rec"
    proc = subprocess.run([sys.executable, "-m", "tests.recorders.record", "openai-v2", server.base_url, str(out),
                           "--root", "--content", "events"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # without the logs the spans hold no message: nothing to import, and the reason says so
    cases, bad, _ = otel_cases(out / "traces.jsonl")
    assert not cases and "no user message recorded" in str(bad[0])
    cases, bad, _ = otel_cases(out / "traces.jsonl", out / "logs.jsonl")
    assert not bad
    (case,) = cases
    assert case["messages"] == TURNS
    assert [c["name"] for c in case["expected_tools"]] == EXPECTED_NAMES
    usage = case["metadata"]["recorded_usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (PROMPT_TOKENS, COMPLETION_TOKENS)


def _logfire_chat(t: Trace, start: float, end: float, messages: list, reply: dict, usage: tuple[int, int],
                  stream: bool = False, v2: bool = False) -> None:
    """A logfire `instrument_openai` span: `request_data`/`response_data` JSON (v2 adds gen_ai.* beside them)."""
    request = {"model": "gpt-test", "messages": messages, **({"stream": True} if stream else {})}
    attrs = {"logfire.msg_template": "Chat Completion with {request_data[model]!r}", "logfire.span_type": "span",
             "request_data": as_json(request), "async": False}
    if v2:
        attrs.update({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                      "gen_ai.request.model": "gpt-test"})
    response = {"message": reply, "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                                            "total_tokens": sum(usage)}}
    if not stream:
        attrs["response_data"] = as_json(response)
        if v2:
            attrs.update({"gen_ai.usage.input_tokens": usage[0], "gen_ai.usage.output_tokens": usage[1]})
        t.span("Chat Completion with 'gpt-test'", start, end, key_values(attrs))
        return
    t.span("Chat Completion with 'gpt-test'", start, start + 1, key_values(attrs))  # ends when the stream opens
    log = {**attrs, "logfire.msg_template": "streaming response from {request_data[model]!r} took {duration:.2f}s",
           "logfire.span_type": "log", "duration": (end - start) / 1000, "response_data": as_json(response)}
    t.span("streaming response from 'gpt-test' took 0.10s", end, end, key_values(log))


def test_logfire_bodies_v1_and_v2_and_a_streamed_call_counted_once(tmp_path):
    for v2 in (False, True):
        t = Trace(TID)
        ask = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Refund order 42"}]
        call = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "refund", "arguments": '{"order_id": 42}'}}]}
        _logfire_chat(t, 0, 100, ask, call, (30, 5), stream=True, v2=v2)
        t.span("Function: refund", 110, 150, key_values({"logfire.msg_template": "Function: {name}",
                                                        "logfire.span_type": "span", "name": "refund",
                                                        "input": '{"order_id": 42}', "output": "ok"}))
        _logfire_chat(t, 160, 300, [*ask, call, {"role": "tool", "tool_call_id": "c1", "content": "ok"}],
                      {"role": "assistant", "content": "Refunded."}, (40, 6), v2=v2)
        path = tmp_path / f"logfire-{v2}.jsonl"
        path.write_bytes(jsonl([export_request(t.spans)]))
        (rec,), bad = read_recorded(path)
        assert not bad
        # two model calls, not three: the streamed call's request half is left out; 30+40, 5+6
        assert (len(rec.inferences), rec.input_tokens, rec.output_tokens) == (2, 70, 11)
        trace = recorded_run_trace(rec)
        assert [(s["name"], s["args"], s["output"]) for s in trace["steps"]] == [("refund", {"order_id": 42}, "ok")]
        assert trace["llm_calls"][0]["latency_s"] == 0.1  # from the log's duration: 100 ms
        assert trace["final_answer"] == "Refunded."


def test_logfire_agents_sdk_function_span_in_error_is_the_steps_error(tmp_path):
    t = Trace(TID)
    items = [{"role": "user", "content": "Refund order 42"}]
    response = {"output": [{"type": "function_call", "call_id": "c1", "name": "refund",
                            "arguments": '{"order_id": 42}'}], "usage": {"input_tokens": 12, "output_tokens": 3}}
    t.span("Responses API with 'gpt-test'", 0, 50, key_values({
        "logfire.msg_template": "Responses API with {gen_ai.request.model!r}", "logfire.span_type": "span",
        "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-test",
        "raw_input": as_json(items), "response": as_json(response)}))
    t.span("Function: refund", 60, 80, key_values({"logfire.msg_template": "Function: {name}",
                                                   "logfire.span_type": "span", "name": "refund",
                                                   "input": '{"order_id": 42}', "gen_ai.system": "openai"}),
           error="ValueError: no such order")
    path = tmp_path / "agents.jsonl"
    path.write_bytes(jsonl([export_request(t.spans)]))
    (rec,), _ = read_recorded(path)
    (step,) = recorded_run_trace(rec)["steps"]
    assert step["name"] == "refund" and step["args"] == {"order_id": 42}
    assert step["error"] == "ValueError: no such order"
    assert (rec.input_tokens, rec.output_tokens) == (12, 3)


def test_a_span_with_two_conventions_counts_once_read_by_genai_first(tmp_path):
    t = Trace(TID)
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-genai",
             "gen_ai.input.messages": as_json([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]),
             "gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 2,
             "openinference.span.kind": "LLM", "llm.model_name": "gpt-oi", "llm.token_count.prompt": 99,
             "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "other",
             "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "hello"}
    t.span("chat", 0, 10, key_values(attrs))
    path = tmp_path / "both.jsonl"
    path.write_bytes(jsonl([export_request(t.spans)]))
    (rec,), _ = read_recorded(path)
    assert rec.user_messages == ["hi"] and rec.answer == "hello"  # the output only OpenInference recorded
    assert (len(rec.inferences), rec.input_tokens, rec.inferences[0].model) == (1, 7, "gpt-genai")


def test_openinference_handoff_tool_span_without_input_is_not_a_step(tmp_path):
    t = Trace(TID)
    t.span("llm", 0, 10, key_values({"openinference.span.kind": "LLM",
                                     "llm.input_messages.0.message.role": "user",
                                     "llm.input_messages.0.message.contents.0.message_content.type": "text",
                                     "llm.input_messages.0.message.contents.0.message_content.text": "go",
                                     "llm.output_messages.0.message.role": "assistant",
                                     "llm.output_messages.0.message.content": "done"}))
    t.span("transfer_to_billing", 11, 12, key_values({"openinference.span.kind": "TOOL",
                                                      "tool.name": "transfer_to_billing"}))
    t.span("search", 13, 14, key_values({"openinference.span.kind": "TOOL", "tool.name": "search",
                                         "tool.parameters": '{"type": "object"}', "input.value": '{"q": "x"}'}))
    path = tmp_path / "oi.jsonl"
    path.write_bytes(jsonl([export_request(t.spans)]))
    cases, _, _ = otel_cases(path)
    assert cases[0]["query"] == "go"
    assert cases[0]["expected_tools"] == [{"name": "search", "args": {"q": "x"}}]  # input.value, not the schema


def test_broken_protobuf_is_named_never_a_traceback(tmp_path):
    path = tmp_path / "bad.pb"
    path.write_bytes(struct.pack(">I", 50) + b"\x0a\x02")
    cases, bad, _ = otel_cases(path)
    assert not cases and "its length says 50 bytes" in str(bad[0])
    path.write_bytes(struct.pack(">I", 3) + b"\xff\xff\xff")
    cases, bad, _ = otel_cases(path)
    assert not cases and str(bad[0]).startswith("request 1: not an OTLP traces export request")


def test_a_call_the_model_issued_that_no_tool_span_ran_is_not_executed(tmp_path):
    from tests.otlp_gen import assistant, calls, user

    t = Trace(TID)
    t.chat(0, 10, [user("go")], [calls(("c1", "search", {"q": "a"}), ("c2", "search", '{"q": '))])
    t.tool(11, 20, "search", "c1", arguments={"q": "a"})
    t.chat(21, 30, [user("go")], [assistant("done")])
    path = tmp_path / "t.jsonl"
    path.write_bytes(jsonl([export_request(t.spans)]))
    cases, _, _ = otel_cases(path)
    assert cases[0]["expected_tools"] == [{"name": "search", "args": {"q": "a"}}]  # the malformed one is left out
    assert cases[0]["metadata"]["recorded_calls"][1] == {"name": "search", "args": '{"q": ', "executed": False}
    (rec,), _ = read_recorded(path)
    steps = recorded_run_trace(rec)["steps"]
    assert [s["executed"] for s in steps] == [True, False]
    assert steps[1]["error"] == "not executed: the agent did not run this call (malformed JSON)"
    assert steps[1]["t_start_s"] == 0.01  # when the chat span that issued it ended




def test_openllmetry_flattened_messages_and_its_tool_decorator_spans(tmp_path):
    """OpenLLMetry's shapes (traceloop's opentelemetry-instrumentation-openai and its @tool decorator),
    written by hand: the library is not installed here."""
    t = Trace(TID)
    wf = t.span("refund_flow.workflow", 0, 300, key_values({"traceloop.span.kind": "workflow",
                                                           "traceloop.entity.name": "refund_flow"}))
    t.span("openai.chat", 10, 100, key_values({
        "llm.request.type": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-test",
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "sys",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Refund order 42",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.finish_reason": "tool_calls",
        "gen_ai.completion.0.tool_calls.0.id": "c1", "gen_ai.completion.0.tool_calls.0.name": "refund",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"order_id": 42}',
        "gen_ai.usage.prompt_tokens": 30, "gen_ai.usage.completion_tokens": 5}), parent=wf)
    t.span("refund.tool", 110, 150, key_values({"traceloop.span.kind": "tool", "traceloop.entity.name": "refund",
                                                "traceloop.entity.input": '{"args": [], "kwargs": {"order_id": 42}}',
                                                "traceloop.entity.output": '"ok"'}), parent=wf)
    t.span("openai.chat", 160, 290, key_values({
        "llm.request.type": "chat", "gen_ai.request.model": "gpt-test",
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Refund order 42",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Refunded.",
        "gen_ai.usage.prompt_tokens": 40, "gen_ai.usage.completion_tokens": 6}), parent=wf)
    path = tmp_path / "openllmetry.jsonl"
    path.write_bytes(jsonl([export_request(t.spans)]))
    (case,), bad, _ = otel_cases(path)
    assert not bad
    assert case["query"] == "Refund order 42"
    assert case["expected_tools"] == [{"name": "refund", "args": {"order_id": 42}}]
    # 30+40, 5+6 over the two chat spans; the workflow span is the agent, not a model call
    assert case["metadata"]["recorded_usage"] == {"prompt_tokens": 70, "completion_tokens": 11}
    assert case["metadata"]["recorded_answer"] == "Refunded."


def _logfire_latest_stream(t: Trace, start: float, end: float, text: str, reply: dict, usage: tuple[int, int]) -> None:
    """A streamed call as logfire writes it with only the latest GenAI semconv (`request_data` is just the model,
    so nothing on the request span says it streamed): the request span (input messages, no output, no usage)
    and, attached to the request's context (a sibling), the "streaming response" log with output and usage."""
    common = {"request_data": as_json({"model": "gpt-test"}), "gen_ai.provider.name": "openai",
              "gen_ai.request.model": "gpt-test", "gen_ai.operation.name": "chat", "async": False,
              "gen_ai.input.messages": as_json([{"role": "user", "parts": [{"type": "text", "content": text}]}])}
    t.span("Chat Completion with 'gpt-test'", start, start + 1,
           key_values({**common, "logfire.msg_template": "Chat Completion with {request_data[model]!r}",
                       "logfire.span_type": "span"}))
    log = {**common, "logfire.msg_template": "streaming response from {request_data[model]!r} took {duration:.2f}s",
           "logfire.span_type": "log", "duration": (end - start) / 1000,
           "gen_ai.output.messages": as_json([reply]),
           "gen_ai.usage.input_tokens": usage[0], "gen_ai.usage.output_tokens": usage[1]}
    t.span("streaming response from 'gpt-test' took 0.10s", end, end, key_values(log))


def test_logfire_latest_semconv_streamed_calls_count_once(tmp_path):
    t = Trace(TID)
    first = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "refund",
                                             "arguments": {"order_id": 42}}]}
    _logfire_latest_stream(t, 0, 100, "Refund order 42", first, (30, 5))
    t.span("Function: refund", 110, 150, key_values({"logfire.msg_template": "Function: {name}",
                                                    "logfire.span_type": "span", "name": "refund",
                                                    "input": '{"order_id": 42}', "output": "ok"}))
    _logfire_latest_stream(t, 160, 300, "Refund order 42", {"role": "assistant", "parts": [
        {"type": "text", "content": "Refunded."}]}, (40, 6))
    path = tmp_path / "logfire-latest.jsonl"
    path.write_bytes(jsonl([export_request(t.spans)]))
    (rec,), bad = read_recorded(path)
    assert not bad
    trace = recorded_run_trace(rec)
    # two model calls, each once (no zero-token entry for the request halves): 30+40, 5+6
    assert [(c["prompt_tokens"], c["completion_tokens"]) for c in trace["llm_calls"]] == [(30, 5), (40, 6)]
    assert (rec.input_tokens, rec.output_tokens) == (70, 11)
    assert trace["final_answer"] == "Refunded."
