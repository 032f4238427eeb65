"""The run history: <output-dir>/history.sqlite, `agent-eval history`, `--baseline last`."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from rich import box
from rich.console import Console
from rich.table import Table

from agent_eval.records import Report, split_case_file
from agent_eval.report.fmt import format_value
from agent_eval.score.metric_registry import SUITE_METRIC_TABLE

# Headline metrics stored as columns; each is a key of the report's summary.
METRIC_COLUMNS = tuple(m.name for m in SUITE_METRIC_TABLE if m.in_history)
DEFAULT_METRICS = tuple(m.name for m in SUITE_METRIC_TABLE if m.history_column)
SPARKS = "▁▂▃▅▇"
# Short column headers, so the default metrics fit beside the full run_id in a narrow terminal.
SHORT_NAMES = {m.name: m.short for m in SUITE_METRIC_TABLE if m.short}

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, created_at TEXT, suite TEXT, cases_file TEXT, agent TEXT, model TEXT,
  git_commit TEXT, exit_code INTEGER, interrupted INTEGER, stopped_early INTEGER DEFAULT 0, rescored_from TEXT,
  stopped_at_budget INTEGER DEFAULT 0, last_failed INTEGER DEFAULT 0, partial INTEGER DEFAULT 0,
  {", ".join(f"{m} REAL" for m in METRIC_COLUMNS)},
  summary_json TEXT
);
CREATE TABLE IF NOT EXISTS case_results (
  run_id TEXT, case_id TEXT, status TEXT, pass_rate REAL, PRIMARY KEY (run_id, case_id)
);
CREATE INDEX IF NOT EXISTS runs_by_file ON runs (cases_file, created_at);
"""


@contextmanager
def _connect(db_path: str | Path) -> Iterator[sqlite3.Connection]:
    """The history database, made or brought up to date when needed, and closed when the block ends."""
    Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(db_path))
    try:
        conn.row_factory = sqlite3.Row
        conn.executescript(_SCHEMA)
        columns = {r["name"] for r in conn.execute("PRAGMA table_info(runs)")}
        # A file from before -x, --max-cost, rescore rows, and the last_failed/partial marks gets their columns.
        for name, kind in (("stopped_early", "INTEGER DEFAULT 0"), ("stopped_at_budget", "INTEGER DEFAULT 0"),
                           ("rescored_from", "TEXT"), ("last_failed", "INTEGER DEFAULT 0"),
                           ("partial", "INTEGER DEFAULT 0")):
            if name not in columns:
                conn.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
        # A metric row added since the file was made (a plugin's, a new built-in one) gets its column too.
        for name in METRIC_COLUMNS:
            if name not in columns:
                conn.execute(f"ALTER TABLE runs ADD COLUMN {name} REAL")
        yield conn
    finally:
        conn.close()


def normalize_cases_file(cases_file: str | Path | None) -> str | None:
    """The key runs of one suite share: the case file's resolved path."""
    return None if cases_file is None else str(Path(cases_file).resolve())


def git_commit_of(path: str | Path) -> str | None:
    """HEAD of the git repository holding path, or None outside a repository or without git."""
    folder = Path(path).resolve()
    folder = folder if folder.is_dir() else folder.parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


def cases_in_file(cases_file: str | Path | None) -> int | None:
    """How many cases the case file holds now (None when it cannot be read): what `partial` compares with."""
    if cases_file is None:
        return None
    try:
        data = orjson.loads(Path(cases_file).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    split = split_case_file(data)
    return len(split[1]) if split is not None else None


def record_run(db_path: str | Path, report: Report, cases_file_git_commit: str | None,
               total_cases: int | None = None) -> None:
    """Add the report's run to the history; a resumed run (same run_id) replaces its earlier row.
    `total_cases` is the case file's size: a run that selected fewer (--filter, --lf) is `partial`."""
    summary = report.get("summary") or {}
    selected = len(report.get("cases") or [])
    row = {
        "run_id": report["run_id"], "created_at": report.get("created_at"), "suite": report.get("suite"),
        "cases_file": normalize_cases_file(report.get("cases_file")), "agent": report.get("agent"),
        "model": report.get("model"), "git_commit": cases_file_git_commit,
        "exit_code": report.get("exit_code"), "interrupted": int(bool(report.get("interrupted"))),
        "stopped_early": int(bool(report.get("stopped_early"))),
        "stopped_at_budget": int(bool(report.get("stopped_at_budget"))),
        "rescored_from": (report.get("settings") or {}).get("rescored_from"),
        "last_failed": int((report.get("settings") or {}).get("last_failed") is not None),
        "partial": int(total_cases is not None and selected < total_cases),
        **{m: _number(summary.get(m)) for m in METRIC_COLUMNS},
        "summary_json": orjson.dumps(summary).decode("utf-8"),
    }
    cases = [(report["run_id"], c["id"], c.get("status"), _number(c.get("pass_rate")))
             for c in report.get("cases") or []]
    with _connect(db_path) as conn, conn:  # the connection, then one transaction on it
        conn.execute("DELETE FROM case_results WHERE run_id = ?", (report["run_id"],))
        cols = ", ".join(row)
        conn.execute(f"INSERT OR REPLACE INTO runs ({cols}) VALUES ({', '.join('?' * len(row))})",
                     tuple(row.values()))
        conn.executemany("INSERT OR REPLACE INTO case_results VALUES (?, ?, ?, ?)", cases)


def record_run_or_recover(db_path: Path, report: Report, cases_file_git_commit: str | None,
                          warn: Callable[[str], None], total_cases: int | None = None) -> None:
    """record_run; a history file that is not a database is moved aside as
    `history.sqlite.corrupt-<timestamp>` (with a warning) and a new one is started."""
    try:
        record_run(db_path, report, cases_file_git_commit, total_cases)
        return
    except sqlite3.OperationalError:
        raise  # locked, read-only, disk full: the caller warns, the file is left alone
    except sqlite3.DatabaseError as exc:
        aside = db_path.with_name(f"{db_path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        os.replace(db_path, aside)
        warn(f"warning: {db_path} was not a usable database ({exc}); moved it to {aside} and started a new "
             "history.")
    record_run(db_path, report, cases_file_git_commit, total_cases)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def recent_runs(db_path: str | Path, cases_file: str | Path | None, last: int = 10) -> list[dict[str, Any]]:
    """The newest `last` runs of the suite in cases_file (all suites when None), oldest first."""
    if not Path(db_path).exists():
        return []
    with _connect(db_path) as conn:
        if cases_file is None:
            rows = conn.execute("SELECT * FROM runs ORDER BY created_at DESC, run_id DESC LIMIT ?", (last,))
        else:
            rows = conn.execute("SELECT * FROM runs WHERE cases_file = ? "
                                "ORDER BY created_at DESC, run_id DESC LIMIT ?",
                                (normalize_cases_file(cases_file), last))
        return [dict(r) for r in rows][::-1]


def earlier_runs(db_path: str | Path, cases_file: str | Path, agent: str | None, before: str,
                 exclude_run_id: str | None = None) -> list[dict[str, Any]]:
    """Every run of cases_file and agent created no later than `before` (a run_id in the history, or a
    created_at), other than `before` and `exclude_run_id`, newest first; each row with `summary` (its
    summary as a dict) and `statuses` (case id -> status). What `--baseline last` chooses from."""
    if not Path(db_path).exists():
        return []
    with _connect(db_path) as conn:
        hit = conn.execute("SELECT created_at FROM runs WHERE run_id = ?", (before,)).fetchone()
        created_at = hit["created_at"] if hit else before
        rows = [dict(r) for r in conn.execute(
            "SELECT * FROM runs WHERE cases_file = ? AND agent IS ? AND created_at <= ? AND run_id != ? "
            "AND run_id != ? ORDER BY created_at DESC, run_id DESC",
            (normalize_cases_file(cases_file), agent, created_at, before, exclude_run_id or ""))]
        for row in rows:
            row["statuses"] = {r["case_id"]: r["status"] for r in conn.execute(
                "SELECT case_id, status FROM case_results WHERE run_id = ?", (row["run_id"],))}
            try:
                summary = orjson.loads(row.get("summary_json") or b"{}")
            except orjson.JSONDecodeError:
                summary = {}
            row["summary"] = summary if isinstance(summary, dict) else {}
        return rows


def last_failed(db_path: str | Path, cases_file: str | Path) -> tuple[str | None, list[str]]:
    """`--lf`: (run_id, ids of its failed or errored cases) of the newest run of cases_file that was not
    interrupted and is not a rescore; (None, []) when the history holds no such run."""
    if not Path(db_path).exists():
        return None, []
    with _connect(db_path) as conn:
        row = conn.execute("SELECT run_id FROM runs WHERE cases_file = ? AND interrupted = 0 "
                           "AND rescored_from IS NULL "
                           "ORDER BY created_at DESC, run_id DESC LIMIT 1",
                           (normalize_cases_file(cases_file),)).fetchone()
        if row is None:
            return None, []
        ids = [r["case_id"] for r in conn.execute(
            "SELECT case_id FROM case_results WHERE run_id = ? AND status IN ('failed', 'error')",
            (row["run_id"],))]
        return row["run_id"], ids


def sparkline(values: Sequence[float | None]) -> str:
    """One of ▁▂▃▅▇ per value, scaled between the shown minimum and maximum; a null is a space."""
    known = [v for v in values if v is not None]
    if not known:
        return " " * len(values)
    lo, hi = min(known), max(known)
    top = len(SPARKS) - 1
    return "".join(" " if v is None else SPARKS[round((v - lo) / (hi - lo) * top) if hi > lo else top // 2]
                   for v in values)


def agent_and_model(row: dict[str, Any]) -> str:
    """The agent, and its model when it has one."""
    agent = row.get("agent") or "?"
    return f"{agent} / {row['model']}" if row.get("model") else agent


def render_history(rows: list[dict[str, Any]], metrics: Sequence[str], console: Console) -> None:
    """Print one row per run (oldest first), the full run_id never wrapped, with a sparkline per metric."""
    agents = sorted({agent_and_model(r) for r in rows})
    hidden = 0
    if not metrics:
        # The full run_id is never cut, so a narrow terminal shows fewer of the default metrics instead.
        fixed = max([len(r["run_id"]) for r in rows] + [6]) + 11 + 7 + 4 + 4 * 3 + (20 if len(agents) > 1 else 0)
        fit = max(1, (console.width - fixed) // 11)
        metrics, hidden = list(DEFAULT_METRICS[:fit]), max(0, len(DEFAULT_METRICS) - fit)
    # One agent/model pair goes in the title, so the table keeps its width for the metrics.
    title = f"history: {len(rows)} run(s)" + (f" of {agents[0]}" if len(agents) == 1 else "")
    table = Table(title=title, box=box.SIMPLE_HEAD)
    width = max([len(r["run_id"]) for r in rows] + [6])
    table.add_column("run_id", no_wrap=True, min_width=width)
    columns = ["created"] + (["agent / model"] if len(agents) > 1 else []) + ["commit", "exit"]
    for name in columns:
        table.add_column(name, no_wrap=True, min_width=4)
    for m in metrics:
        # A narrow terminal folds the header, never the value.
        table.add_column(SHORT_NAMES.get(m, m), justify="right", min_width=6, overflow="fold")
    for r in rows:
        created = str(r.get("created_at") or "")[5:16].replace("T", " ")  # MM-DD HH:MM
        exit_text = str(r.get("exit_code")) + (" interrupted" if r.get("interrupted") else
                                               " stopped early" if r.get("stopped_early") else
                                               " at budget" if r.get("stopped_at_budget") else
                                               " rescored" if r.get("rescored_from") else "")
        exit_text += " partial" if r.get("partial") else ""
        who = [agent_and_model(r)] if len(agents) > 1 else []
        table.add_row(r["run_id"], created, *who, (r.get("git_commit") or "")[:7], exit_text,
                      *[format_value(m, r.get(m)) for m in metrics])
    if rows:
        table.add_section()
        blank = [""] * len(columns)
        # A partial run (a strict subset of the case file: --filter, --lf) is not on the trend line, and each
        # agent and model has a line of its own (a cheaper model's runs are not a drop of the other's).
        whole = [r for r in rows if not r.get("partial")]
        for pair in agents:
            own = [r for r in whole if agent_and_model(r) == pair]
            label = [*blank[:1], pair, *blank[2:]] if len(agents) > 1 else blank
            table.add_row("trend", *label, *[sparkline([r.get(m) for r in own]) for m in metrics])
        table.add_row("latest", *blank, *[format_value(m, rows[-1].get(m)) for m in metrics])
    console.print(table)
    if hidden:
        console.print(f"{hidden} more metric(s) fit a wider terminal; choose with --metric NAME (repeatable).",
                      markup=False)


