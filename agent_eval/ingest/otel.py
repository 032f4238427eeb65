"""OpenTelemetry traces as cases (`import otel`) and as runs (`score`): the trace→case and trace→run maps."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from agent_eval.records import Case, Step, Trace
from agent_eval.ingest.genai import Recorded, read_trace
from agent_eval.ingest.otlp import read_spans
from agent_eval.ingest.records import Unmappable, conversation

if TYPE_CHECKING:
    from agent_eval.suite.tools import ToolSet

IMPORTED_TAG = "imported"
# What a recording says of the agent, kept in a case's metadata; `import` lifts a value every case shares
# into the written suite block (ingest/importer.py).
RECORDED_MODEL = "recorded_model"
RECORDED_SYSTEM_PROMPT = "recorded_system_prompt"


def case_id_of(trace_id: str) -> str:
    """`trace-<first 12 hex digits>` of a lower-case hex trace id."""
    return f"trace-{trace_id[:12]}"


def read_recorded(path: Path, logs: Path | None = None) -> tuple[list[Recorded], list[Unmappable]]:
    """Every conversation of an OTLP file (JSON or protobuf) that records an agent run, earliest first,
    and the records that do not; `logs` adds the GenAI content of an OTLP logs file to its spans."""
    from agent_eval.ingest.conventions import to_genai
    from agent_eval.ingest.stitch import stitch

    traces, bad = read_spans(path)
    if logs is not None:
        from agent_eval.ingest.otlp_logs import join_logs, read_logs

        records, log_bad = read_logs(logs)
        bad.extend(log_bad)
        bad.extend(join_logs(traces, records))
    traces = {tid: sorted(to_genai(spans), key=lambda s: (s.start_ns, s.end_ns)) for tid, spans in traces.items()}
    found: list[Recorded] = []
    for trace_ids, spans in stitch({tid: spans for tid, spans in traces.items() if spans}):
        recorded = read_trace(trace_ids[0], spans)
        if isinstance(recorded, str):
            bad.append(Unmappable(f"trace {trace_ids[0]}", recorded))
        else:
            recorded.trace_ids = trace_ids
            found.append(recorded)
    found.sort(key=lambda r: r.start_ns)
    return found, bad


def collapse(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls in order with consecutive identical ones (same name, JSON-equal args) collapsed into one."""
    out: list[dict[str, Any]] = []
    for call in calls:
        if out and out[-1].get("name") == call.get("name") and _same(out[-1].get("args"), call.get("args")):
            continue
        out.append(call)
    return out


def _same(a: Any, b: Any) -> bool:
    return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)


def recorded_case(rec: Recorded) -> tuple[Case, list[str]]:
    """The case a recorded conversation becomes, and notes on what it could not keep (malformed arguments)."""
    case: Case = {"id": rec.case_id or case_id_of(rec.trace_id), **conversation(rec.user_messages)}
    notes = []
    recorded: list[dict[str, Any]] = []
    expected: list[dict[str, Any]] = []
    for i, step in enumerate(rec.steps):
        entry: dict[str, Any] = {"name": step.name}
        if isinstance(step.args, dict):
            entry["args"] = step.args
        elif step.args is not None and step.executed:
            notes.append(f"call {i} ({step.name}) has {step.args_problem}; its args are left out")
        if step.executed:
            expected.append(dict(entry))
        else:  # a call the agent never ran is a recorded mistake, never an expected call
            entry["executed"] = False
        recorded.append(entry if step.args_problem is None else {**entry, "args": step.args})
    case["expected_tools"] = collapse(expected)
    case["trajectory"] = "unordered" if expected else "subset"
    case["tags"] = [IMPORTED_TAG]
    metadata: dict[str, Any] = {"trace_id": rec.trace_id}
    if len(rec.trace_ids) > 1:
        metadata["trace_ids"] = list(rec.trace_ids)
    if rec.answer is not None:
        metadata["recorded_answer"] = rec.answer
    metadata["recorded_replies"] = list(rec.replies)
    metadata["recorded_calls"] = recorded
    metadata["recorded_usage"] = {"prompt_tokens": rec.input_tokens, "completion_tokens": rec.output_tokens}
    model = next((i.model for i in rec.inferences if i.model), None)
    if model is not None:
        metadata[RECORDED_MODEL] = model
    if rec.system_prompt is not None:
        metadata[RECORDED_SYSTEM_PROMPT] = rec.system_prompt
    if rec.framework_calls:  # the framework's own (handoffs): neither expected nor a mistake
        metadata["framework_calls"] = _framework_calls(rec)
    case["metadata"] = metadata
    return case, notes


def otel_cases(path: Path, logs: Path | None = None) -> tuple[list[Case], list[Unmappable], list[str]]:
    """The cases of an OTLP file, its unmappable records, and notes on what cases left out."""
    recorded, bad = read_recorded(path, logs)
    cases: list[Case] = []
    notes: list[str] = []
    seen: dict[str, str] = {}
    # agent-eval's own runs: one case per agent_eval.case_id, from its lowest trial; the others are noted
    recorded = sorted(recorded, key=lambda r: (r.case_id is None, r.trial if r.trial is not None else 0))
    own: set[str] = set()
    for rec in recorded:
        if rec.case_id is not None and rec.case_id in own:
            notes.append(f"trace {rec.trace_id}: another trial of {rec.case_id}"
                         + (f" (trial {rec.trial})" if rec.trial is not None else ""))
            continue
        case, case_notes = recorded_case(rec)
        if rec.case_id is not None:
            own.add(rec.case_id)
        if case["id"] in seen:
            bad.append(Unmappable(f"trace {rec.trace_id}", f"its case id {case['id']} is already taken by "
                                  f"trace {seen[case['id']]}"))
            continue
        seen[case["id"]] = rec.trace_id
        cases.append(case)
        notes.extend(f"trace {rec.trace_id}: {note}" for note in case_notes)
        notes.extend(rec.warnings)
    return cases, bad, notes


def _seconds(ns: int | None, origin: int | None) -> float | None:
    return None if ns is None or origin is None else (ns - origin) / 1e9


def recorded_run_trace(rec: Recorded, tools: ToolSet | None = None) -> Trace:
    """The report trace of a recorded run: times from the spans, no env (nothing was recorded of it).

    With the suite's tools, a call is flagged `invalid_args` as a run would flag it: an unknown tool,
    or arguments its schema rejects.
    """
    origin = rec.start_ns
    steps: list[Step] = []
    for i, step in enumerate(rec.steps):
        invalid = step.args_problem
        args = step.args if isinstance(step.args, dict) else {} if step.args is None else step.args
        if invalid is None and tools is not None and tools.names:
            invalid = "unknown tool" if not tools.has(step.name) else tools.validate(step.name, args)
        steps.append({
            "step": i, "name": step.name, "args": args, "output": _observation(step.output),
            "error": step.error, "error_traceback": None, "invalid_args": invalid,
            "latency_s": _seconds(step.end_ns, step.start_ns),
            "t_start_s": _seconds(step.start_ns, origin), "executed": step.executed,
        })
    latency = _seconds(rec.end_ns, origin)
    first_call = min((s.start_ns for s in rec.steps if s.start_ns is not None), default=None)
    return {
        "user_messages": list(rec.user_messages),
        "replies": list(rec.replies),
        "final_answer": rec.answer,
        "cards": [],
        "final_agent": None,
        "stop_reason": "agent_error" if rec.agent_error else "completed",
        "agent_error": rec.agent_error,
        "agent_error_traceback": None,
        "steps": steps,
        "llm_calls": [{"latency_s": _seconds(i.end_ns, i.start_ns), "prompt_tokens": i.input_tokens,
                       "completion_tokens": i.output_tokens, "model": i.model,
                       "t_start_s": _seconds(i.start_ns, origin)} for i in rec.inferences],
        "latency_s": latency,
        "ttfa_s": _seconds(first_call, origin) if first_call is not None else latency,
        "final_env_diff": [],
        "started_at_unix_ns": origin,
        "trace_id": rec.trace_id,
        "has_env": False,  # a trace records no environment: env checks are skipped, now and when re-scored
        "framework_calls": _framework_calls(rec),
    }


def _framework_calls(rec: Recorded) -> list[dict[str, Any]]:
    return [{"name": call.name, "args": call.args} for call in rec.framework_calls]


def _observation(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    from agent_eval.suite.tools import ToolSet

    return ToolSet.observation(value)
