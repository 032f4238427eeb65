"""Recorded runs for `score`: read from OTLP/JSON traces or from our own report or journal, and matched to cases."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agent_eval.errors import ConfigError
from agent_eval.ingest.records import Unmappable, read_bytes

FORMATS = ("otel", "agent-eval")


@dataclass
class Recording:
    """One recorded run: its frozen trace (the report's shape), where it came from, and what it can be matched by."""

    label: str  # "trace <id>" or "case <id> trial <n>"
    trace: dict[str, Any]
    case_id: str | None = None  # agent-eval: the case it was a run of
    trial: int | None = None
    trace_id: str | None = None  # otel: the lower-case hex trace id
    error: str | None = None  # the run's infrastructure error, for an agent-eval run
    has_env: bool = False  # whether `final_env_diff` records the env (never for otel)


def detect_format(path: Path) -> str:
    """`agent-eval` for one of our JSON reports or journals, else `otel`."""
    data = read_bytes(path)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        first = data.split(b"\n", 1)[0]
        try:
            doc = orjson.loads(first)
        except orjson.JSONDecodeError:
            return "otel"
        return "agent-eval" if isinstance(doc, dict) and "run_id" in doc and "settings" in doc else "otel"
    return "agent-eval" if isinstance(doc, dict) and "cases" in doc and "resourceSpans" not in doc else "otel"


def otel_recordings(path: Path, tools: Any) -> tuple[list[Recording], list[Unmappable], str | None]:
    """The traces of an OTLP/JSON file as recordings, the unmappable records, and the model most asked for."""
    from collections import Counter

    from agent_eval.ingest.otel import read_recorded, recorded_run_trace

    found, bad = read_recorded(path)
    models = Counter(i.model for rec in found for i in rec.inferences if i.model)
    out = [Recording(f"trace {rec.trace_id}", recorded_run_trace(rec, tools), trace_id=rec.trace_id) for rec in found]
    return out, bad, models.most_common(1)[0][0] if models else None


def _typed(value: Any, kind: type | tuple, path: Path, where: str) -> Any:
    if value is not None and not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ConfigError(f"{path}: the report's {where} must be {names}, not {type(value).__name__}; "
                          "is it an agent-eval report?")
    return value


def _report_runs(path: Path, doc: dict) -> list[tuple[str, int, dict]]:
    out = []
    for i, entry in enumerate(_typed(doc.get("cases"), list, path, "cases") or []):
        _typed(entry, dict, path, f"cases[{i}]")
        case_id = _typed(entry.get("id"), str, path, f"cases[{i}].id")
        for j, run in enumerate(_typed(entry.get("runs"), list, path, f"cases[{i}].runs") or []):
            _typed(run, dict, path, f"cases[{i}].runs[{j}]")
            trial = _typed(run.get("trial"), int, path, f"cases[{i}].runs[{j}].trial")
            out.append((case_id, j if trial is None else trial, run))
    return out


def agent_eval_recordings(path: Path) -> tuple[list[Recording], list[Unmappable], dict[str, Any]]:
    """The runs of one of our JSON reports or journals (a trial's latest journal line wins), and its head."""
    data = read_bytes(path)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, dict):
        head = doc
        runs = _report_runs(path, doc)
    else:
        from agent_eval.run.journal import scan_runs

        try:
            head = orjson.loads(data.split(b"\n", 1)[0])
        except orjson.JSONDecodeError:
            head = None
        if not isinstance(head, dict) or "run_id" not in head:
            raise ConfigError(f"{path} is neither an agent-eval JSON report nor a journal (<run_id>.jsonl); "
                              "pass --format otel for OpenTelemetry traces.")
        latest = {(case_id, trial): run for case_id, trial, run, _ in scan_runs(path)}
        runs = [(case_id, trial, run) for (case_id, trial), run in latest.items()]
    out, bad = [], []
    for case_id, trial, run in runs:
        label = f"case {case_id} trial {trial}"
        trace = run.get("trace")
        if case_id is None or not isinstance(trace, dict):
            bad.append(Unmappable(label, "the run has no trace (a report written with traces left out?)"))
            continue
        error = run.get("error") if isinstance(run.get("error"), str) else None
        out.append(Recording(label, trace, case_id=case_id, trial=trial,
                             trace_id=trace.get("trace_id") if isinstance(trace.get("trace_id"), str) else None,
                             error=error, has_env=trace.get("has_env") is not False))
    settings = head.get("settings") if isinstance(head.get("settings"), dict) else {}
    return out, bad, {"agent": head.get("agent") or settings.get("agent"),
                      "model": head.get("model") or settings.get("model")}


def match(recordings: list[Recording], cases: list[dict]) -> tuple[dict[str, list[Recording]], list[Recording]]:
    """Recordings by the id of the case they belong to (by metadata.trace_id, else case id), and the rest."""
    from agent_eval.ingest.otel import case_id_of

    by_trace_id: dict[str, str] = {}
    ids = {c["id"] for c in cases}
    for case in cases:
        trace_id = (case.get("metadata") or {}).get("trace_id")
        if isinstance(trace_id, str):
            by_trace_id.setdefault(trace_id.lower(), case["id"])
    matched: dict[str, list[Recording]] = {}
    unmatched = []
    for rec in recordings:
        case_id = by_trace_id.get(rec.trace_id) if rec.trace_id else None
        if case_id is None and rec.case_id in ids:
            case_id = rec.case_id
        if case_id is None and rec.trace_id:
            case_id = next((i for i in (rec.trace_id, case_id_of(rec.trace_id)) if i in ids), None)
        if case_id is None:
            unmatched.append(rec)
        else:
            matched.setdefault(case_id, []).append(rec)
    return matched, unmatched
