"""Recorded runs for `score`: read from OTLP/JSON traces or from our own report or journal, and matched to cases."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from agent_eval.records import Case, RunRecord, Trace
from agent_eval.errors import ConfigError
from agent_eval.ingest.records import Unmappable, read_bytes

if TYPE_CHECKING:
    from agent_eval.suite.tools import ToolSet


@dataclass
class Recording:
    """One recorded run: its frozen trace (the report's shape), where it came from, and what it can be matched by."""

    label: str  # "trace <id>" or "case <id> trial <n>"
    trace: Trace
    case_id: str | None = None  # agent-eval: the case it was a run of
    trial: int | None = None
    trace_id: str | None = None  # otel: the lower-case hex trace id
    error: str | None = None  # the run's infrastructure error, for an agent-eval run
    has_env: bool = False  # whether `final_env_diff` records the env (never for otel)


def is_agent_eval_file(data: bytes) -> bool:
    """True for one of our JSON reports or journals (and not an OTLP file)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        first = data.split(b"\n", 1)[0]
        try:
            doc = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        return isinstance(doc, dict) and "run_id" in doc and "settings" in doc
    return isinstance(doc, dict) and "cases" in doc and "resourceSpans" not in doc


def otel_recordings(path: Path, tools: ToolSet | None, logs: Path | None = None,
                    ) -> tuple[list[Recording], list[Unmappable], str | None]:
    """The conversations of an OTLP file as recordings, the unmappable records, and the model most asked for."""
    from collections import Counter

    from agent_eval.ingest.otel import read_recorded, recorded_run_trace

    found, bad = read_recorded(path, logs)
    models = Counter(i.model for rec in found for i in rec.inferences if i.model)
    out = [Recording(f"trace {rec.trace_id}", recorded_run_trace(rec, tools), trace_id=rec.trace_id,
                     case_id=rec.case_id, trial=rec.trial) for rec in found]
    bad.extend(Unmappable(w.split(":", 1)[0], w.split(":", 1)[1].strip(), left_out=False)
               for rec in found for w in rec.warnings)
    return out, bad, models.most_common(1)[0][0] if models else None


def _journal_runs(path: Path, bad: list[Unmappable]) -> list[tuple[str | int, int, RunRecord]]:
    """A journal's runs (a trial's latest line wins); a run of the wrong shape is reported and left out."""
    from agent_eval.report.shapes import SCORE_RUN_SHAPE, shape_problem
    from agent_eval.run.journal import scan_runs

    latest: dict[tuple[str | int, int], RunRecord] = {}
    for case_id, trial, run, _ in scan_runs(path, strict=False):
        problem = shape_problem(run, SCORE_RUN_SHAPE, "run")
        if problem is not None or not isinstance(case_id, (str, int)) or not isinstance(trial, int):
            bad.append(Unmappable(f"case {case_id} trial {trial}", problem or "not a journaled run"))
        else:
            latest[(case_id, trial)] = run
    return [(case_id, trial, run) for (case_id, trial), run in latest.items()]


def agent_eval_recordings(path: Path) -> tuple[list[Recording], list[Unmappable], dict[str, Any]]:
    """The runs of one of our JSON reports or journals, the runs left out, and the run's agent and model."""
    from agent_eval.report.model import load_report
    from agent_eval.report.shapes import SCORE_SHAPE

    data = read_bytes(path)
    bad: list[Unmappable] = []
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = None
    head: Mapping[str, Any]
    runs: Sequence[tuple[str | int, int, Mapping[str, Any]]]
    if isinstance(doc, dict):
        report = load_report(path, SCORE_SHAPE)
        head = report
        runs = [(entry["id"], run.get("trial", j), run) for entry in report["cases"]
                for j, run in enumerate(entry.get("runs") or [])]
    else:
        try:
            first = orjson.loads(data.split(b"\n", 1)[0])
        except orjson.JSONDecodeError:
            first = None
        if not isinstance(first, dict) or "run_id" not in first:
            raise ConfigError(f"{path} is neither an agent-eval JSON report nor a journal (<run_id>.jsonl); "
                              "pass --format otel for OpenTelemetry traces.")
        head = first
        runs = _journal_runs(path, bad)
    out = []
    for case_id, trial, run in runs:
        trace = run["trace"]
        trace_id = trace.get("trace_id")
        out.append(Recording(f"case {case_id} trial {trial}", trace, case_id=str(case_id), trial=trial,
                             trace_id=trace_id if isinstance(trace_id, str) else None, error=run.get("error"),
                             has_env=trace.get("has_env") is not False))
    settings = given if isinstance(given := head.get("settings"), dict) else {}
    return out, bad, {"agent": head.get("agent") or settings.get("agent"),
                      "model": head.get("model") or settings.get("model")}


def match(recordings: list[Recording], cases: list[Case]) -> tuple[dict[str, list[Recording]], list[Recording]]:
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


def inspect_recordings(path: Path) -> tuple[list[Recording], list[Unmappable], str | None]:
    """The samples of an Inspect log as recordings (each epoch a trial), and the model most used."""
    from collections import Counter

    from agent_eval.ingest.inspect_runs import log_recordings

    runs, bad = log_recordings(path)
    models = Counter(c["model"] for _, _, _, trace in runs for c in trace["llm_calls"] if c.get("model"))
    out = [Recording(label, trace, case_id=sample_id, trial=trial) for label, sample_id, trial, trace in runs]
    return out, bad, models.most_common(1)[0][0] if models else None
