"""The judge against the loopback server: verdicts, errors, the disk cache, dedup, repeats and usage."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent_eval.score.judge import (
    Judge,
    JudgeCache,
    JudgeUsage,
    build_judge,
    default_cache_dir,
    require_judge,
)
from agent_eval.errors import ConfigError
from agent_eval.score.pipeline import ScoringContext, score_run
from tests.loopback import status, text

CASE = {"id": "c1", "query": "refund ORD_1", "rubric": "The reply states the refunded amount."}
TRACE = {"user_messages": ["refund ORD_1"], "replies": ["Refunded 12.50."], "final_answer": "Refunded 12.50.",
         "cards": [], "final_agent": None, "stop_reason": "completed", "agent_error": None, "steps": [],
         "llm_calls": [], "latency_s": 0.1, "ttfa_s": 0.1, "final_env_diff": []}


def make_judge(srv, cache_dir: Path | None = None, repeat: int | None = None) -> Judge:
    cache = JudgeCache(cache_dir) if cache_dir is not None else None
    return Judge("judge-model", srv.base_url, "test-key", cache, repeat)


def test_pass_gives_a_verdict_a_passing_check_and_usage(loopback) -> None:
    srv = loopback([text("PASS\nThe amount 12.50 is stated.", prompt_tokens=100, completion_tokens=7)])
    judge = make_judge(srv)
    outcome = asyncio.run(judge.judge_run(CASE, TRACE))
    assert outcome.error is None
    assert outcome.records == {"judge": {"verdict": "PASS", "reason": "The amount 12.50 is stated.",
                                         "model": "judge-model"}}
    assert outcome.checks == [{"name": "judge", "passed": True, "detail": "The amount 12.50 is stated."}]
    request = srv.requests[0]
    assert request["model"] == "judge-model" and request["temperature"] == 0
    assert "The reply states the refunded amount." in request["messages"][1]["content"]
    # 100 prompt + 7 completion tokens at $1 / $2 per million: 100e-6 + 14e-6 = 114e-6.
    pricing = {"judge-model": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}
    assert judge.summary(pricing) == {"calls": 1, "cache_hits": 0, "prompt_tokens": 100,
                                      "completion_tokens": 7, "cost_usd": pytest.approx(114e-6), "errors": 0}


def test_fail_keeps_the_reason_in_a_failed_check(loopback) -> None:
    srv = loopback([text("**FAIL** — the amount is missing")])
    outcome = asyncio.run(make_judge(srv).judge_run(CASE, TRACE))
    assert outcome.error is None
    assert outcome.records["judge"]["verdict"] == "FAIL"
    assert outcome.checks == [{"name": "judge", "passed": False, "detail": "the amount is missing"}]


def test_garbage_is_an_error_never_a_verdict(loopback) -> None:
    srv = loopback([text("I think the assistant did well overall.")])
    judge = make_judge(srv)
    outcome = asyncio.run(judge.judge_run(CASE, TRACE))
    assert outcome.checks == [] and outcome.records == {"judge": None}
    assert outcome.error.startswith("judge error: the answer does not start with PASS or FAIL")
    assert judge.usage.errors == 1


def test_a_provider_error_is_a_judge_error(loopback) -> None:
    srv = loopback([status(400)])  # not retried by the SDK's rule
    judge = make_judge(srv)
    outcome = asyncio.run(judge.judge_run(CASE, TRACE))
    assert outcome.error.startswith("judge error: BadRequestError") and srv.count == 1
    assert judge.usage.errors == 1 and judge.usage.calls == 1


def test_the_disk_cache_answers_an_unchanged_prompt_without_a_call(loopback, tmp_path: Path) -> None:
    srv = loopback([text("FAIL\nno amount")])
    first = asyncio.run(make_judge(srv, tmp_path).judge_run(CASE, TRACE))
    second_judge = make_judge(srv, tmp_path)
    second = asyncio.run(second_judge.judge_run(CASE, TRACE))
    assert srv.count == 1
    assert second.records == first.records
    assert second_judge.usage == JudgeUsage(calls=0, cache_hits=1)
    changed = {**CASE, "rubric": "Another criterion."}
    missed = asyncio.run(make_judge(srv, tmp_path).judge_run(changed, TRACE))
    assert srv.count == 2  # a new prompt is a miss (the one-reply script is exhausted: a 500)
    assert missed.error.startswith("judge error: InternalServerError")


def test_an_unusable_answer_is_never_cached_so_the_next_run_asks_again(loopback, tmp_path: Path) -> None:
    srv = loopback([text("maybe"), text("PASS\nstated")])
    first = asyncio.run(make_judge(srv, tmp_path).judge_run(CASE, TRACE))
    assert first.error is not None and not list(tmp_path.rglob("*.json"))
    again = make_judge(srv, tmp_path)
    outcome = asyncio.run(again.judge_run(CASE, TRACE))
    assert srv.count == 2 and outcome.error is None and outcome.records["judge"]["verdict"] == "PASS"
    assert again.usage.calls == 1 and again.usage.cache_hits == 0


def test_an_unusable_answer_left_in_the_cache_by_an_older_version_is_a_miss(loopback, tmp_path: Path) -> None:
    from agent_eval.score.judge import cache_key
    from agent_eval.score.judge_prompt import build_prompt

    srv = loopback([text("FAIL\nno amount")])
    key = cache_key("judge-model", build_prompt(TRACE, CASE["rubric"]), srv.base_url)
    JudgeCache(tmp_path).put(key, "judge-model", "maybe")
    outcome = asyncio.run(make_judge(srv, tmp_path).judge_run(CASE, TRACE))
    assert srv.count == 1 and outcome.records["judge"]["verdict"] == "FAIL"


def test_without_a_cache_every_process_asks(loopback) -> None:
    srv = loopback([text("PASS"), text("PASS")])
    asyncio.run(make_judge(srv).judge_run(CASE, TRACE))
    asyncio.run(make_judge(srv).judge_run(CASE, TRACE))
    assert srv.count == 2


def test_identical_prompts_in_flight_are_asked_once(loopback) -> None:
    srv = loopback([text("PASS")], latency_s=0.05)
    judge = make_judge(srv)

    async def three() -> list:
        return await asyncio.gather(*(judge.judge_run(CASE, TRACE) for _ in range(3)))

    outcomes = asyncio.run(three())
    assert srv.count == 1
    assert all(o.records["judge"]["verdict"] == "PASS" for o in outcomes)
    # 3 identical prompts at once: 1 call; the other 2 wait for it (in-process de-duplication, not the disk cache)
    assert judge.usage == JudgeUsage(calls=1, cache_hits=2, deduplicated=2, prompt_tokens=10, completion_tokens=5)


def test_both_criteria_are_asked_and_checked(loopback) -> None:
    srv = loopback(lambda req, i: "FAIL\nnot reached" if "OUTCOME" in req["messages"][1]["content"].upper()
                   and "must have reached" in req["messages"][1]["content"] else "PASS\nok")
    case = {**CASE, "expected_outcome": "The refund went through."}
    outcome = asyncio.run(make_judge(srv).judge_run(case, TRACE))
    assert srv.count == 2
    assert [c["name"] for c in outcome.checks] == ["judge", "judge:expected_outcome"]
    assert [c["passed"] for c in outcome.checks] == [True, False]
    assert outcome.records["judge_expected_outcome"]["reason"] == "not reached"


def test_repeat_makes_n_uncached_calls_and_keeps_the_majority(loopback, tmp_path: Path) -> None:
    srv = loopback([text("PASS\na"), text("FAIL\nb"), text("FAIL\nc")])
    judge = make_judge(srv, tmp_path, repeat=3)
    outcome = asyncio.run(judge.judge_run(CASE, TRACE))
    assert srv.count == 3
    assert outcome.records["judge"] == {"verdict": "FAIL", "reason": "b", "model": "judge-model",
                                        "votes": {"PASS": 1, "FAIL": 2}}
    assert judge.agreement == {"c1": [False]}


def test_repeat_tie_or_any_unusable_answer_is_an_error(loopback) -> None:
    srv = loopback([text("PASS"), text("FAIL"), text("PASS"), text("PASS"), text("hmm")])
    tie = asyncio.run(make_judge(srv, repeat=2).judge_run(CASE, TRACE))
    assert tie.error == "judge error: a tie over 2 answers (1 PASS, 1 FAIL)" and tie.checks == []
    garbled = make_judge(srv, repeat=3)
    outcome = asyncio.run(garbled.judge_run(CASE, TRACE))
    assert outcome.error.startswith("judge error: the answer does not start") and outcome.checks == []
    assert garbled.agreement == {"c1": [False]}


def _score(judge: Judge | None, checks_pass: bool = True) -> dict:
    case = {**CASE, "expect": {"contains": "12.50" if checks_pass else "99.99"}}
    return asyncio.run(score_run(case, 0, TRACE, {}, None, None, ScoringContext(judge=judge)))


def test_score_run_adds_the_judge_check_after_the_deterministic_ones(loopback) -> None:
    srv = loopback([text("FAIL\nrude")])
    run = _score(make_judge(srv))
    assert [c["name"] for c in run["checks"]] == ["expect:contains", "judge"]
    assert run["status"] == "failed" and run["success"] is False
    assert run["judge"]["reason"] == "rude" and run["judge_expected_outcome"] is None
    assert run["metrics"]["progress"] == 0.5  # 1 of 2 checks passed


def test_a_failed_check_spares_the_judge_call(loopback) -> None:
    srv = loopback([])
    run = _score(make_judge(srv), checks_pass=False)
    assert srv.count == 0 and run["judge"] is None and run["status"] == "failed"


def test_a_judge_error_makes_the_run_an_error(loopback) -> None:
    srv = loopback([text("")])
    run = _score(make_judge(srv))
    assert run["status"] == "error" and run["success"] is False
    assert run["error"] == "judge error: the answer does not start with PASS or FAIL: '(empty)'"


def test_cache_dir_follows_xdg(tmp_path: Path) -> None:
    home_default = Path.home() / ".cache" / "agent-eval" / "judge"
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "agent-eval" / "judge"
    assert default_cache_dir({"XDG_CACHE_HOME": "relative"}) == home_default
    assert default_cache_dir({}) == home_default


def test_configuration_errors_name_the_case_and_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"case 'c1' .* has a rubric.*AGENT_EVAL_JUDGE_MODEL.*--no-judge"):
        require_judge(None, "k", CASE, "cases.json")
    with pytest.raises(ConfigError, match=r"AGENT_EVAL_JUDGE_API_KEY.*--no-judge"):
        require_judge("m", None, CASE, "cases.json")
    assert build_judge(False, "m", None, "k", False, [CASE]) is None
    assert build_judge(True, "m", None, "k", False, [{"id": "x", "rubric": ""}]) is None
    assert build_judge(True, "m", None, "k", True, [CASE]).cache is None
