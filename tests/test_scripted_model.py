"""The scripted model (agent_eval/scripted/): its script's checks, its answers over the real SDK, the
X-Agent-Eval-* headers agent-eval sends it, and `agent-eval run` against it end to end (in-process)."""
from __future__ import annotations

import json
from pathlib import Path

import openai
import orjson
import pytest

from agent_eval import scripted_model
from agent_eval.errors import ConfigError
from agent_eval.provider.keying import RunKeys, headers_for, is_loopback
from agent_eval.scripted.script import load_script
from agent_eval.scripted.server import serving
from tests.builders import write_suite
from tests.cli import run_cli

USER = [{"role": "user", "content": "please refund order A"}]


def client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="k", max_retries=3)


@pytest.mark.parametrize(("entries", "said"), [
    ({"match": {}}, "a JSON list"),
    ([["x"]], "entry 1: an entry is an object"),
    ([{"reply": "a"}, {"match": {"role": "assistant"}, "reply": "b"}], "entry 2, field 'match.role'"),
    ([{"match": {"turn": -1}, "reply": "a"}], "entry 1, field 'match.turn'"),
    ([{"match": {"turn": True}, "reply": "a"}], "entry 1, field 'match.turn'"),
    ([{"match": {"case": ""}, "reply": "a"}], "entry 1, field 'match.case'"),
    ([{"match": {"tool": "x"}, "reply": "a"}], "entry 1, field 'match.tool'"),
    ([{"match": {}}], "entry 1, field 'reply': missing"),
    ([{"reply": {"verdict": "maybe"}}], "entry 1, field 'reply.verdict'"),
    ([{"reply": {"tool_calls": []}}], "entry 1, field 'reply.tool_calls'"),
    ([{"reply": {"tool_calls": [{"arguments": {}}]}}], "entry 1, field 'reply.tool_calls[0].name'"),
    ([{"reply": {"tool_calls": [{"name": "x", "arguments": [1]}]}}], "field 'reply.tool_calls[0].arguments'"),
    ([{"reply": {"tool_calls": [{"name": "x"}], "verdict": "PASS"}}], "entry 1, field 'reply': an object with one"),
    ([{"reply": 3}], "entry 1, field 'reply': a text"),
    ([{"reply": "a", "when": 1}], "entry 1, field 'when': unknown field"),
])
def test_a_bad_script_names_its_entry_and_field(tmp_path: Path, entries: object, said: str) -> None:
    with pytest.raises(ConfigError, match="the script") as caught:
        load_script(entries)  # type: ignore[arg-type]
    assert said in str(caught.value)
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps(entries))
    result = run_cli("scripted-model", script)
    assert result.exit_code == 2, result.stderr
    assert str(script) in result.stderr and said in result.stderr and "Traceback" not in result.stderr


def test_a_script_that_is_not_json_or_missing_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    result = run_cli("scripted-model", bad)
    assert result.exit_code == 2 and "not JSON" in result.stderr and str(bad) in result.stderr
    result = run_cli("scripted-model", tmp_path / "none.json")
    assert result.exit_code == 2 and "cannot read the script" in result.stderr


def test_the_first_matching_entry_answers_text_tool_calls_and_verdicts() -> None:
    script = [
        {"match": {"contains": "judge this"}, "reply": {"verdict": "fail", "reason": "no amount"}},
        {"match": {"contains": "refunded"}, "reply": "Order A is refunded."},
        {"match": {"contains": "refund"},
         "reply": {"tool_calls": [{"name": "refund", "arguments": {"order_id": "A"}}]}},
        {"reply": "fallback"},
    ]
    with scripted_model(script) as base_url:
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        sdk = client(base_url)
        first = sdk.chat.completions.create(model="m", messages=USER)
        call = first.choices[0].message.tool_calls[0]
        assert (call.id, call.function.name, json.loads(call.function.arguments)) == ("call_0", "refund",
                                                                                       {"order_id": "A"})
        assert first.choices[0].finish_reason == "tool_calls"
        after = [*USER, {"role": "assistant", "tool_calls": [call.model_dump()]},
                 {"role": "tool", "tool_call_id": "call_0", "content": '{"status": "refunded"}'}]
        second = sdk.chat.completions.create(model="m", messages=after)
        assert second.choices[0].message.content == "Order A is refunded."
        # usage from the lengths: 20 characters of reply are 5 tokens; the request's texts
        # ("please refund order A" 21 + '{"status": "refunded"}' 22 = 43 characters) are ceil(43 / 4) = 11
        assert (second.usage.completion_tokens, second.usage.prompt_tokens) == (5, 11)
        verdict = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "judge this"}])
        assert verdict.choices[0].message.content == "FAIL\nno amount"
        assert sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}]) \
            .choices[0].message.content == "fallback"
        streamed = "".join(chunk.choices[0].delta.content or "" for chunk in sdk.chat.completions.create(
            model="m", messages=after, stream=True) if chunk.choices)
        assert streamed == "Order A is refunded."


def test_no_match_is_a_400_naming_the_request_and_never_retried() -> None:
    with serving([{"match": {"role": "judge"}, "reply": "PASS"}]) as model:
        with pytest.raises(openai.BadRequestError) as caught:
            client(model.base_url).chat.completions.create(model="m", messages=USER)  # the SDK retries 3 times
        assert "no entry of the script matches" in str(caught.value)
        assert "last message 'please refund order A'" in str(caught.value)
        assert [status for _, status in model.asked] == [400]


def test_headers_go_to_loopback_hosts_only() -> None:
    assert all(map(is_loopback, ["http://127.0.0.1:1/v1", "http://localhost/v1", "http://[::1]:8/v1",
                                 "http://127.9.0.1/v1"]))
    assert not any(map(is_loopback, [None, "https://api.openai.com/v1", "http://10.0.0.1/v1",
                                     "http://localhost.evil.com/v1", "http://127.0.0.1.nip.io/v1", "::"]))
    keys = RunKeys("c", 1, 2)
    assert headers_for("https://api.openai.com/v1", "agent", keys) == {}
    assert headers_for("http://127.0.0.1:9/v1", "judge", keys) == {
        "X-Agent-Eval-Role": "judge", "X-Agent-Eval-Case": "c", "X-Agent-Eval-Trial": "1"}  # a judge has no turn


TOOLS = '''
from agent_eval import tool


@tool
def refund(env: dict, order_id: str) -> dict:
    """Refund an order."""
    env["orders"][order_id]["status"] = "refunded"
    return {"order_id": order_id, "status": "refunded"}
'''

# The agent (the built-in one) refunds in turn 0 of `refund` and answers once the tool's result is back; the
# judge passes `refund`'s rubric and fails `judged-fail`'s; the simulated user of `chat` speaks twice, then
# stops. Each entry is keyed by the headers agent-eval sends (role, case, turn) where the texts are alike.
SCRIPT = [
    {"match": {"role": "judge", "contains": "mentions the refund"}, "reply": {"verdict": "PASS", "reason": "said"}},
    {"match": {"role": "judge"}, "reply": {"verdict": "FAIL", "reason": "scripted no"}},
    {"match": {"role": "user", "case": "chat", "turn": 0}, "reply": "hello, my order A please"},
    {"match": {"role": "user", "case": "chat", "turn": 1}, "reply": "refund it please"},
    {"match": {"role": "user", "case": "chat"}, "reply": "###STOP###"},
    {"match": {"role": "agent", "case": "chat", "turn": 0}, "reply": "Which order, and what shall I do?"},
    {"match": {"role": "agent", "contains": "\"refunded\""}, "reply": "Order A is refunded."},
    {"match": {"role": "agent", "turn": 0},
     "reply": {"tool_calls": [{"name": "refund", "arguments": {"order_id": "A"}}]}},
    {"match": {"role": "agent", "case": "chat", "turn": 1},
     "reply": {"tool_calls": [{"name": "refund", "arguments": {"order_id": "A"}}]}},
]

CASES = [
    {"id": "refund", "query": "please refund order A",
     "expected_tools": [{"name": "refund", "args": {"order_id": "A"}}], "expect": {"contains": "refunded"},
     "rubric": "The reply mentions the refund."},
    {"id": "judged-fail", "query": "please refund order A", "rubric": "The reply names the amount."},
    {"id": "chat", "scenario": "You want order A refunded.", "max_turns": 4,
     "expected_tools": [{"name": "refund", "args": {"order_id": "A"}}], "expect": {"contains": "refunded"}},
]


def test_run_against_the_scripted_model_plays_agent_judge_and_user(tmp_path: Path) -> None:
    cases = write_suite(tmp_path, CASES, {"name": "scripted", "tools": "tools.py",
                                          "initial_env": {"orders": {"A": {"status": "delivered"}}}},
                        {"tools.py": TOOLS})
    with serving(SCRIPT) as model:
        result = run_cli("run", "--cases", cases, "--agent", "openai", "--model", "m", "--base-url", model.base_url,
                         "--user-model", "u", "--output-dir", tmp_path / "reports", "--no-html", cwd=tmp_path)
        asked = list(model.asked)
    assert result.exit_code == 1, result.stderr  # judged-fail fails on the judge's scripted FAIL
    report = json.loads(next((tmp_path / "reports").glob("*.json")).read_text())
    status = {case["id"]: case["status"] for case in report["cases"]}
    assert status == {"refund": "passed", "judged-fail": "failed", "chat": "passed"}, report["cases"]
    failed = next(case for case in report["cases"] if case["id"] == "judged-fail")
    assert "scripted no" in json.dumps(failed)
    assert all(code == 200 for _, code in asked)
    seen = {(a.role, a.case, a.trial, a.turn) for a, _ in asked}
    # refund: two agent requests in turn 0, then the judge (no turn); chat: the user at turns 0, 1 and 2 (its
    # stop), the agent at turns 0 and 1 (twice: the tool call, then the reply)
    assert seen == {("agent", "refund", 0, 0), ("judge", "refund", 0, None), ("agent", "judged-fail", 0, 0),
                    ("judge", "judged-fail", 0, None), ("user", "chat", 0, 0), ("user", "chat", 0, 1),
                    ("user", "chat", 0, 2), ("agent", "chat", 0, 0), ("agent", "chat", 0, 1)}
    assert report["summary"]["judge"]["calls"] == 2 and report["summary"]["user_sim"]["calls"] == 3


def test_the_agent_endpoint_sends_the_headers_to_a_loopback_model(tmp_path: Path) -> None:
    agent = '''
import openai


def agent(task):
    sdk = openai.OpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
    answer = sdk.chat.completions.create(model=task.model or "m", messages=[{"role": "user", "content": task.input}])
    return answer.choices[0].message.content
'''
    cases = write_suite(tmp_path, [{"id": "é/1", "query": "hi", "expect": {"contains": "hello"}}],
                        {"name": "endpoint", "agent": "agent.py:agent"}, {"agent.py": agent})
    with serving([{"match": {"role": "agent", "case": "é/1", "turn": 0}, "reply": "hello"}]) as model:
        result = run_cli("run", "--cases", cases, "--model", "m", "--base-url", model.base_url, "--no-judge",
                         "--output-dir", tmp_path / "reports", "--no-html", cwd=tmp_path)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert [(a.role, a.case, a.trial, a.turn) for a, _ in model.asked] == [("agent", "é/1", 0, 0)]


def test_a_taken_port_is_exit_2_naming_it(tmp_path: Path) -> None:
    import socket

    script = tmp_path / "script.json"
    script.write_text('[{"reply": "hi"}]')
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("scripted-model", script, "--port", port)
    assert result.exit_code == 2 and f"127.0.0.1:{port}" in result.stderr and "--port" in result.stderr


def test_the_pytest_fixture_serves_a_script_for_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model='''
import openai

def test_model(agent_eval_scripted_model):
    base_url = agent_eval_scripted_model([{"match": {"contains": "hi"}, "reply": "hello"}])
    sdk = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
    answer = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content == "hello"
    with __import__("pytest").raises(openai.BadRequestError, match="no entry of the script matches"):
        sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "bye"}])
''')
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_request_no_entry_matches_ends_the_run_in_error_naming_it_at_once(tmp_path: Path) -> None:
    cases = write_suite(tmp_path, [{"id": "lost", "query": "what now?", "expect": {"contains": "x"}}],
                        {"name": "scripted"})
    with serving([{"match": {"case": "other"}, "reply": "x"}]) as model:
        result = run_cli("run", "--cases", cases, "--agent", "openai", "--model", "m", "--base-url", model.base_url,
                         "--no-judge", "--output-dir", tmp_path / "reports", "--no-html", cwd=tmp_path)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert [status for _, status in model.asked] == [400]  # agent-eval did not retry it
    report = json.loads(next((tmp_path / "reports").glob("*.json")).read_text())
    run = report["cases"][0]["runs"][0]
    assert run["status"] == "error" and "no entry of the script matches" in run["error"]
    assert "case 'lost'" in run["error"] and "last message 'what now?'" in run["error"]


def test_a_port_out_of_range_or_a_script_that_is_not_a_file_is_exit_2(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('[{"reply": "hi"}]')
    for port in ("70000", "-1"):
        result = run_cli("scripted-model", script, "--port", port)
        assert result.exit_code == 2 and "from 0 to 65535" in result.stderr and "Traceback" not in result.stderr
    result = run_cli("scripted-model", tmp_path)
    assert result.exit_code == 2 and "not a regular file" in result.stderr
