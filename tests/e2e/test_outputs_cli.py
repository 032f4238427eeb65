"""The files a run writes besides its JSON report, through the CLI: HTML, history, gate, JUnit, Markdown."""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson

from tests.cli import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "cases" / "test_cases.json"


def agent_eval(*args: str, cwd: Path) -> CliResult:
    return run_cli(*args, cwd=cwd, env=dict(os.environ), timeout=120)


def demo_run(tmp_path: Path, *extra: str) -> tuple[CliResult, dict]:
    out = tmp_path / "reports"
    proc = agent_eval("run", "--cases", str(CASES), "--no-judge", "--quiet", "--output-dir", str(out),
                      *extra, cwd=tmp_path)
    newest = max(out.glob("*.json"), key=lambda p: p.stat().st_mtime)
    return proc, orjson.loads(newest.read_bytes())


def test_two_runs_give_a_history_and_baseline_last_gates_the_second(tmp_path: Path) -> None:
    first, report1 = demo_run(tmp_path, "--no-html")
    assert first.returncode == 1, first.stderr  # the demo agent fails some cases, honestly
    assert not list((tmp_path / "reports").glob("*.html"))
    assert report1["gate"] is None

    junit, markdown = tmp_path / "results.xml", tmp_path / "summary.md"
    second, report2 = demo_run(tmp_path, "--baseline", "last", "--junit", str(junit), "--markdown", str(markdown))
    assert second.returncode == 1, second.stderr
    # An unchanged agent against itself: nothing regressed, every default gate was compared.
    gate = report2["gate"]
    assert gate is not None and gate["regression"] is False
    assert (tmp_path / "reports" / f"{report2['run_id']}.html").is_file()

    suite = ET.parse(junit).getroot().find("testsuite")
    failed = [c for c in report2["cases"] if c["status"] == "failed"]
    assert int(suite.get("tests")) == len(report2["cases"])
    assert int(suite.get("failures")) == len(failed)
    assert failed[0]["id"] in markdown.read_text()

    history = agent_eval("history", "--cases", str(CASES), "--output-dir", str(tmp_path / "reports"), cwd=tmp_path)
    assert history.returncode == 0, history.stderr
    assert report1["run_id"] in history.stdout and report2["run_id"] in history.stdout


def test_baseline_last_without_history_warns_and_runs_ungated(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    proc = agent_eval("run", "--cases", str(CASES), "--no-judge", "--quiet", "--output-dir", str(out),
                      "--baseline", "last", "--no-html", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the demo agent fails some cases, honestly
    said = " ".join(proc.stderr.split())
    assert "warning: --baseline last" in said and "no earlier run" in said and "Traceback" not in said
    (report,) = out.glob("*.json")
    assert orjson.loads(report.read_bytes())["gate"] is None


def test_compare_exit_codes(tmp_path: Path) -> None:
    _, report = demo_run(tmp_path, "--no-html")
    base = tmp_path / "reports" / f"{report['run_id']}.json"
    same = agent_eval("compare", str(base), str(base), cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr

    # Every run of every counted case flipped to failure: pass_at_1 falls from 0.x to 0.
    worse = orjson.loads(base.read_bytes())
    for case in worse["cases"]:
        for run in case["runs"]:
            run["success"] = False
            run["metrics"]["success"] = 0
    worse_path = tmp_path / "worse.json"
    worse_path.write_bytes(orjson.dumps(worse))
    regressed = agent_eval("compare", str(base), str(worse_path), "--gate", "pass_at_1", cwd=tmp_path)
    assert regressed.returncode == 1, regressed.stdout

    junk = tmp_path / "junk.json"
    junk.write_text("not json")
    bad = agent_eval("compare", str(base), str(junk), cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_baseline_that_cannot_be_read_is_exit_2_before_running(tmp_path: Path) -> None:
    missing = tmp_path / ("a-folder-with-a-long-name-" * 4) / "missing.json"
    proc = run_cli("run", "--cases", str(CASES), "--no-judge", "--quiet", "--output-dir", str(tmp_path / "reports"),
                   "--baseline", str(missing), cwd=tmp_path, env={**os.environ, "COLUMNS": "40"})
    assert proc.returncode == 2
    assert str(missing) in proc.stderr and "Traceback" not in proc.stderr  # the path is never broken by a wrap
    assert not (tmp_path / "reports").exists() or not list((tmp_path / "reports").glob("*.jsonl"))


def test_view_rebuilds_the_page_of_a_report(tmp_path: Path) -> None:
    _, report = demo_run(tmp_path, "--no-html")
    base = tmp_path / "reports" / f"{report['run_id']}.json"
    out = tmp_path / "page.html"
    proc = agent_eval("view", str(base), "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    assert report["run_id"] in page and "<script" in page


def test_an_output_dir_that_cannot_be_created_is_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = agent_eval("run", "--cases", str(CASES), "--no-judge", "--quiet", "--output-dir",
                      str(blocker / "reports"), cwd=tmp_path)
    assert proc.returncode == 2
    assert "output directory" in proc.stderr and "Traceback" not in proc.stderr


def test_rescore_writes_junit_markdown_and_a_history_row_that_baseline_last_and_lf_skip(tmp_path: Path) -> None:
    import sqlite3

    first, report = demo_run(tmp_path, "--no-html")
    assert first.returncode == 1, first.stderr
    report_path = tmp_path / "reports" / f"{report['run_id']}.json"
    junit, markdown = tmp_path / "rescore.xml", tmp_path / "rescore.md"
    rescore = agent_eval("rescore", str(report_path), "--no-judge", "--quiet", "--junit", str(junit),
                         "--markdown", str(markdown), cwd=tmp_path)
    assert rescore.returncode == 1, rescore.stderr  # the same traces, the same honest failures
    rescored = orjson.loads(next(p for p in (tmp_path / "reports").glob("*.json") if p != report_path).read_bytes())
    assert f"JUnit: {junit}" in rescore.stdout and f"Markdown: {markdown}" in rescore.stdout

    suite = ET.parse(junit).getroot().find("testsuite")
    failed = [c for c in rescored["cases"] if c["status"] == "failed"]
    assert int(suite.get("tests")) == len(rescored["cases"]) and int(suite.get("failures")) == len(failed)
    assert failed[0]["id"] in markdown.read_text()

    db = tmp_path / "reports" / "history.sqlite"
    with sqlite3.connect(db) as conn:
        rows = dict(conn.execute("SELECT run_id, rescored_from FROM runs").fetchall())
    assert rows == {report["run_id"]: None, rescored["run_id"]: report["run_id"]}

    # The next run gates against the original run, never the rescore, and --lf reads the original too.
    second, report2 = demo_run(tmp_path, "--no-html", "--baseline", "last", "--lf")
    assert second.returncode == 1, second.stderr
    assert report2["gate"]["base_run_id"] == report["run_id"]
    assert sorted(report2["settings"]["last_failed"]) == sorted(c["id"] for c in report["cases"]
                                                                if c["status"] in ("failed", "error"))
    history = agent_eval("history", "--cases", str(CASES), "--output-dir", str(tmp_path / "reports"), cwd=tmp_path)
    assert f"{rescored['run_id']}" in history.stdout and "rescored" in history.stdout
