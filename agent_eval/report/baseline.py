"""The `--baseline` of a run: finding the baseline report, validating it up front, and gating against it."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from agent_eval.records import Report
from agent_eval.errors import ConfigError


SHOWN_REJECTED = 3  # the earlier runs named, with why, when none of them can be the baseline


class NoEarlierRun(ConfigError):
    """`--baseline last` with no earlier run of this case file and agent at all: `run` and `score` warn and
    go on ungated (the report's gate is null); a caller that cannot go on lets it exit 2 as a ConfigError."""


def pick_last(output_dir: Path, cases_file: Path, agent_name: str, selected: list[str], created_at: str,
              exclude_run_id: str | None = None) -> Path:
    """`run --baseline last`, before anything runs: the report of the newest earlier run of this case file
    and agent that could be gated against (report/baseline_rule.py) and selected every case selected now.
    NoEarlierRun when there is no earlier run; ConfigError (exit 2) naming why for the newest three when
    none qualifies."""
    from agent_eval.report.baseline_rule import why_not_baseline
    from agent_eval.report.files import history_path_of, report_path_of
    from agent_eval.report.history import earlier_runs

    db = history_path_of(output_dir)
    try:
        runs = earlier_runs(db, cases_file, agent_name, created_at, exclude_run_id)
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"--baseline last: cannot read the run history {db} ({exc}); pass --baseline "
                          "REPORT with a report file instead.") from None
    if not runs:
        raise NoEarlierRun(f"--baseline last: {db} holds no earlier run of {cases_file} with agent {agent_name}, "
                           "so this run is not gated; the next run with --baseline last gates against it.")
    wanted = set(selected)
    rejected = []
    for row in runs:
        why = why_not_baseline(row, wanted)
        if why is None:
            return report_path_of(output_dir, str(row["run_id"]))
        rejected.append(f"{row['run_id']}: {why}")
    more = len(rejected) - SHOWN_REJECTED
    named = "; ".join(rejected[:SHOWN_REJECTED]) + (f"; and {more} older run(s)" if more > 0 else "")
    raise ConfigError(f"--baseline last: none of the {len(runs)} earlier run(s) of {cases_file} with agent "
                      f"{agent_name} in {db} can be gated against ({named}). A baseline is a finished run "
                      f"with no case in error, no replay miss and a case not skipped, that selected the "
                      f"{len(selected)} case(s) selected now: run the suite once without --baseline, or "
                      "pass --baseline REPORT.")


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
