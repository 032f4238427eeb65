"""What a finished run writes besides its JSON report: the HTML page, the history row, JUnit and Markdown."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval.report.files import write_atomic
from agent_eval.report.html import MAX_BYTES, KEEP_TRACE_STATUSES, page_from_json

if TYPE_CHECKING:
    from agent_eval.report.otlp_post import RunSender


def write_page(report: dict[str, Any], report_path: Path, run_bytes: Any, out: Path) -> None:
    """The HTML page, embedding the report file as it is, or past 50 MB only failed/errored traces."""
    size = report_path.stat().st_size
    if size <= MAX_BYTES:
        write_atomic(out, page_from_json(report, report_path.read_bytes()))
        return
    import orjson

    left_out = 0
    cases = []
    for case, raw_runs in zip(report["cases"], run_bytes, strict=True):
        runs = []
        for lite, raw in zip(case["runs"], raw_runs, strict=True):
            if lite["status"] in KEEP_TRACE_STATUSES:
                runs.append(orjson.loads(raw))
            else:
                runs.append({**lite, "trace": None})
                left_out += 1
        cases.append({**case, "runs": runs})
    trimmed = {**report, "cases": cases}
    write_atomic(out, page_from_json(report, orjson.dumps(trimmed), left_out))


def write_extras(report: dict[str, Any], report_path: Path, run_bytes: Callable[[], Any], cfg: Any,
                 warn: Callable[[str], None], sender: RunSender | None = None) -> list[str]:
    """HTML page (unless --no-html), history row, and the optional JUnit, Markdown and OTel outputs.

    `run_bytes()` yields, per case entry, its runs as JSON bytes (each output that reads them calls it).
    `sender` is the --otlp-endpoint sender the runs were offered to as they finished, if any.

    Returns one "kind: path" line per file written, for the closing lines of the terminal output. A file
    that cannot be written never changes the verdict: `warn` gets one line with its path and the reason.
    """
    from agent_eval.report.history import git_commit_of, record_run_or_recover

    written = []
    outputs: list[tuple[str, Path, Callable[[], Any]]] = []
    if cfg.html:
        page_path = report_path.with_suffix(".html")
        outputs.append(("HTML", page_path, lambda: write_page(report, report_path, run_bytes(), page_path)))
    db = cfg.output_dir / "history.sqlite"
    outputs.append(("history", db, lambda: record_run_or_recover(db, report, git_commit_of(cfg.cases_file),
                                                                 warn)))
    if cfg.junit is not None:
        from agent_eval.report.junit import write_junit

        outputs.append(("JUnit", cfg.junit, lambda: write_junit(report, cfg.junit)))
    if cfg.markdown is not None:
        from agent_eval.report.markdown import write_markdown

        outputs.append(("Markdown", cfg.markdown, lambda: write_markdown(report, cfg.markdown)))
    if getattr(cfg, "otel", None) is not None:
        from agent_eval.report.otel import write_otel

        outputs.append(("OTel", cfg.otel, lambda: write_otel(report, run_bytes(), cfg.otel)))
    if getattr(cfg, "otlp_endpoint", None):
        outputs.append(("OTLP", cfg.otlp_endpoint, lambda: send_otlp(report, run_bytes(), cfg.otlp_endpoint, warn,
                                                                     sender)))
    for kind, path, write in outputs:
        try:
            write()
        except (OSError, sqlite3.Error) as exc:
            warn(f"warning: could not write the {kind} file {path}: {_reason(exc)}; the verdict is unchanged.")
            continue
        if kind not in ("history", "OTLP"):
            written.append(f"{kind}: {path}")
    return written


def send_otlp(report: dict[str, Any], run_bytes: Any, url: str, warn: Callable[[str], None],
              sender: RunSender | None = None) -> None:
    """Finish sending the runs' traces (every run, when none was offered as it finished); failures are one
    warning with their count."""
    from agent_eval.report.otlp_post import RunSender, warning

    every_run = sender is None
    sent, failed, reason = (sender or RunSender(url, report)).finish(report, run_bytes, every_run=every_run)
    if failed:
        warn(warning(url, failed, sent + failed, reason))


def _reason(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) or type(exc).__name__
