"""history.sqlite: recording, resume replacement, --baseline last, sparklines, the Rich table."""
from __future__ import annotations

import copy
import shutil
import sqlite3
import subprocess
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from agent_eval.errors import ConfigError
from agent_eval.report.baseline import pick_last
from agent_eval.report.history import (
    git_commit_of,
    last_failed,
    recent_runs,
    record_run,
    render_history,
    sparkline,
)
from agent_eval.commands.history import history_main
from tests.builders import FIXTURES

FIXTURE = FIXTURES / "sample_report.json"


def baseline_last(db: Path, cases_file: str, agent: str, before: str, exclude_run_id: str | None = None,
                  selected: list[str] | None = None) -> str | None:
    """The run id `--baseline last` picks (pick_last, the history being `db`); None when it picks none."""
    try:
        return pick_last(db.parent, Path(cases_file), agent, selected or [], before, exclude_run_id).stem
    except ConfigError:
        return None


def make_report(run_id: str, created_at: str, pass_at_1: float | None = 0.5, agent: str = "openai",
                cases_file: str = "cases/test_cases.json", interrupted: bool = False) -> dict:
    report = orjson.loads(FIXTURE.read_bytes())
    report.update(run_id=run_id, created_at=created_at, agent=agent, cases_file=cases_file,
                  interrupted=interrupted)
    report["summary"]["pass_at_1"] = pass_at_1
    for case in report["cases"]:  # a run that could be a baseline: the fixture's one error case failed instead
        if case["status"] == "error":
            case["status"] = "failed"
    return report


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "reports" / "history.sqlite"


def test_record_run_stores_metrics_and_case_results(db: Path) -> None:
    record_run(db, make_report("20250101-000000-aaaaaa", "2025-01-01T00:00:00", 0.6), "abc123")
    conn = sqlite3.connect(db)
    row = conn.execute("SELECT suite, agent, model, git_commit, exit_code, interrupted, pass_at_1, "
                       "pass_hat_k, latency_p95_s, cost_per_success_usd, summary_json FROM runs").fetchone()
    assert row[:10] == ("support-desk", "openai", "gpt-4o-mini", "abc123", 1, 0, 0.6, 0.5, 4.21, 0.00368)
    assert orjson.loads(row[10])["cases_total"] == 6
    cases = dict(conn.execute("SELECT case_id, status FROM case_results").fetchall())
    assert cases["premium_upgrade"] == "skipped" and len(cases) == 6
    conn.close()


def test_resumed_run_replaces_its_rows(db: Path) -> None:
    first = make_report("20250101-000000-aaaaaa", "2025-01-01T00:00:00", 0.2, interrupted=True)
    record_run(db, first, None)
    resumed = copy.deepcopy(first)
    resumed["interrupted"] = False
    resumed["summary"]["pass_at_1"] = 0.9
    resumed["cases"] = resumed["cases"][:2]
    record_run(db, resumed, None)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT pass_at_1, interrupted FROM runs").fetchall() == [(0.9, 0)]
    assert conn.execute("SELECT COUNT(*) FROM case_results").fetchone()[0] == 2
    conn.close()


def test_recent_runs_are_oldest_first_and_limited(db: Path) -> None:
    for i in range(5):
        record_run(db, make_report(f"2025010{i}-000000-aaaaaa", f"2025-01-0{i + 1}T00:00:00", i / 10), None)
    other = make_report("20250109-000000-other0", "2025-01-09T00:00:00", cases_file="other.json")
    record_run(db, other, None)
    rows = recent_runs(db, "cases/test_cases.json", last=3)
    assert [r["pass_at_1"] for r in rows] == [0.2, 0.3, 0.4]
    assert recent_runs(db.parent / "missing.sqlite", "cases/test_cases.json") == []


def test_baseline_last_is_the_newest_earlier_uninterrupted_run_of_same_file_and_agent(db: Path) -> None:
    record_run(db, make_report("r1", "2025-01-01T00:00:00"), None)
    record_run(db, make_report("r2", "2025-01-02T00:00:00"), None)
    record_run(db, make_report("r3", "2025-01-03T00:00:00", interrupted=True), None)
    record_run(db, make_report("r4", "2025-01-04T00:00:00", agent="demo.py:agent"), None)
    record_run(db, make_report("r5", "2025-01-05T00:00:00", cases_file="other.json"), None)
    record_run(db, make_report("r6", "2025-01-06T00:00:00"), None)
    assert baseline_last(db, "cases/test_cases.json", "openai", "r6") == "r2"
    # A created_at bound is inclusive, so a run started in the same second as the current one counts;
    # the current run itself is left out by its id.
    assert baseline_last(db, "cases/test_cases.json", "openai", "2025-01-06T00:00:00") == "r6"
    assert baseline_last(db, "cases/test_cases.json", "openai", "2025-01-06T00:00:00", exclude_run_id="r6") == "r2"
    assert baseline_last(db, "cases/test_cases.json", "openai", "r2") == "r1"
    assert baseline_last(db, "cases/test_cases.json", "openai", "r1") is None
    assert baseline_last(db, "cases/test_cases.json", "demo.py:agent", "r6") == "r4"
    assert baseline_last(db, "cases/test_cases.json", "demo.py:agent", "r4") is None
    assert baseline_last(db.parent / "none" / "history.sqlite", "cases/test_cases.json", "openai", "r6") is None


def test_baseline_last_and_last_failed_skip_a_rescore(db: Path) -> None:
    original = make_report("r1", "2025-01-01T00:00:00")
    record_run(db, original, None)
    rescored = make_report("r2", "2025-01-02T00:00:00")
    rescored["settings"] = {**rescored["settings"], "rescored_from": "r1"}
    for case in rescored["cases"]:
        case["status"] = "passed"  # a corrected check: the rescore passes every case
    record_run(db, rescored, None)
    assert baseline_last(db, "cases/test_cases.json", "openai", "2025-01-03T00:00:00") == "r1"
    run_id, ids = last_failed(db, "cases/test_cases.json")
    assert run_id == "r1" and sorted(ids) == sorted(c["id"] for c in original["cases"]
                                                  if c["status"] in ("failed", "error"))
    assert [r["rescored_from"] for r in recent_runs(db, "cases/test_cases.json")] == [None, "r1"]


def test_sparkline_maps_min_to_lowest_and_max_to_highest_bar() -> None:
    # 0 -> ▁, 1 -> ▇, 0.5 -> index round(0.5 * 4) = 2 -> ▃, None -> space
    assert sparkline([0.0, 0.5, None, 1.0]) == "▁▃ ▇"
    assert sparkline([0.3, 0.3]) == "▃▃"
    assert sparkline([None, None]) == "  "
    assert sparkline([]) == ""


def test_render_history_keeps_full_run_id_on_a_narrow_terminal(db: Path) -> None:
    record_run(db, make_report("20250101-000000-aaaaaa", "2025-01-01T00:00:00", 0.0), None)
    record_run(db, make_report("20250102-000000-bbbbbb", "2025-01-02T00:00:00", 1.0), None)
    console = Console(width=70, record=True, color_system=None)
    render_history(recent_runs(db, "cases/test_cases.json"), ["pass_at_1", "latency_p95_s"], console)
    text = console.export_text()
    assert "20250101-000000-aaaaaa" in text and "20250102-000000-bbbbbb" in text
    assert "▁▇" in text
    assert "1.000" in text  # latest pass_at_1


def test_history_main(db: Path) -> None:
    console = Console(width=200, record=True, color_system=None)
    assert history_main("cases/test_cases.json", db.parent, 10, [], console) == 0
    assert "no runs" in console.export_text()
    record_run(db, make_report("20250101-000000-aaaaaa", "2025-01-01T00:00:00"), None)
    assert history_main("cases/test_cases.json", db.parent, 10, ["pass_at_1"], console) == 0
    assert "20250101-000000-aaaaaa" in console.export_text()
    assert history_main("cases/test_cases.json", db.parent, 10, ["nonsense"], console) == 2


def test_git_commit_of(tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    (outside / "cases.json").write_text("[]")
    assert git_commit_of(outside / "cases.json") is None
    if shutil.which("git") is None:
        pytest.fail("git is needed for this test")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "cases.json").write_text("[]")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "cases.json"], check=True)
    subprocess.run([*git, "commit", "-qm", "cases"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout
    assert git_commit_of(repo / "cases.json") == head.strip()


def test_baseline_last_skips_lf_runs_and_runs_that_did_not_select_every_case_selected_now(db: Path) -> None:
    full = make_report("r1", "2025-01-01T00:00:00")  # the fixture's 6 cases
    ids = [c["id"] for c in full["cases"]]
    record_run(db, full, None, total_cases=6)
    lf = make_report("r2", "2025-01-02T00:00:00")
    lf["settings"]["last_failed"] = ids[:2]
    lf["cases"] = lf["cases"][:2]
    record_run(db, lf, None, total_cases=6)
    narrow = make_report("r3", "2025-01-03T00:00:00")
    narrow["cases"] = narrow["cases"][:4]  # a --filter run without --lf: cases 0-3
    narrow["settings"]["last_failed"] = None
    record_run(db, narrow, None, total_cases=6)
    at_budget = make_report("r4", "2025-01-04T00:00:00")
    at_budget["stopped_at_budget"] = True  # the key the spend slice adds to a report stopped at --max-cost
    record_run(db, at_budget, None, total_cases=6)
    now = "2025-02-01T00:00:00"
    # Every case selected now: only r1 selected them all (r2 used --lf, r3 left two out, r4 hit its budget).
    assert baseline_last(db, "cases/test_cases.json", "openai", now, selected=ids) == "r1"
    # Cases 0-2 selected now: r3 selected them, and is newer than r1.
    assert baseline_last(db, "cases/test_cases.json", "openai", now, selected=ids[:3]) == "r3"
    # Never r2, the --lf run, although it is newer than r1 and holds case 0.
    assert baseline_last(db, "cases/test_cases.json", "openai", "2025-01-02T12:00:00", selected=ids[:1]) == "r1"
    assert baseline_last(db, "cases/test_cases.json", "openai", now, selected=[*ids, "brand_new"]) is None


def test_history_marks_a_partial_run_and_leaves_it_off_the_trend(db: Path) -> None:
    # pass_at_1 of the whole-file runs: 0.2 then 0.8; the partial run between them scored 1.0 on 2 cases.
    record_run(db, make_report("20250101-000000-aaaaaa", "2025-01-01T00:00:00", 0.2), None, total_cases=6)
    partial = make_report("20250102-000000-bbbbbb", "2025-01-02T00:00:00", 1.0)
    partial["cases"] = partial["cases"][:2]
    record_run(db, partial, None, total_cases=6)
    record_run(db, make_report("20250103-000000-cccccc", "2025-01-03T00:00:00", 0.8), None, total_cases=6)
    rows = recent_runs(db, "cases/test_cases.json")
    assert [r["partial"] for r in rows] == [0, 1, 0]
    console = Console(record=True, width=200)
    render_history(rows, ["pass_at_1"], console)
    text = console.export_text()
    assert "1 partial" in next(line for line in text.splitlines() if "20250102-000000-bbbbbb" in line)
    trend = next(line for line in text.splitlines() if line.strip().startswith("trend"))
    # Two points, 0.2 and 0.8: the lowest and the highest spark; the partial 1.0 is left out.
    assert trend.split()[-1] == "▁▇"


def test_a_metric_added_since_the_history_was_made_gets_its_column(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_eval.report import history

    record_run(db, make_report("20260101-000000-aaaaaa", "2026-01-01T00:00:00"), None)
    monkeypatch.setattr(history, "METRIC_COLUMNS", (*history.METRIC_COLUMNS, "answer_words"))  # a plugin's row
    report = make_report("20260102-000000-bbbbbb", "2026-01-02T00:00:00")
    report["summary"]["answer_words"] = 3.0
    record_run(db, report, None)  # the file had no such column: it was "table runs has no column named ..."
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT run_id, answer_words FROM runs ORDER BY run_id").fetchall() == [
            ("20260101-000000-aaaaaa", None), ("20260102-000000-bbbbbb", 3.0)]


def test_baseline_last_skips_errors_replay_misses_and_all_skipped_but_never_for_its_own_gate(db: Path) -> None:
    record_run(db, make_report("r1", "2025-01-01T00:00:00"), None)
    gated = make_report("r2", "2025-01-02T00:00:00")  # its own gate compared nothing: exit 2, still comparable
    gated.update(exit_code=2, gate={"nothing_to_gate": "the reports share no case id", "regression": False})
    record_run(db, gated, None)
    assert baseline_last(db, "cases/test_cases.json", "openai", "2025-01-02T12:00:00") == "r2"
    errored = make_report("r3", "2025-01-03T00:00:00")
    errored["cases"][0]["status"] = "error"
    record_run(db, errored, None)
    missed = make_report("r4", "2025-01-04T00:00:00")  # a replay miss: counted in the summary
    missed["summary"]["replay"] = {"hits": 3, "misses": 1, "live": 0, "no_request_runs": 0}
    record_run(db, missed, None)
    filled = make_report("r5", "2025-01-05T00:00:00")  # misses filled live (--replay-miss live) are no miss
    filled["summary"]["replay"] = {"hits": 3, "misses": 2, "live": 2, "no_request_runs": 0}
    record_run(db, filled, None)
    skipped = make_report("r6", "2025-01-06T00:00:00")
    for case in skipped["cases"]:
        case["status"] = "skipped"
    record_run(db, skipped, None)
    assert baseline_last(db, "cases/test_cases.json", "openai", "2025-01-05T12:00:00") == "r5"
    assert baseline_last(db, "cases/test_cases.json", "openai", "2025-01-04T12:00:00") == "r2"
    assert baseline_last(db, "cases/test_cases.json", "openai", "2025-01-07T00:00:00") == "r5"


def test_why_not_baseline_names_the_first_reason() -> None:
    from agent_eval.report.baseline_rule import why_not_baseline

    row = {"run_id": "r", "statuses": {"a": "error", "b": "error", "c": "passed"},
           "summary": {"replay": {"misses": 2, "live": 0}}}
    assert why_not_baseline(row, {"a"}) == "2 cases ended in error"
    row["statuses"] = {"a": "passed"}
    assert why_not_baseline(row, {"a"}) == "it had 2 replay misses"
    row["summary"] = {}
    missing = "it did not select 4 cases selected now (b, c, d and 1 more)"
    assert why_not_baseline(row, {"a", "b", "c", "d", "e"}) == missing
    assert why_not_baseline({**row, "stopped_early": 1}, {"a"}) == "-x stopped it early"
    assert why_not_baseline({**row, "statuses": {}}, set()) == "it selected no case"
    assert why_not_baseline(row, {"a"}) is None


def test_history_keeps_one_trend_line_per_agent_and_model(db: Path) -> None:
    # gpt-4o scores 0.8 then 0.9; a cheap model, run in between, 0.1 then 0.2: mixed on one line they zigzag.
    for day, (model, score) in enumerate([("gpt-4o", 0.8), ("mini", 0.1), ("gpt-4o", 0.9), ("mini", 0.2)]):
        report = make_report(f"2025010{day + 1}-000000-aaaaaa", f"2025-01-0{day + 1}T00:00:00", score)
        report["model"] = model
        record_run(db, report, None)
    console = Console(record=True, width=200)
    render_history(recent_runs(db, "cases/test_cases.json"), ["pass_at_1"], console)
    lines = [line for line in console.export_text().splitlines() if line.strip().startswith("trend")]
    assert len(lines) == 2
    assert "openai / gpt-4o" in lines[0] and lines[0].split()[-1] == "▁▇"
    assert "openai / mini" in lines[1] and lines[1].split()[-1] == "▁▇"
