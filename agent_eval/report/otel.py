"""Our runs out as OpenTelemetry GenAI traces: `--otel FILE` (OTLP/JSON lines) and `--otlp-endpoint URL`.

Each run is one trace, its id the first 32 hex digits of sha256("run_id/case id/trial"): an
`invoke_agent` span, a `chat` child per `llm_calls` entry and an `execute_tool` child per step, with one
`gen_ai.evaluation.result` span event per check and per run metric. `import otel` and `score` read the
file back (`agent_eval.case_id` / `agent_eval.trial` first). See docs/import-and-score.md.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from agent_eval.records import Report, RunRecord, Trace
from agent_eval.report.files import atomic_file
from agent_eval.score.metric_registry import run_value_keys

SCOPE = "agent_eval"
STATUS_ERROR = 2
# The per-run metrics each run's span carries as evaluation results, and the per-run value of each
# metric row a plugin added.
METRICS = ("tool_recall", "tool_precision", "param_accuracy", "step_efficiency", "progress", "groundedness",
           "has_loop", "tool_errors", "invalid_calls", "policy_violations", "latency_s", "ttfa_s", "cost_usd")


def trace_id_of(run_id: str, case_id: str, trial: int) -> str:
    """The run's trace id: the first 32 hex digits of sha256 of "run_id/case id/trial"."""
    return hashlib.sha256(f"{run_id}/{case_id}/{trial}".encode()).hexdigest()[:32]


def _span_id(trace_id: str, n: int) -> str:
    return hashlib.sha256(f"{trace_id}/{n}".encode()).hexdigest()[:16]


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value if isinstance(value, str) else orjson.dumps(value).decode()}


def _attrs(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in values.items() if v is not None]


def _ns(origin: int, seconds: Any) -> int:
    return origin + int(round(float(seconds) * 1e9)) if isinstance(seconds, (int, float)) else origin


def _origin(trace: Trace, created_at: Any) -> int:
    """The run's start in Unix ns: the trace's own record, else the report's created_at."""
    started = trace.get("started_at_unix_ns")
    if isinstance(started, int) and not isinstance(started, bool):
        return started
    try:
        return int(datetime.fromisoformat(str(created_at).replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return 0


def _text_messages(role: str, texts: Iterable[Any]) -> str:
    return orjson.dumps([{"role": role, "parts": [{"type": "text", "content": t}]}
                         for t in texts if isinstance(t, str)]).decode()


def _events(run: RunRecord, at: int) -> list[dict[str, Any]]:
    events = []
    for check in run.get("checks") or ():
        events.append({"timeUnixNano": str(at), "name": "gen_ai.evaluation.result", "attributes": _attrs({
            "gen_ai.evaluation.name": check.get("name"), "gen_ai.evaluation.score.value": 1.0 if check.get("passed")
            else 0.0, "gen_ai.evaluation.score.label": "passed" if check.get("passed") else "failed",
            "gen_ai.evaluation.explanation": check.get("detail")})})
    metrics = run.get("metrics") or {}
    for name in (*METRICS, *(k for k in run_value_keys() if k not in METRICS)):
        value = metrics.get(name)
        if isinstance(value, (int, float)):
            events.append({"timeUnixNano": str(at), "name": "gen_ai.evaluation.result", "attributes": _attrs({
                "gen_ai.evaluation.name": name, "gen_ai.evaluation.score.value": float(value)})})
    return events


def run_spans(head: Mapping[str, Any], case_id: str, run: RunRecord) -> list[dict[str, Any]]:
    """The spans of one run: invoke_agent, then its chat and execute_tool children."""
    trace = run.get("trace") or {}
    trial = int(run.get("trial") or 0)
    tid = trace_id_of(str(head.get("run_id")), case_id, trial)
    origin = _origin(trace, head.get("created_at"))
    end = _ns(origin, trace.get("latency_s"))
    root = _span_id(tid, 0)
    replies = trace.get("replies") or []
    agent = {"traceId": tid, "spanId": root, "name": f"invoke_agent {head.get('suite') or 'agent-eval'}", "kind": 1,
             "startTimeUnixNano": str(origin), "endTimeUnixNano": str(end), "attributes": _attrs({
                 "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": head.get("suite") or "agent-eval",
                 "gen_ai.request.model": head.get("model"),
                 "gen_ai.input.messages": _text_messages("user", trace.get("user_messages") or []),
                 "gen_ai.output.messages": _text_messages("assistant", replies),
                 "agent_eval.case_id": case_id, "agent_eval.trial": trial, "agent_eval.status": run.get("status")}),
             "events": _events(run, end)}
    if run.get("status") == "error" or trace.get("agent_error"):
        agent["status"] = {"code": STATUS_ERROR, "message": str(run.get("error") or trace.get("agent_error") or "")}
    spans = [agent]
    cursor = origin
    for i, call in enumerate(trace.get("llm_calls") or (), start=1):
        start = _ns(origin, call["t_start_s"]) if isinstance(call.get("t_start_s"), (int, float)) else cursor
        stop = _ns(start, call.get("latency_s"))
        cursor = stop
        model = call.get("model") or head.get("model")
        spans.append({"traceId": tid, "spanId": _span_id(tid, i), "parentSpanId": root, "name": f"chat {model}",
                      "kind": 3, "startTimeUnixNano": str(start), "endTimeUnixNano": str(stop), "attributes": _attrs({
                          "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                          "gen_ai.usage.input_tokens": call.get("prompt_tokens"),
                          "gen_ai.usage.output_tokens": call.get("completion_tokens")})})
    base = len(spans)
    for step in trace.get("steps") or ():
        start = _ns(origin, step.get("t_start_s"))
        n = int(step.get("step") or 0)
        output = step.get("output")
        span = {"traceId": tid, "spanId": _span_id(tid, base + n), "parentSpanId": root,
                "name": f"execute_tool {step.get('name')}", "kind": 1, "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(_ns(start, step.get("latency_s"))), "attributes": _attrs({
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": step.get("name"),
                    "gen_ai.tool.call.id": f"call_{n}", "gen_ai.tool.call.arguments": orjson.dumps(
                        step.get("args"), default=str).decode(),
                    "gen_ai.tool.call.result": output if isinstance(output, str) or output is None
                    else orjson.dumps(output, default=str).decode(),
                    "error.type": step.get("error"),
                    "agent_eval.executed": False if step.get("executed") is False else None})}
        if step.get("error"):
            span["status"] = {"code": STATUS_ERROR}
        spans.append(span)
    # latency_s leaves out waiting for the provider's rate limit: the root still spans all its children
    last = max(int(str(s["endTimeUnixNano"])) for s in spans)
    agent["endTimeUnixNano"] = str(max(end, last))
    return spans


def export_request(report: Mapping[str, Any], spans: list[dict[str, Any]]) -> dict[str, Any]:
    """One OTLP/JSON ExportTraceServiceRequest holding `spans` (of one run or several) of the report."""
    resource = {"attributes": _attrs({"service.name": "agent-eval", "agent_eval.run_id": report.get("run_id")})}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": SCOPE}, "spans": spans}]}]}


def export_requests(report: Report, run_bytes: Iterable[list[bytes]]) -> Iterator[dict[str, Any]]:
    """One OTLP/JSON ExportTraceServiceRequest per run of the report (its runs given as JSON bytes)."""
    for case, runs in zip(report["cases"], run_bytes, strict=True):
        for raw in runs:
            yield export_request(report, run_spans(report, str(case["id"]), orjson.loads(raw)))


def write_otel(report: Report, run_bytes: Iterable[list[bytes]], path: Path) -> None:
    """The report's runs as OTLP/JSON lines, written once to a temporary name and renamed."""
    with atomic_file(path) as f:
        for request in export_requests(report, run_bytes):
            f.write(orjson.dumps(request) + b"\n")
