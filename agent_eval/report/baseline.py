"""The `--baseline` of a run: finding the baseline report, validating it up front, and gating against it."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from agent_eval.records import Report
from agent_eval.errors import ConfigError


LAST_RULE = ("was not interrupted, stopped early (-x), stopped at a budget (--max-cost) or rescored, did not use "
             "--lf, and selected every case selected now")


def pick_last(output_dir: Path, cases_file: Path, agent_name: str, selected: list[str], created_at: str,
              exclude_run_id: str | None = None) -> Path:
    """`run --baseline last`, before anything runs: the report of the newest earlier comparable run of this
    case file and agent (see history.baseline_last); ConfigError (exit 2) saying why when there is none."""
    from agent_eval.report.files import history_path_of, report_path_of
    from agent_eval.report.history import baseline_last

    db = history_path_of(output_dir)
    try:
        found = baseline_last(db, cases_file, agent_name, created_at, exclude_run_id, selected) \
            if db.exists() else None
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"--baseline last: cannot read the run history {db} ({exc}); pass --baseline "
                          "REPORT with a report file instead.") from None
    if found is None:
        raise ConfigError(f"--baseline last: {db} holds no earlier run of {cases_file} with agent "
                          f"{agent_name} that {LAST_RULE} ({len(selected)} case(s)), so there is nothing "
                          "comparable to gate against. Run the suite once without --baseline (and without "
                          "--lf, -x or --filter narrower than now), or pass --baseline REPORT.")
    return report_path_of(output_dir, found)


def validate_baseline(path: Path | None, gate_specs: list[str]) -> None:
    """Exit-2 checks before anything runs: the baseline report must be readable and the gates known."""
    from agent_eval.report.gate import parse_gate_spec
    from agent_eval.report.model import ReportError, load_report

    try:
        for spec in gate_specs:
            parse_gate_spec(spec)
        if path is not None:
            load_report(path)
    except ReportError as exc:
        raise ConfigError(f"--baseline: {exc}") from None


def gate_against(path: Path, report: Report, gate_specs: list[str]) -> dict[str, Any]:
    """The gate of `report` against the baseline report at `path`."""
    from agent_eval.report.gate import compare_reports, parse_gate_spec
    from agent_eval.report.model import ReportError, load_report

    try:
        gates = [parse_gate_spec(spec) for spec in gate_specs] or None
        return compare_reports(load_report(path), report, gates)
    except ReportError as exc:
        raise ConfigError(f"--baseline: {exc}") from None
