"""The HTML page: data embedded once and safely, no external reference, trimming past the size limit."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import orjson
import pytest

from agent_eval.report.html import build_html, embed_json, trim_traces, write_html
from tests.builders import FIXTURES

FIXTURE = FIXTURES / "sample_report.json"
DATA_BLOCK = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)


@pytest.fixture
def report() -> dict:
    return orjson.loads(FIXTURE.read_bytes())


def _page_data(page: str) -> dict:
    blocks = DATA_BLOCK.findall(page)
    assert len(blocks) == 1, "the data must be embedded exactly once"
    return orjson.loads(blocks[0])


def test_report_round_trips_through_the_page(report: dict) -> None:
    data = _page_data(build_html(report))
    assert data["report"] == report
    assert data["traces_left_out"] == 0


def test_script_closing_tags_in_data_are_escaped(report: dict) -> None:
    report["cases"][0]["runs"][0]["trace"]["replies"][0] = "</script><script>alert(1)</script><!-- x"
    page = build_html(report)
    data_text = DATA_BLOCK.findall(page)[0]
    assert "</" not in data_text and "<!--" not in data_text
    assert _page_data(page)["report"]["cases"][0]["runs"][0]["trace"]["replies"][0].startswith("</script>")


def test_embed_json_is_valid_json() -> None:
    value = {"a": "</b> <!-- c -->", "n": [1, 2.5, None]}
    assert orjson.loads(embed_json(value)) == value


def test_page_references_nothing_outside_itself(report: dict) -> None:
    page = DATA_BLOCK.sub("", build_html(report))
    # The SVG namespace is an identifier, not a request.
    urls = set(re.findall(r"https?://[^\s\"')]+", page)) - {"http://www.w3.org/2000/svg"}
    assert not urls
    assert '<link rel="icon" href="data:,">' in page
    assert not re.search(r"<(?:script|img|link|iframe)[^>]*\s(?:src|href)=\"(?!data:)", page)
    assert "@import" not in page and "url(" not in page


def test_title_is_escaped(report: dict) -> None:
    report["suite"] = "<b>&suite"
    assert "<title>agent-eval · &lt;b&gt;&amp;suite" in build_html(report)


def test_under_the_limit_nothing_is_trimmed(report: dict) -> None:
    size = len(orjson.dumps(report))
    trimmed, left_out = trim_traces(report, max_bytes=size)
    assert left_out == 0 and trimmed is report


def test_over_the_limit_only_failed_and_errored_runs_keep_traces(report: dict) -> None:
    original = copy.deepcopy(report)
    size = len(orjson.dumps(report))
    trimmed, left_out = trim_traces(report, max_bytes=size - 1)
    assert report == original, "the caller's report must not change"
    passed = [r for c in report["cases"] for r in c["runs"] if r["status"] == "passed"]
    assert left_out == len(passed) == 9  # passed runs: 3 + 1 + 3 + 2 (+ 0 in the failed injection case)
    for case in trimmed["cases"]:
        for run in case["runs"]:
            if run["status"] == "passed":
                assert run["trace"] is None
            else:
                assert run["trace"] is not None
    data = _page_data(build_html(report, max_bytes=size - 1))
    assert data["traces_left_out"] == 9
    assert data["report"]["summary"] == report["summary"]


def test_write_html_creates_parents(tmp_path: Path, report: dict) -> None:
    out = write_html(report, tmp_path / "deep" / "run.html")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_two_thousand_runs_embed_once_and_fit(report: dict) -> None:
    # 2,000 runs: 400 cases x 5 runs, built from the fixture's runs.
    runs = [r for c in report["cases"] for r in c["runs"]]
    report["cases"] = [{"id": f"case_{i:04d}", "tags": ["bulk"], "status": "passed", "pass_rate": 1.0,
                        "skip_reason": None, "runs": [runs[(i + j) % len(runs)] for j in range(5)]}
                       for i in range(400)]
    page = build_html(report)
    assert len(_page_data(page)["report"]["cases"]) == 400
    assert len(page.encode()) < 20_000_000
