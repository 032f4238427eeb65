"""The JSON report's one model: its schema version and keys, building it, reading it back with the
shape checks of report/shapes.py, and its exit code (docs/reference.md, "The JSON report").
"""
from __future__ import annotations

import re
import secrets
from datetime import datetime, UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import orjson

from agent_eval.errors import EXIT_ERROR, EXIT_FAILED, EXIT_PASSED, ConfigError
from agent_eval.redaction import redact_urls

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from agent_eval.records import CaseEntry, Report

SCHEMA_VERSION = 1
HEAD_KEYS = ("schema_version", "run_id", "created_at", "suite", "agent", "model", "cases_file",
             "settings", "summary")
"""The top-level keys written before `cases`, in file order."""
TAIL_KEYS = ("gate", "interrupted", "stopped_early", "stopped_at_budget", "exit_code")
"""The top-level keys written after `cases`, in file order."""


class ReportError(ConfigError):
    """A report cannot be read (unreadable, another schema, a key of the wrong type) or a gate is unknown."""


# ---------------------------------------------------------------- building


def new_run_id(now: datetime | None = None) -> str:
    """`YYYYmmdd-HHMMSS-<6 hex>`."""
    now = now or datetime.now()
    return now.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


_RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")


def is_run_id(value: object) -> bool:
    """True when value has the form of a run id, `YYYYmmdd-HHMMSS-<6 hex>` (so it is safe as a file name)."""
    return isinstance(value, str) and _RUN_ID.fullmatch(value) is not None


def now_iso() -> str:
    """The current UTC time as the report's `created_at`."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def exit_code(entries: list[CaseEntry], regression: bool = False, stopped_early: bool = False,
              stopped_at_budget: bool = False) -> int:
    """In order: 1 for a failed case, a regression or a stop by -x; 2 for an error, all skipped, or a stop
    at the --max-cost budget (not a pass: cases were left unrun); else 0."""
    statuses = [e["status"] for e in entries]
    if "failed" in statuses or regression or stopped_early:
        return EXIT_FAILED
    if stopped_at_budget or "error" in statuses or (statuses and all(s == "skipped" for s in statuses)):
        return EXIT_ERROR
    return EXIT_PASSED


def build_report(*, run_id: str, created_at: str, suite: str | None, agent: str | None, model: str | None,
                 cases_file: str, settings: dict[str, Any], summary: dict[str, Any], cases: list[CaseEntry],
                 interrupted: bool, stopped_early: bool = False, stopped_at_budget: bool = False) -> Report:
    """A report with every top-level key in file order; `gate` is None and `exit_code` the cases' verdict.
    Each case entry gains `flaky` (mixed outcomes among its runs that did not end in error)."""
    from agent_eval.score.metrics import is_flaky

    for case in cases:
        case["flaky"] = is_flaky(case.get("runs") or [])
    return {
        "schema_version": SCHEMA_VERSION, "run_id": run_id, "created_at": created_at, "suite": suite,
        "agent": redact_urls(agent), "model": model, "cases_file": cases_file, "settings": settings, "summary": summary,
        "cases": cases, "gate": None, "interrupted": interrupted, "stopped_early": stopped_early,
        "stopped_at_budget": stopped_at_budget,
        "exit_code": exit_code(cases, stopped_early=stopped_early, stopped_at_budget=stopped_at_budget),
    }


# ---------------------------------------------------------------- reading

def load_report(path: str | Path, *shapes: TypeAdapter[Any]) -> Report:
    """Read the JSON report at `path` and check the keys of each shape (report/shapes.py; by default what
    `compare` reads); ReportError (exit 2) naming the key path when it does not fit."""
    from agent_eval.report.shapes import COMPARE_SHAPE, shape_problem

    try:
        report = orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise ReportError(f"{path}: cannot read the report ({exc.strerror or exc}); check the path.") from None
    except orjson.JSONDecodeError as exc:
        raise ReportError(f"{path} is not a JSON report ({exc}); pass a <run_id>.json written by "
                          "`agent-eval run`.") from None
    if not isinstance(report, dict):
        raise ReportError(f"{path}: not an agent-eval report (the top level is not an object).")
    version = report.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ReportError(f"{path}: schema_version {version!r} is not {SCHEMA_VERSION}, the version this "
                          "agent-eval reads; re-run the suite with this version to get a comparable report.")
    if not isinstance(report.get("cases"), list):
        raise ReportError(f"{path}: the report has no \"cases\" list (no `cases` key with the runs); it is "
                          "incomplete or not an agent-eval report.")
    problem = next(filter(None, (shape_problem(report, shape) for shape in shapes or (COMPARE_SHAPE,))), None)
    if problem:
        raise ReportError(f"{path}: {problem}; the report is damaged or was not written by agent-eval "
                          "(re-run the suite, or fix that key).")
    return cast("Report", report)
