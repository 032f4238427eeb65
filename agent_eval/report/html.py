"""The self-contained HTML page of a report: inline CSS and JS, the data embedded once."""
from __future__ import annotations

import html
from importlib import resources
from pathlib import Path
from collections.abc import Mapping
from typing import Any, cast

import orjson

from agent_eval.records import CaseEntry, Report
from agent_eval.report.files import write_atomic

MAX_BYTES = 50_000_000
KEEP_TRACE_STATUSES = ("failed", "error")
_ASSETS = ("report.html", "report.css", "report.js", "labels.js", "cases.js")


def _asset(name: str) -> str:
    return resources.files("agent_eval.report").joinpath("assets", name).read_text(encoding="utf-8")


def trim_traces(report: Report, max_bytes: int = MAX_BYTES) -> tuple[Mapping[str, Any], int]:
    """Return (report, traces left out). Past max_bytes of compact JSON, only failed and errored runs keep
    their traces. The input is never mutated; a trimmed copy shares everything but the changed runs."""
    if len(orjson.dumps(report)) <= max_bytes:
        return report, 0
    left_out = 0
    cases = []
    for case in report.get("cases") or []:
        runs: list[Mapping[str, Any]] = []
        for run in case.get("runs") or []:
            if run.get("trace") is not None and run.get("status") not in KEEP_TRACE_STATUSES:
                runs.append({**run, "trace": None})
                left_out += 1
            else:
                runs.append(run)
        cases.append({**case, "runs": runs})
    return {**report, "cases": cases}, left_out


def embed_json(data: Any) -> str:
    """Compact JSON that is safe inside a <script> element: no `</` and no `<!--` can end or confuse it."""
    text = orjson.dumps(data).decode("utf-8")
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def build_html(report: Report, *, max_bytes: int = MAX_BYTES, calibration: Any = None) -> str:
    """Build the one-file HTML page of a report (with its last calibration, when given); it makes no
    request of any kind when opened."""
    page_report, left_out = trim_traces(report, max_bytes)
    data = {"report": page_report, "traces_left_out": left_out, "max_bytes": max_bytes, "calibration": calibration}
    return page(report, embed_json(data))


def page_from_json(report_head: Mapping[str, Any], report_json: bytes, left_out: int = 0,
                   max_bytes: int = MAX_BYTES) -> str:
    """The same page from a report already serialised (a report file's bytes), without parsing it again."""
    safe = report_json.replace(b"</", b"<\\/").replace(b"<!--", b"<\\u0021--").decode("utf-8")
    return page(report_head, '{"report":' + safe + f',"traces_left_out":{left_out},"max_bytes":{max_bytes}}}')


def page(report_head: Mapping[str, Any], data_json: str) -> str:
    """Fill the template: title, inline CSS and JS, and the embedded data (already script-safe)."""
    from agent_eval.report.metrics_section import page_rows
    from agent_eval.report.price_source import pricing_line
    from agent_eval.report.reasons import case_reason, judge_off_note
    from agent_eval.report.terminal import tape_line
    from agent_eval.report.verdict import verdict_parts

    title = f"agent-eval · {report_head.get('suite') or 'suite'} · {report_head.get('run_id') or ''}"
    # Each case's reason and its ` (judge off)` note, computed here by the functions the terminal, Markdown
    # and JUnit use (one entry per case, "" for an entry that is not a case).
    cases = [cast(CaseEntry, c) if isinstance(c, dict) else None for c in report_head.get("cases") or []]
    reasons = [case_reason(c) if c is not None else "" for c in cases]
    notes = [judge_off_note(c) if c is not None else "" for c in cases]
    priced = pricing_line(cast(Report, report_head))  # the terminal header's line: where the prices came from
    settings = report_head.get("settings")
    tape = tape_line(settings) if isinstance(settings, dict) else None  # "replaying DIR (recorded ...)"
    data_json = (data_json[:-1] + ',"pricing":' + embed_json(priced) + ',"tape":' + embed_json(tape)
                 + ',"status_notes":' + embed_json(notes)
                 + ',"reasons":' + embed_json(reasons) + "}")
    # The terminal's verdict line (report/verdict.py), as [word, exit code, its causes].
    data_json = data_json[:-1] + ',"verdict":' + embed_json(verdict_parts(cast(Report, report_head))) + "}"
    # The metric table's rows the cards draw (report/metrics_section.py): report.js holds no list of metrics.
    data_json = data_json[:-1] + ',"metric_rows":' + embed_json(page_rows(cast(Report, report_head))) + "}"
    template = _asset("report.html")
    script = "\n".join(_asset(name) for name in _ASSETS if name.endswith(".js"))
    # Assets go in first and the data last, so a marker-like string inside the data is never replaced.
    before, after = template.split("__DATA__", 1)
    before = before.replace("__TITLE__", html.escape(title)).replace("/*__CSS__*/", _asset("report.css"))
    after = after.replace("/*__JS__*/", script)
    return before + data_json + after


def write_html(report: Report, path: str | Path, *, max_bytes: int = MAX_BYTES,
               calibration: Any = None) -> Path:
    """Write the report's page to path (parents created) and return the path."""
    out = Path(path)
    write_atomic(out, build_html(report, max_bytes=max_bytes, calibration=calibration))  # parents made there
    return out
