"""`agent-eval run` and `rescore` with a judge, end to end (in-process) against loopback servers."""
from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from tests.cli import run_cli
from tests.judged_suite import by_id, case, judge_script, judged_suite
from tests.loopback import tool_then_text



def cli(tmp_path: Path, *args: str, judge=None, agent_srv=None, **env_over: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), COLUMNS="250", NO_COLOR="1")
    if judge is not None:
        env.update(AGENT_EVAL_JUDGE_BASE_URL=judge.base_url, AGENT_EVAL_JUDGE_API_KEY="judge-key",
                   AGENT_EVAL_JUDGE_MODEL="judge-m")
    if agent_srv is not None:
        env.update(OPENAI_BASE_URL=agent_srv.base_url, OPENAI_API_KEY="agent-key", AGENT_EVAL_MODEL="agent-m")
    env.update(env_over)
    done = run_cli(*args, cwd=tmp_path, env=env, timeout=120)
    return done.returncode, done.stdout, done.stderr


def run_suite(tmp_path: Path, cases_file: Path, *extra: str, **kw) -> tuple[int, dict, str, str]:
    out_dir = tmp_path / "reports"
    before = set(out_dir.glob("*.json")) if out_dir.exists() else set()
    code, out, err = cli(tmp_path, "run", "--cases", str(cases_file), "--output-dir", str(out_dir),
                         *extra, **kw)
    new = sorted(set(out_dir.glob("*.json")) - before)
    report = orjson.loads(new[-1].read_bytes()) if new else {}
    return code, report, out, err


def test_verdicts_reasons_and_the_cache(loopback, tmp_path: Path) -> None:
    judge = loopback(judge_script())
    cases_file = judged_suite(tmp_path, [case("good", "RUBRIC_PASS"),
                                        case("bad", "RUBRIC_FAIL", expect={"contains": "refunded"}),
                                        case("plain", None, expect={"contains": "Order A"})])
    code, report, out, err = run_suite(tmp_path, cases_file, judge=judge)
    assert code == 1, err
    cases = by_id(report)
    assert cases["good"]["status"] == "passed" and cases["bad"]["status"] == "failed"
    good_run, bad_run = cases["good"]["runs"][0], cases["bad"]["runs"][0]
    assert good_run["judge"] == {"verdict": "PASS", "reason": "the refund is stated", "model": "judge-m"}
    assert bad_run["judge"]["reason"] == "the amount is missing"
    assert [c["name"] for c in bad_run["checks"]] == ["expect:contains", "judge"]
    assert cases["plain"]["runs"][0]["judge"] is None
    assert report["summary"]["judge"] == {"calls": 2, "cache_hits": 0, "prompt_tokens": 2000,
                                          "completion_tokens": 40, "cost_usd": None, "errors": 0}
    assert "judge: the amount is missing" in out
    assert "judge judge-m: 2 calls, 0 cache hits, 2,040 tokens" in out
    assert judge.count == 2
    # The judge's prompt carries the trajectory: the tool call and the env change.
    prompt = judge.requests[0]["messages"][1]["content"]
    assert 'refund({"order_id":"A"})' in prompt and 'orders.A.status: "delivered" -> "refunded"' in prompt

    code, report, _, _ = run_suite(tmp_path, cases_file, judge=judge)
    assert code == 1 and judge.count == 2  # an unchanged re-run makes zero judge calls
    assert report["summary"]["judge"]["calls"] == 0 and report["summary"]["judge"]["cache_hits"] == 2
    assert by_id(report)["bad"]["runs"][0]["judge"]["reason"] == "the amount is missing"


def test_a_rubric_without_a_judge_model_is_a_configuration_error(tmp_path: Path) -> None:
    cases_file = judged_suite(tmp_path, [case("needs-judge", "RUBRIC_PASS")])
    code, _, out, err = run_suite(tmp_path, cases_file, OPENAI_API_KEY="k")
    assert code == 2 and "Traceback" not in err
    assert "case 'needs-judge'" in err and "AGENT_EVAL_JUDGE_MODEL" in err and "--no-judge" in err


def test_judge_tokens_stay_apart_and_rescore_repeats_without_the_agent(loopback, tmp_path: Path) -> None:
    agent_srv = loopback(tool_then_text("refund", {"order_id": "A"}, "Order A refunded."))
    judge = loopback(judge_script())
    pricing = {"agent-m": {"input_per_mtok": 1.0, "output_per_mtok": 1.0}}
    cases_file = judged_suite(tmp_path, [case("good", "RUBRIC_PASS"), case("bad", "RUBRIC_FAIL"),
                                        case("plain", None, expect={"contains": "refunded"})],
                             agent="openai", pricing=pricing)
    code, report, _, _ = run_suite(tmp_path, cases_file, "-k", "2", judge=judge, agent_srv=agent_srv)
    assert code == 1
    agent_calls = agent_srv.count
    assert agent_calls == 12  # 3 cases x 2 runs x 2 completions (tool call, then answer)
    # Each agent completion is 10 + 5 tokens (the loopback default); the judge's 1,020 never count.
    assert report["summary"]["tokens_total"] == 12 * 15
    assert report["summary"]["cost_total_usd"] == pytest.approx(12 * 15 / 1e6)
    assert report["summary"]["judge"]["prompt_tokens"] == 2000 and judge.count == 2

    report_path = tmp_path / "reports" / f"{report['run_id']}.json"
    code, out, err = cli(tmp_path, "rescore", str(report_path), "--judge-repeat", "3",
                         judge=judge, agent_srv=agent_srv)
    assert code == 1, err
    assert agent_srv.count == agent_calls  # the agent is never called
    assert judge.count == 2 + 4 * 3  # 4 judged runs (good and bad, 2 runs each), 3 uncached calls each
    new = sorted((tmp_path / "reports").glob("*.json"))
    rescored = orjson.loads(next(p for p in new if p != report_path).read_bytes())
    assert rescored["summary"]["judge"]["calls"] == 12 and rescored["summary"]["judge"]["agreement"] == 1.0
    assert by_id(rescored)["good"]["judge_agreement"] == 1.0
    assert by_id(rescored)["good"]["runs"][0]["judge"]["votes"] == {"PASS": 3, "FAIL": 0}
    assert rescored["settings"]["rescored_from"] == report["run_id"]
    assert "judge agreement: 1.000" in out and "Rescored report:" in out
    # rescore writes the page too, beside its report; --quiet prints only the verdict and the files.
    page = tmp_path / "reports" / f"{rescored['run_id']}.html"
    assert page.exists() and f"HTML: {page}" in out and rescored["run_id"] in page.read_text()
    code, quiet_out, err = cli(tmp_path, "rescore", str(report_path), "--quiet", judge=judge, agent_srv=agent_srv)
    assert code == 1, err
    assert [line.split(":")[0] for line in quiet_out.strip().splitlines()] == ["FAIL (exit 1)", "Rescored report",
                                                                               "HTML"]
