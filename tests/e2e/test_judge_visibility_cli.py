"""Judging off is visible (`judge_skipped`, `(judge off)`, summary.runs_judge_skipped), and with judging on
the terminal always says how many runs were judged, also when none was. In-process, loopback judge."""
from __future__ import annotations

import os
from pathlib import Path

import orjson

from tests.cli import run_cli
from tests.judged_suite import by_id, case, judge_script, judged_suite


def run(tmp_path: Path, cases_file: Path, *extra: str, judge=None) -> tuple[int, dict, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), COLUMNS="200", NO_COLOR="1")
    if judge is not None:
        env.update(AGENT_EVAL_JUDGE_BASE_URL=judge.base_url, AGENT_EVAL_JUDGE_API_KEY="judge-key",
                   AGENT_EVAL_JUDGE_MODEL="judge-m")
    out = tmp_path / "reports"
    done = run_cli("run", "--cases", cases_file, "--output-dir", out, "--no-html", *extra, cwd=tmp_path, env=env)
    (path,) = out.glob("2*.json")
    return done.exit_code, orjson.loads(path.read_bytes()), done.stdout


def test_no_judge_marks_each_run_whose_rubric_went_unasked(tmp_path: Path) -> None:
    cases_file = judged_suite(tmp_path, [case("judged", "RUBRIC_PASS", expect={"contains": "refunded"}),
                                         case("plain", None, expect={"contains": "refunded"}),
                                         case("rubric-only", "RUBRIC_PASS")])
    code, report, out = run(tmp_path, cases_file, "--no-judge", "-k", "2")
    assert code == 0, out
    cases = by_id(report)
    assert [r.get("judge_skipped") for r in cases["judged"]["runs"]] == [True, True]
    assert all("judge_skipped" not in r for r in cases["plain"]["runs"])
    assert cases["rubric-only"]["status"] == "skipped"  # nothing left to check: skipped, "judge disabled"
    # 2 runs of "judged"; "plain" has no rubric and "rubric-only" was skipped (no runs).
    assert report["summary"]["runs_judge_skipped"] == 2
    judged_row = next(line for line in out.splitlines() if "judged" in line and "passed" in line)
    assert "passed (judge off)" in judged_row
    plain_row = next(line for line in out.splitlines() if "plain" in line)
    assert "judge off" not in plain_row


def test_with_judging_on_the_terminal_says_no_run_was_judged(loopback, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    # The agent never says "nope": the deterministic check fails first, so the judge is never asked.
    cases_file = judged_suite(tmp_path, [case("bad", "RUBRIC_PASS", expect={"contains": "nope"})])
    code, report, out = run(tmp_path, cases_file, "-k", "2", judge=judge)
    assert code == 1 and judge.count == 0
    assert report["summary"]["runs_to_judge"] == 2
    assert "judge: on, 0 calls: every judged run failed a deterministic check first" in out
    # rescore says the same of the same traces.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), COLUMNS="200", NO_COLOR="1",
               AGENT_EVAL_JUDGE_BASE_URL=judge.base_url, AGENT_EVAL_JUDGE_API_KEY="judge-key",
               AGENT_EVAL_JUDGE_MODEL="judge-m")
    rescored = run_cli("rescore", tmp_path / "reports" / f"{report['run_id']}.json", cwd=tmp_path, env=env)
    assert "judge: on, 0 calls: every judged run failed a deterministic check first" in rescored.stdout
    assert judge.count == 0


def test_the_judge_line_counts_the_judged_runs(loopback, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    cases_file = judged_suite(tmp_path, [case("good", "RUBRIC_PASS"),
                                         case("bad", "RUBRIC_PASS", expect={"contains": "nope"})])
    code, report, out = run(tmp_path, cases_file, judge=judge)
    assert code == 1 and judge.count == 1
    # 2 runs of judged cases; "bad" failed its check first, so 1 of 2 was judged.
    assert "judge judge-m: 1 calls, 0 cache hits, 1,020 tokens" in out
    assert "; 1 of 2 run(s) judged (the others failed a deterministic check first)" in out


def test_judge_off_shows_beside_the_status_in_the_markdown_and_html_case_tables(tmp_path: Path) -> None:
    cases_file = judged_suite(tmp_path, [case("judged-bad", "RUBRIC_PASS", expect={"contains": "nope"}),
                                         case("plain-bad", None, expect={"contains": "nope"})])
    code, report, out = run(tmp_path, cases_file, "--no-judge", "--markdown", str(tmp_path / "summary.md"))
    assert code == 1, out
    rows = [line for line in (tmp_path / "summary.md").read_text().splitlines() if line.startswith("| `")]
    judged = next(line for line in rows if "judged-bad" in line)
    plain = next(line for line in rows if "plain-bad" in line)
    assert "| failed (judge off) |" in judged and "judge off" not in plain
    # The page embeds the note the terminal and the Markdown use; cases.js puts it beside the status.
    from agent_eval.report.html import build_html
    from agent_eval.report.reasons import judge_off_note

    page = build_html(report)
    notes = [judge_off_note(c) for c in report["cases"]]
    assert notes == [" (judge off)", ""]  # the case order of the report: judged-bad, plain-bad
    assert '"status_notes":' + orjson.dumps(notes).decode() in page
