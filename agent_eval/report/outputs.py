"""What a finished run writes besides its JSON report: the HTML page, the history row, JUnit and Markdown."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_eval.report.html import MAX_BYTES, KEEP_TRACE_STATUSES, page_from_json


def write_page(report: dict[str, Any], report_path: Path, run_bytes: Any, out: Path) -> None:
    """The HTML page, embedding the report file as it is, or past 50 MB only failed/errored traces."""
    size = report_path.stat().st_size
    if size <= MAX_BYTES:
        out.write_text(page_from_json(report, report_path.read_bytes()), encoding="utf-8")
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
    out.write_text(page_from_json(report, orjson.dumps(trimmed), left_out), encoding="utf-8")


def write_extras(report: dict[str, Any], report_path: Path, run_bytes: Any, cfg: Any) -> list[str]:
    """HTML page (unless --no-html), history row, and the optional JUnit and Markdown files.

    Returns one "kind: path" line per file written, for the closing lines of the terminal output.
    """
    written = []
    if cfg.html:
        page_path = report_path.with_suffix(".html")
        write_page(report, report_path, run_bytes, page_path)
        written.append(f"HTML: {page_path}")
    from agent_eval.report.history import git_commit_of, record_run

    record_run(cfg.output_dir / "history.sqlite", report, git_commit_of(cfg.cases_file))
    if cfg.junit is not None:
        from agent_eval.report.junit import write_junit

        write_junit(report, cfg.junit)
        written.append(f"JUnit: {cfg.junit}")
    if cfg.markdown is not None:
        from agent_eval.report.markdown import write_markdown

        write_markdown(report, cfg.markdown)
        written.append(f"Markdown: {cfg.markdown}")
    return written
