"""Impossible token counts from a provider, the judge, an agent's record_usage or a recorded span are data,
not crashes: null on the usage record, counted in metrics.usage_invalid, one warning, a null cost that
the header explains, and a whole report (section 12b)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import write_suite
from tests.e2e.hardening import agent_eval, all_runs, answer_with_usage
from tests.judged_suite import case, judged_suite
from tests.loopback import raw, router

PRICING = {"m": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}
# case id -> the prompt_tokens its provider answer carries
ODD = {"huge-float": 1e300, "negative": -5, "ten-to-29": 10**29, "two-to-63": 2**63, "integral-float": 12.0}


def odd_usage_suite(tmp_path: Path) -> Path:
    cases = [{"id": cid, "query": f"say ok ({cid})", "expect": {"contains": "ok"}} for cid in ODD]
    return write_suite(tmp_path, cases, {"name": "usage", "agent": "openai", "model": "m", "pricing": PRICING})


def provider(messages: list[dict]):
    cid = next(c for c in ODD if f"({c})" in messages[-1]["content"])
    return answer_with_usage("ok", ODD[cid])


@pytest.mark.parametrize("workers", [None, 2])
def test_impossible_provider_token_counts_are_null_and_counted(loopback, tmp_path: Path, workers) -> None:
    srv = loopback(router(provider))
    extra = ("--workers", workers) if workers else ()
    done = agent_eval(tmp_path, "run", "--cases", odd_usage_suite(tmp_path), "--output-dir", "reports",
                      "--no-html", *extra, OPENAI_BASE_URL=srv.base_url, OPENAI_API_KEY="agent-key-123")
    assert done.code == 0, done.err  # every case passes: bad usage is not the agent's failure nor an error
    assert "worker crashed" not in done.err
    runs = {cid: runs[0] for cid, runs in all_runs(done.report).items()}
    for cid in ("huge-float", "negative", "ten-to-29", "two-to-63"):
        run = runs[cid]
        assert run["status"] == "passed"
        assert run["trace"]["llm_calls"][0]["prompt_tokens"] is None
        assert run["trace"]["llm_calls"][0]["completion_tokens"] == 5
        assert run["metrics"]["usage_invalid"] == 1
        assert run["metrics"]["prompt_tokens"] == 0 and run["metrics"]["cost_usd"] is None
    good = runs["integral-float"]
    assert good["trace"]["llm_calls"][0]["prompt_tokens"] == 12 and good["metrics"]["usage_invalid"] == 0
    # 12 prompt tokens at $1/M + 5 completion tokens at $2/M = 12e-6 + 10e-6 = 22e-6
    assert good["metrics"]["cost_usd"] == pytest.approx(22e-6)
    summary = done.report["summary"]
    assert summary["cost_total_usd"] is None
    # tokens: the four odd runs count 0 + 5 each, the good one 12 + 5 -> 20 + 17 = 37
    assert summary["tokens_total"] == 37
    assert "4 token count(s) in 4 run(s)" in done.out  # the header says why the cost is null
    warnings = [line for line in done.err.splitlines() if "2**53" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning:"), done.err


def test_an_impossible_count_from_the_judge_nulls_its_cost(loopback, tmp_path: Path) -> None:
    judge = loopback(router(lambda messages: answer_with_usage("PASS\nfine", 1e300)))
    cases_file = judged_suite(tmp_path, [case("judged", "RUBRIC_PASS")], pricing={"judge-m": PRICING["m"]})
    done = agent_eval(tmp_path, "run", "--cases", cases_file, "--no-html", AGENT_EVAL_JUDGE_BASE_URL=judge.base_url,
                      AGENT_EVAL_JUDGE_API_KEY="judge-key-123", AGENT_EVAL_JUDGE_MODEL="judge-m")
    assert done.code == 0, done.err
    spent = done.report["summary"]["judge"]
    assert spent["calls"] == 1 and spent["usage_invalid"] == 1 and spent["cost_usd"] is None
    assert spent["prompt_tokens"] == 0 and spent["completion_tokens"] == 5
    assert "from the judge" in done.out
    assert len([line for line in done.err.splitlines() if "2**53" in line]) == 1, done.err


USAGE_AGENT = '''
def agent(task):
    for _ in range(2100):
        task.record_usage(2**53 - 1, 1, model="m")
    return "ok"


def bad_agent(task):
    task.record_usage(10**29, 1, model="m")
    return "ok"
'''


def test_2100_legal_record_usage_calls_sum_to_null_not_a_crash(tmp_path: Path) -> None:
    cases = [{"id": "many", "query": "q", "expect": {"contains": "ok"}}]
    cases_file = write_suite(tmp_path, cases, {"name": "usage", "agent": "agent.py:agent", "pricing": PRICING},
                             {"agent.py": USAGE_AGENT})
    done = agent_eval(tmp_path, "run", "--cases", cases_file, "--no-html")
    assert done.code == 0, done.err
    (run,) = all_runs(done.report)["many"]
    assert len(run["trace"]["llm_calls"]) == 2100
    # 2,100 x (2**53 - 1) passes 2**53 - 1, so the run's prompt sum is null; 2,100 x 1 is not
    assert run["metrics"]["prompt_tokens"] is None and run["metrics"]["completion_tokens"] == 2100
    assert run["metrics"]["usage_invalid"] == 0 and run["metrics"]["cost_usd"] is None
    assert done.report["summary"]["tokens_total"] is None


def test_an_impossible_record_usage_count_is_the_runs_agent_error(tmp_path: Path) -> None:
    cases = [{"id": "bad", "query": "q", "expect": {"contains": "ok"}}]
    cases_file = write_suite(tmp_path, cases, {"name": "usage", "agent": "agent.py:bad_agent"},
                             {"agent.py": USAGE_AGENT})
    done = agent_eval(tmp_path, "run", "--cases", cases_file, "--no-html")
    assert done.code == 1, done.err
    (run,) = all_runs(done.report)["bad"]
    assert run["trace"]["stop_reason"] == "agent_error"
    assert "between 0 and 2**53 - 1" in run["trace"]["agent_error"]


def test_score_of_spans_with_impossible_token_counts(tmp_path: Path) -> None:
    from tests.otlp_gen import Trace, assistant, export_request, jsonl, user

    trace = Trace("abcd0000000000000000000000000001")
    agent = trace.agent(0, 1000)
    trace.chat(10, 100, [user("hello")], [assistant("ok then")], model="m", usage=(10**29, 7), parent=agent)
    trace.chat(110, 200, [user("hello")], [assistant("ok then")], model="m", usage=(1e300, 3), parent=agent)
    trace.chat(210, 300, [user("hello")], [assistant("ok then")], model="m", usage=(12, 1), parent=agent)
    traces = tmp_path / "traces.jsonl"
    traces.write_bytes(jsonl([export_request(trace.spans)]))
    cases_file = write_suite(tmp_path, [{"id": "hello", "query": "hello", "expect": {"contains": "ok"},
                                          "metadata": {"trace_id": "abcd0000000000000000000000000001"}}],
                             {"name": "usage", "pricing": PRICING})
    done = agent_eval(tmp_path, "score", traces, "--cases", cases_file, "--no-html")
    assert done.code == 0, done.err
    (run,) = all_runs(done.report)["hello"]
    assert [c["prompt_tokens"] for c in run["trace"]["llm_calls"]] == [None, None, 12]
    # two null counts; the valid ones sum: prompt 12, completion 7 + 3 + 1 = 11
    assert run["metrics"]["usage_invalid"] == 2
    assert (run["metrics"]["prompt_tokens"], run["metrics"]["completion_tokens"]) == (12, 11)
    assert run["metrics"]["cost_usd"] is None and done.report["summary"]["cost_total_usd"] is None
    assert len([line for line in done.err.splitlines() if "2**53" in line]) == 1, done.err
    assert "2 token count(s) in 1 run(s)" in done.out


# Through task.base_url: the recording endpoint reads the answer it passes on.
BRIDGED = '''
import openai


def agent(task):
    client = openai.OpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
    answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": task.input}])
    return answer.choices[0].message.content
'''


@pytest.mark.parametrize("agent", ["openai", "agent.py:agent"])
def test_a_count_past_what_a_double_holds_is_an_impossible_number_not_an_unreadable_answer(
        loopback, tmp_path: Path, agent: str) -> None:
    # 1e309 is legal JSON that orjson refuses (it is infinite as a double): the answer is still read.
    body = (b'{"id": "x", "object": "chat.completion", "model": "m", "choices": [{"index": 0, "message": '
            b'{"role": "assistant", "content": "ok"}, "finish_reason": "stop"}], '
            b'"usage": {"prompt_tokens": 1e309, "completion_tokens": 5}}')
    srv = loopback(router(lambda messages: raw(body)))
    path = write_suite(tmp_path, [{"id": "c", "query": "say ok", "expect": {"contains": "ok"}}],
                       {"name": "usage", "agent": agent, "model": "m", "pricing": PRICING}, {"agent.py": BRIDGED})
    done = agent_eval(tmp_path, "run", "--cases", path, "--no-html", "--base-url", srv.base_url,
                      OPENAI_API_KEY="agent-key-123")
    assert done.code == 0, done.err
    (run,) = all_runs(done.report)["c"]
    assert run["status"] == "passed"
    assert (run["trace"]["llm_calls"][0]["prompt_tokens"], run["trace"]["llm_calls"][0]["completion_tokens"]) == (
        None, 5)
    assert run["metrics"]["usage_invalid"] == 1 and run["metrics"]["cost_usd"] is None
