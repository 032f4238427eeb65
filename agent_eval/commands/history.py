"""`agent-eval history`: the recent runs of a suite, with a sparkline per metric."""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.text import Text

from agent_eval.errors import EXIT_ERROR, ConfigError
from agent_eval.report.case_history import case_runs, render_case_history
from agent_eval.report.files import history_path_of
from agent_eval.report.history import METRIC_COLUMNS, recent_runs, render_history


def history_main(cases: str | Path, output_dir: str | Path, last: int, metrics: Sequence[str],
                 console: Console) -> int:
    """`agent-eval history`: print the recent runs of the suite in `cases`. Returns the exit code."""
    unknown = [m for m in metrics if m not in METRIC_COLUMNS]
    if unknown:
        console.print(Text.assemble((f"unknown metric {', '.join(unknown)}", "red"),
                                    f": choose from {', '.join(METRIC_COLUMNS)}"), highlight=False)
        return EXIT_ERROR
    db = history_path_of(Path(output_dir))
    try:
        rows = recent_runs(db, cases, last)
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"cannot read the run history {db} ({exc}); the next `agent-eval run` moves a "
                          "damaged file aside and starts a new one.") from None
    if not rows:
        console.print(f"no runs of {cases} recorded in {db} yet: `agent-eval run` records each run there. "
                      "History is kept per case file: pass the --cases that your runs used (and their "
                      "--output-dir).", highlight=False, markup=False)
        return 0
    render_history(rows, metrics, console)
    return 0


def case_history_main(cases: str | Path, output_dir: str | Path, case_id: str, last: int,
                      console: Console) -> int:
    """Print one case's recent results; exit 0 (a note when none is recorded), 2 on an unreadable history."""
    db = history_path_of(Path(output_dir))
    try:
        rows = case_runs(db, cases, case_id, last)
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"cannot read the run history {db} ({exc}); the next `agent-eval run` moves a "
                          "damaged file aside and starts a new one.") from None
    if not rows:
        console.print(Text(f"no run of {cases} recorded in {db} holds case {case_id!r}: check the id "
                           "(`agent-eval list`), --cases and --output-dir."))
        return 0
    render_case_history(case_id, rows, console)
    return 0
