"""Labels made by clicking the page's Pass / Fail buttons in chromium, downloaded, calibrate the same report;
the page shows the flaky cases, the intervals and the last calibration."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from agent_eval.report.html import write_html
from tests.builders import clean_env
from tests.cli import run_cli_process
from tests.judged_suite import case, judge_script, judged_suite
from tests.report.test_html_browser import browser  # noqa: F401  (the chromium fixture)

CASES = [case("g1", "RUBRIC_PASS"), case("g2", "RUBRIC_PASS"), case("b1", "RUBRIC_FAIL"),
         case("o1", "RUBRIC_PASS", expected_outcome="RUBRIC_FAIL the amount is told")]


@pytest.fixture
def judged_page(loopback, tmp_path: Path) -> tuple[Path, dict, Path]:
    """(report path, report, page path) of a real run (a subprocess: playwright holds this thread's event
    loop) judged by a loopback judge, and the page the run wrote."""
    judge = loopback(judge_script())
    cases_file = judged_suite(tmp_path, CASES)
    env = clean_env(XDG_CACHE_HOME=str(tmp_path / "cache"), AGENT_EVAL_JUDGE_BASE_URL=judge.base_url,
                    AGENT_EVAL_JUDGE_API_KEY="judge-key", AGENT_EVAL_JUDGE_MODEL="judge-m")
    done = run_cli_process("run", "--cases", cases_file, "--output-dir", tmp_path / "reports", env=env)
    assert done.returncode == 1, done.stderr  # b1 and o1 fail on the judge's FAIL
    path = next((tmp_path / "reports").glob("*.json"))
    return path, orjson.loads(path.read_bytes()), path.with_suffix(".html")


def open_case(page, case_id: str) -> None:
    page.click(f"a.case-link[data-case='{case_id}']")
    page.wait_for_selector(f"#detail[data-case='{case_id}']")


def label_run(page, criterion: str, value: str, note: str | None = None) -> None:
    box = page.locator(f"#detail .labeler[data-criterion='{criterion}']").first
    if note:
        box.locator("input.label-note").fill(note)
    box.locator("button.label-pass" if value == "pass" else "button.label-fail").click()


def test_clicked_labels_download_and_calibrate_the_same_report(browser, judged_page, tmp_path: Path) -> None:  # noqa: F811
    path, report, page_path = judged_page
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(page_path.as_uri())
    page.wait_for_selector("#labels-panel")
    assert page.inner_text("#labels-panel .label-count") == "0 labels in this page"
    open_case(page, "g1")
    label_run(page, "rubric", "pass")  # judge PASS: tp
    open_case(page, "g2")
    label_run(page, "rubric", "fail", note="wrong amount")  # judge PASS: fp
    open_case(page, "b1")
    label_run(page, "rubric", "fail")  # judge FAIL: tn
    open_case(page, "o1")
    label_run(page, "rubric", "pass")  # judge PASS: tp
    label_run(page, "expected_outcome", "pass", note="the amount was told")  # judge FAIL: fn
    # Kept in the page: a reload still holds them.
    page.reload()
    page.wait_for_selector("#labels-panel")
    assert page.inner_text("#labels-panel .label-count") == "5 labels in this page"
    open_case(page, "g2")
    assert "labelled fail" in page.inner_text("#detail .labeler[data-criterion='rubric']")
    with page.expect_download() as info:
        page.click("#download-labels")
    download = info.value
    assert download.suggested_filename == f"{report['run_id']}.labels.jsonl"
    labels = tmp_path / "downloaded.jsonl"
    download.save_as(labels)
    context.close()
    assert errors == []
    lines = [orjson.loads(line) for line in labels.read_bytes().splitlines()]
    assert lines[1] == {"run_id": report["run_id"], "case_id": "g2", "trial": 0, "label": "fail",
                        "criterion": "rubric", "note": "wrong amount"}
    done = run_cli_process("calibrate", path, "--labels", labels, "--min-kappa", "0")
    # tp 2 (g1, o1), fp 1 (g2), tn 1 (b1), fn 1 (o1's outcome): n 5, agreement 3/5; h = 3, j = 3;
    # pe = (3*3 + 2*2)/25 = 13/25, po = 15/25, kappa = (15 - 13)/(25 - 13) = 1/6
    assert done.returncode == 0, done.stdout + done.stderr
    doc = orjson.loads(path.with_name(f"{path.stem}.calibration.json").read_bytes())
    assert doc["overall"]["confusion"] == {"tp": 2, "fn": 1, "fp": 1, "tn": 1}
    assert doc["overall"]["kappa"] == pytest.approx(1 / 6)
    assert doc["other_run"] == doc["unknown_runs"] == doc["no_verdict"] == []
    # calibrate rewrote the report's page, which now shows the calibration beside the judge's summary
    viewed = tmp_path / "viewed.html"
    assert run_cli_process("view", path, "--out", viewed).returncode == 0  # view reads the .calibration.json too
    for shown in (page_path, viewed):
        page = browser.new_page()
        page.goto(shown.as_uri())
        page.wait_for_selector("#calibration-summary")
        assert "0.167" in page.inner_text("#calibration-summary")
        page.close()


def test_the_page_shows_intervals_flaky_cases_and_the_calibration(browser, judged_page, tmp_path: Path) -> None:  # noqa: F811
    path, report, _ = judged_page
    report["cases"][0]["flaky"] = True
    calibration = {"overall": {"n": 5, "agreement": 0.6, "kappa": 1 / 6, "kappa_ci": [-0.5, 0.8], "tpr": 2 / 3,
                               "tnr": 0.5, "confusion": {"tp": 2, "fn": 1, "fp": 1, "tn": 1}},
                   "disagreements": [{}, {}]}
    page_path = write_html(report, tmp_path / "with_calibration.html", calibration=calibration)
    page = browser.new_page()
    page.goto(page_path.as_uri())
    page.wait_for_selector("#calibration-summary")
    text = page.inner_text("#calibration-summary")
    assert "0.167 [-0.50, 0.80]" in text and "2 / 1 / 1 / 1" in text and "0.600" in text
    assert page.locator("#judge-summary").count() == 1  # beside the judge's own summary
    assert page.inner_text("#case-table tbody tr[data-id='g1']").count("flaky") == 1
    low, high = report["summary"]["ci"]["pass_at_1"]
    assert f"[{low:.3f}, {high:.3f}]" in page.inner_text("#headline")  # as the terminal shows a rate's interval
    page.close()
