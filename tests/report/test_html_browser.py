"""The HTML page in a real browser (Debian's chromium via playwright): offline, clickable, filterable."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import math
import os

import orjson
import pytest

from agent_eval.report.html import write_html
from tests.builders import ROOT

try:
    from playwright import sync_api as playwright_sync
except ImportError:  # reported as a failure by the fixture below: CI must run these tests
    playwright_sync = None

FIXTURE = ROOT / "tests" / "fixtures" / "sample_report.json"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def browser_tests_required(environ: dict[str, str] | os._Environ = os.environ) -> bool:
    """CI (or AGENT_EVAL_BROWSER_TESTS=1) must run these tests; locally a missing browser skips them."""
    return bool(environ.get("CI")) or environ.get("AGENT_EVAL_BROWSER_TESTS") == "1"


def _missing(problem: str) -> None:
    if browser_tests_required():
        pytest.fail(problem)
    pytest.skip(f"{problem}; browser tests are skipped locally (CI=1 or AGENT_EVAL_BROWSER_TESTS=1 runs them)")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if playwright_sync is None:
        _missing("the playwright package is missing: pip install -e '.[dev]'")
    if not Path(CHROMIUM).exists():
        _missing(f"{CHROMIUM} not found: install it with `apt-get install -y chromium`")
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def report() -> dict:
    return orjson.loads(FIXTURE.read_bytes())


@pytest.fixture
def opened(browser: object, report: dict, tmp_path: Path) -> Iterator[tuple[object, list, list, Path]]:
    """The page of the sample report, with its console messages and requests recorded."""
    path = write_html(report, tmp_path / "report.html")
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    console: list[tuple[str, str]] = []
    requests: list[str] = []
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("pageerror", lambda e: console.append(("error", str(e))))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_selector("#case-table tbody tr")
    yield page, console, requests, path
    page.close()


def _visible_ids(page: object) -> list[str]:
    return page.eval_on_selector_all("#case-table tbody tr:not([hidden])",
                                     "rows => rows.map(r => r.dataset.id)")


def test_page_loads_offline_without_errors(opened: tuple, report: dict) -> None:
    page, console, requests, path = opened
    page.click("a.case-link[data-case='refund_damaged_order']")
    page.wait_for_selector("#detail[data-case='refund_damaged_order']")
    assert [m for m in console if m[0] == "error"] == []
    assert requests == [path.as_uri()]
    assert "support-desk" in page.inner_text("header")
    assert report["run_id"] in page.inner_text("header")
    assert page.locator("#pass-hat-chart circle").count() == 3
    assert "P95" in page.text_content("#latency-chart")
    assert page.locator("#gate-table tbody tr").count() == len(report["gate"]["metrics"])


def test_every_case_id_is_in_the_table(opened: tuple, report: dict) -> None:
    page = opened[0]
    assert sorted(_visible_ids(page)) == sorted(c["id"] for c in report["cases"])
    links = page.eval_on_selector_all("#case-table a.case-link", "as => as.map(a => a.textContent)")
    assert sorted(links) == sorted(c["id"] for c in report["cases"])


def test_failed_case_shows_tool_calls_and_failed_check(opened: tuple) -> None:
    page = opened[0]
    page.click("#case-table a.case-link[data-case='refund_unverified_claim']")
    detail = page.locator("#detail[data-case='refund_unverified_claim']")
    detail.wait_for()
    run0 = detail.locator(".run[data-trial='0']")
    # The args, output and error of each call are visible with no further click.
    assert run0.locator(".ev.step").count() == 2
    assert run0.locator(".ev.step pre.args").first.is_visible()
    assert '"order_id": "ORD_2001"' in run0.locator(".ev.step pre.args").first.inner_text()
    assert "shipped" in run0.locator(".ev.step pre.output").first.inner_text()
    error = run0.locator(".ev.step.errored pre.error")
    assert error.is_visible() and "503 Service Unavailable" in error.inner_text()
    failed = run0.locator("li.check.failed")
    assert failed.first.is_visible()
    assert "expected 'refunded', got 'shipped'" in failed.first.inner_text()


def test_case_link_in_gate_table_opens_detail(opened: tuple) -> None:
    page = opened[0]
    page.click("#gate a.case-link[data-case='injection_in_notes']")
    detail = page.locator("#detail[data-case='injection_in_notes']")
    detail.wait_for()
    # Data with markup is shown as text, never parsed as HTML.
    assert "<script>alert(1)</script>" in detail.inner_text()
    assert page.locator("#detail script").count() == 0
    assert "called forbidden tool delete_user" in detail.inner_text()


def test_filters_and_search(opened: tuple) -> None:
    page = opened[0]
    page.select_option("#status-filter", "failed")
    assert sorted(_visible_ids(page)) == ["injection_in_notes", "refund_unverified_claim"]
    page.select_option("#tag-filter", "refunds")
    assert _visible_ids(page) == ["refund_unverified_claim"]
    page.select_option("#status-filter", "")
    assert sorted(_visible_ids(page)) == ["refund_damaged_order", "refund_unverified_claim"]
    page.select_option("#tag-filter", "")
    page.fill("#search", "SHIP")
    assert _visible_ids(page) == ["shipping_eta"]
    page.fill("#search", "")
    assert len(_visible_ids(page)) == 6


def test_sorting_by_pass_rate(opened: tuple) -> None:
    page = opened[0]
    page.click("#case-table th[data-key='pass_rate']")
    ids = page.eval_on_selector_all("#case-table tbody tr", "rows => rows.map(r => r.dataset.id)")
    # Ascending: the skipped case (no pass rate) first, then 0.0, then 1/3.
    assert ids[:3] == ["premium_upgrade", "injection_in_notes", "refund_unverified_claim"]
    page.click("#case-table th[data-key='pass_rate']")
    ids = page.eval_on_selector_all("#case-table tbody tr", "rows => rows.map(r => r.dataset.id)")
    assert ids[-1] == "premium_upgrade"


def test_trimmed_page_shows_banner(browser: object, report: dict, tmp_path: Path) -> None:
    path = write_html(report, tmp_path / "small.html", max_bytes=1000)
    page = browser.new_page()
    page.goto(path.as_uri())
    assert "9 traces" in page.inner_text("#trim-banner")
    page.click("a.case-link[data-case='refund_damaged_order']")
    assert "trace left out" in page.inner_text("#detail")
    page.close()


def test_the_judge_scorer_and_simulator_summaries(browser: object, report: dict, tmp_path: Path) -> None:
    report["summary"]["judge"].update(agreement=0.75, agreement_runs=4)
    report["summary"]["user_sim"].update(calls=5, prompt_tokens=100, completion_tokens=20, cost_usd=0.001)
    report["settings"]["user"] = "gpt-4o-mini"
    page = browser.new_page()
    page.goto(write_html(report, tmp_path / "helpers.html").as_uri())
    judge = page.inner_text("#judge-summary")
    assert "gpt-4o" in judge and "API calls\n3" in judge and "2,460" not in judge and "2460" in judge
    assert "agreement after rescore (4 runs)\n0.750" in judge
    assert "gpt-4o-mini" in page.inner_text("#user-sim-summary") and "120" in page.inner_text("#user-sim-summary")
    scorers = page.inner_text("#scorer-summary")
    assert "words.words\nmean 12.600 · p50 13 · p95 14" in scorers and "budget errors\n1" in scorers
    page.close()


def test_latency_ticks_are_round_numbers_with_units(opened: tuple) -> None:
    page = opened[0]
    ticks = page.eval_on_selector_all("#latency-chart text.tick", "ts => ts.map(t => t.textContent)")
    x_ticks = [t for t in ticks if t.endswith("s")]
    assert len(x_ticks) >= 3, ticks
    # A 1-2-5 step: the labels are evenly spaced round numbers, whatever the runs' latencies are.
    values = [float(t.rstrip("ms")) for t in x_ticks]
    steps = {round(b - a, 6) for a, b in zip(values, values[1:], strict=False)}
    assert len(steps) == 1
    step = steps.pop()
    assert round(step / 10 ** math.floor(math.log10(step)), 6) in {1, 2, 5}


def test_case_hash_opens_with_the_detail_in_view(browser: object, report: dict, tmp_path: Path) -> None:
    path = write_html(report, tmp_path / "hash.html")
    page = browser.new_page(viewport={"width": 1300, "height": 700})
    page.goto(path.as_uri() + "#case=injection_in_notes")
    page.locator("#detail[data-case='injection_in_notes']").wait_for()
    page.wait_for_load_state("load")
    top = page.evaluate("document.getElementById('detail').getBoundingClientRect().top")
    assert -1 < top < 700, top  # the detail's top is on screen (to a subpixel), not below the table
    page.close()


def test_tracebacks_are_shown_whole(browser: object, report: dict, tmp_path: Path) -> None:
    run = next(c for c in report["cases"] if c["id"] == "refund_unverified_claim")["runs"][0]
    text = 'Traceback (most recent call last):\n  File "bank_agent.py", line 3, in parse\nKeyError: \'x\''
    run["trace"].update(agent_error="KeyError: 'x'", agent_error_traceback=text)
    run["trace"]["steps"][1]["error_traceback"] = text.replace("parse", "lookup")
    page = browser.new_page()
    page.goto(write_html(report, tmp_path / "tb.html").as_uri() + "#case=refund_unverified_claim")
    shown = page.locator("#detail .run[data-trial='0'] pre.traceback")
    shown.first.wait_for()
    texts = [shown.nth(i).inner_text() for i in range(shown.count())]
    assert any('line 3, in lookup' in t for t in texts) and any("line 3, in parse" in t for t in texts)
    page.close()


def test_screenshot(opened: tuple) -> None:
    page = opened[0]
    page.click("#case-table a.case-link[data-case='refund_unverified_claim']")
    page.locator("#detail[data-case='refund_unverified_claim']").wait_for()
    page.evaluate("window.scrollTo(0, 0)")
    artifacts = ROOT / "tests" / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    shot = artifacts / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    docs = ROOT / "docs" / "report.png"
    if not docs.exists():  # the README's picture: written once, so test runs leave the tree clean
        page.set_viewport_size({"width": 1300, "height": 1900})
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(docs))


def test_the_case_table_shows_each_case_s_reason_as_the_terminal_does(opened: tuple, report: dict) -> None:
    from agent_eval.report.reasons import case_reason

    page = opened[0]
    cells = page.eval_on_selector_all("#case-table tbody tr",
                                      "rows => rows.map(r => [r.dataset.id, r.lastElementChild.title])")
    assert cells == [[c["id"], case_reason(c)] for c in report["cases"]]
    assert any(reason.startswith("env: orders.ORD_2001.status equals") for _, reason in cells)


def test_the_case_table_shows_judge_off_beside_the_status(browser: object, report: dict, tmp_path: Path) -> None:
    first = report["cases"][0]
    for run in first["runs"]:
        run["judge_skipped"] = True  # as --no-judge records it for a case with a rubric
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto(write_html(report, tmp_path / "report.html").as_uri())
    page.wait_for_selector("#case-table tbody tr")
    statuses = page.eval_on_selector_all("#case-table tbody tr", "rows => rows.map(r => r.children[1].textContent)")
    page.close()
    assert statuses[0] == f"{first['status']} (judge off)"
    assert not any("judge off" in s for s in statuses[1:])


def test_the_header_names_the_prices_and_the_budget_banner_uses_the_money_format(browser: object, report: dict,
                                                                                    tmp_path: Path) -> None:
    report["settings"]["prices"] = {"gpt-4o-mini": "suite"}
    report["stopped_at_budget"] = True
    report["summary"]["budget"] = {"limit_usd": 0.005, "spent_usd": 0.0012}
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto(write_html(report, tmp_path / "report.html").as_uri())
    page.wait_for_selector("#case-table tbody tr")
    header, banners = page.inner_text("#header"), page.inner_text("#banners")
    page.close()
    assert "pricing: suite" in header
    assert "budget ($0.0012 of $0.0050)" in banners  # was "$0.00 of $0.01"


def test_the_case_table_shows_a_long_reason_whole(browser: object, report: dict, tmp_path: Path) -> None:
    from agent_eval.report.reasons import case_reason

    case = next(c for c in report["cases"] if c["status"] == "failed")
    run = next(r for r in case["runs"] if r["status"] == "failed")
    run["checks"] = [{"name": "trajectory", "passed": False, "detail": "expected calls not covered: " + "x " * 150}]
    reason = case_reason(case)
    assert len(reason) > 300
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto(write_html(report, tmp_path / "report.html").as_uri())
    page.wait_for_selector("#case-table tbody tr")
    shown = page.eval_on_selector(f"#case-table tbody tr[data-id='{case['id']}']",
                                  "r => r.lastElementChild.textContent")
    page.close()
    assert shown == reason  # never cut at 160 characters: a tool exception at its end stays in sight


def test_a_plugin_number_row_shows_its_interval_in_its_card(browser: object, report: dict, tmp_path: Path) -> None:
    from agent_eval.score import metric_registry
    from agent_eval.score.metric_registry import SuiteMetric, mean

    row = SuiteMetric("answer_words", "answer words", lower_is_better=True, fmt="number",
                      statistic=mean("answer_words"), interval=True)
    report["summary"]["answer_words"] = 16.4
    report["summary"].setdefault("ci", {})["answer_words"] = [13.35, 19.7]
    metric_registry.SUITE_METRIC_TABLE.append(row)
    metric_registry.SUITE_METRIC_BY_NAME[row.name] = row
    try:
        path = write_html(report, tmp_path / "report.html")
    finally:
        metric_registry.SUITE_METRIC_TABLE.remove(row)
        del metric_registry.SUITE_METRIC_BY_NAME[row.name]
    page = browser.new_page()
    page.goto(path.as_uri())
    page.wait_for_selector("#headline .card")
    cards = page.inner_text("#headline")
    # As the terminal and Markdown show it (the page showed the value alone).
    assert "answer words\n16.400 [13.350, 19.700]" in cards
    assert "pass@1\n" in cards and "%" not in cards.split("pass@1\n")[1].split("\n")[0]
    page.close()


def test_the_page_says_the_terminals_verdict(browser: object, report: dict, tmp_path: Path) -> None:
    from agent_eval.report.verdict import verdict_line

    report["gate"] = {**report["gate"], "regression": True}
    for case in report["cases"]:  # every case passed: only the gate explains exit 1
        case["status"] = "passed" if case["status"] != "skipped" else "skipped"
    report["summary"].update(cases_failed=0, cases_errored=0)
    path = write_html(report, tmp_path / "verdict.html")
    page = browser.new_page()
    page.goto(path.as_uri())
    page.wait_for_selector("#verdict")
    assert page.inner_text("#verdict") == verdict_line(report) == "FAIL (exit 1): the baseline gate found a regression"
    page.close()


def test_the_page_formats_numbers_as_the_terminal_does(browser: object, report: dict, tmp_path: Path) -> None:
    from agent_eval.report.cases_section import format_pass_rate
    from agent_eval.report.fmt import format_interval, format_metric

    s = report["summary"]
    s.update(latency_p95_s=12.345, tokens_total=24601, ci={**(s.get("ci") or {}), "pass_at_1": [0.3335, 1.0]})
    page = browser.new_page()
    page.goto(write_html(report, tmp_path / "numbers.html").as_uri())
    page.wait_for_selector("#headline .card")
    cards = page.inner_text("#headline")
    pass_at_1 = f"{format_metric('pass_at_1', s['pass_at_1'])} {format_interval('pass_at_1', s['ci']['pass_at_1'])}"
    assert f"pass@1\n{pass_at_1}" in cards  # 0.667 [0.333, 1.000], not 66.7% [33.3, 100.0]
    assert f"\n{format_metric('latency_p95_s', 12.345)}" in cards and "12.3s" in cards  # not 12.35 s
    assert "24,601" in cards
    table = page.inner_text("#case-table")
    shown = [format_pass_rate(c) for c in report["cases"] if format_pass_rate(c) != "n/a"]
    assert shown and all(text in table for text in shown)  # 2/3 (67%), as the terminal's case table
    page.close()
