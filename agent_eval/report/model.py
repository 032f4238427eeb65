"""The JSON report's one model: its schema version and keys, building it, reading it back with shape
checks, and its exit code (docs/reference.md, "The JSON report").

A reader checks only the keys its command uses (a *shape*). A missing key or null reads as null, so
reports written before a key was added still load; unknown keys are ignored; a key present with the
wrong type is a ReportError (exit 2) naming the file and the key's path, such as `cases[2].runs[0].trace`.
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

# A shape is a type (or a tuple of types), a dict {key: shape} for an object, or a one-item list [shape]
# for a list of such items. A key ending in "!" must be present and not null.
NUMBER = (int, float)
_CHECK = {"name": str, "passed": bool, "detail": str}
_RUN_SCORES = {"trial": int, "status": str, "success": (bool, int), "metrics": dict, "scorers": dict}
_CASE_GATE = {"id!": (str, int), "status": str, "pass_rate": NUMBER, "runs": [_RUN_SCORES]}

COMPARE_SHAPE: dict[str, Any] = {"run_id": str, "suite": str, "agent": str, "model": str,
                                 "settings": {"repeat": int}, "summary": dict, "cases!": [_CASE_GATE]}
"""What `compare` and `--baseline` read."""

_DIFF_ENTRY = {"path!": list}
_TRACE = {"stop_reason!": str, "agent_error": str, "steps": [{"name!": str}], "llm_calls!": [dict], "replies": [str],
          "user_messages": [str], "final_env_diff": [_DIFF_ENTRY]}
RESCORE_SHAPE: dict[str, Any] = {
    "run_id": str, "suite": str, "agent": str, "model": str, "cases_file": str, "interrupted": bool,
    "settings": {"repeat": int, "threshold": NUMBER, "concurrency": int}, "summary": {"user_sim": dict},
    "cases!": [{"id!": (str, int), "status": str, "skip_reason": str,
                "runs": [{"trial!": int, "error": str, "checks": [_CHECK], "trace!": _TRACE}]}],
}
"""What `rescore` reads: the runs' traces, which it scores again."""

SCORE_RUN_SHAPE: dict[str, Any] = {"trial": int, "error": str, "trace!": _TRACE}
SCORE_SHAPE: dict[str, Any] = {"agent": str, "model": str, "settings": {"agent": str, "model": str},
                               "cases!": [{"id!": (str, int), "runs": [SCORE_RUN_SHAPE]}]}
"""What `score --format agent-eval` reads: the runs' traces, scored against a case file (a journal's runs
are checked against SCORE_RUN_SHAPE)."""

VIEW_SHAPE: dict[str, Any] = {"suite": str, "run_id": str, "settings": dict, "summary": dict,
                              "cases!": [{"status": str, "pass_rate": NUMBER, "runs": [
                                  {"status": str, "metrics": dict, "trace": {"steps": [dict]}}]}]}
"""What `view` reads before it embeds the report in the page."""


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false", int: "a number",
             float: "a number"}
    return names.get(type(value), type(value).__name__)


def _type_names(types: Any) -> str:
    shown = {dict: "an object", list: "a list", str: "a string", bool: "true or false", int: "a whole number",
             float: "a number"}
    names = [shown.get(t, t.__name__) for t in (types if isinstance(types, tuple) else (types,))]
    return " or ".join(dict.fromkeys(names))


def shape_problem(value: Any, shape: Any, path: str) -> str | None:
    """The first place where `value` does not fit `shape`, as "PATH must be ..., found ..."; None when it fits."""
    if value is None:
        return None
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{path or 'the top level'} must be an object, found {_kind(value)}"
        for key, sub in shape.items():
            name = key.rstrip("!")
            where = f"{path}.{name}" if path else name
            if value.get(name) is None:
                if key.endswith("!"):
                    return f"{where} is missing"
                continue
            problem = shape_problem(value[name], sub, where)
            if problem:
                return problem
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{path} must be a list, found {_kind(value)}"
        for index, item in enumerate(value):
            problem = shape_problem(item, shape[0], f"{path}[{index}]")
            if problem:
                return problem
        return None
    wanted = shape if isinstance(shape, tuple) else (shape,)
    is_bool_for_number = isinstance(value, bool) and bool not in wanted and dict not in wanted
    if not isinstance(value, wanted) or is_bool_for_number:
        return f"{path} must be {_type_names(shape)}, found {_kind(value)}"
    return None


def load_report(path: str | Path, shape: dict[str, Any] = COMPARE_SHAPE) -> Report:
    """Read the JSON report at `path` and check the keys of `shape`; ReportError (exit 2) when it does not fit."""
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
    problem = shape_problem(report, shape, "")
    if problem:
        raise ReportError(f"{path}: {problem}; the report is damaged or was not written by agent-eval "
                          "(re-run the suite, or fix that key).")
    return cast("Report", report)
