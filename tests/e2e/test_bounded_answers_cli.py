"""A provider's answer is read to 64 MiB after decompression and no further (docs/reference.md, "What
agent-eval guarantees"): a gzip bomb to the built-in agent, the judge, the user simulator or through
`task.base_url` is that run's `error` naming the endpoint and the limit, in bounded memory. `agent-eval`
runs as a subprocess; its largest resident set is read with os.wait4."""
from __future__ import annotations

import functools
import zlib
from pathlib import Path

import pytest

from tests.builders import CLI, clean_env, write_suite
from tests.hostile import SECRET, assert_clean, gzip_bomb, run_measured
from tests.judged_suite import case, judged_suite
from tests.loopback import Reply, router, text

GIB = 2**30
LIMIT = "the answer is over the 64 MiB limit after decompression; read no further"
MEMORY_BOUND = GIB  # loose: a cap that held uses a few hundred MiB at most; the bomb alone is 1 GiB


@functools.cache
def bomb(layers: int = 1) -> bytes:
    return gzip_bomb(GIB if layers == 1 else 4 * GIB, layers)  # 1 MiB, or 8 KiB for 4 GiB in two layers


def bomb_reply(code: int = 200, layers: int = 1, encoding: str = "gzip") -> Reply:
    return Reply(status=code, body=bomb(layers), headers={"content-encoding": encoding})


def bombed(tmp_path: Path, *args: str, **env: str) -> tuple[dict[str, dict], dict]:
    """`agent-eval run ARGS` in tmp_path with SECRET as every key; checks exit 2, the memory bound, no
    traceback and no secret; returns each case's (first) run and the report."""
    import orjson

    measured = run_measured([CLI, "run", *args], cwd=tmp_path, env=clean_env(
        OPENAI_API_KEY=SECRET, XDG_CACHE_HOME=str(tmp_path / "cache"), **env))
    assert_clean(measured.done, tmp_path)
    assert measured.done.returncode == 2, measured.done.stdout + measured.done.stderr
    assert measured.max_rss_bytes < MEMORY_BOUND, measured.max_rss_bytes
    report = orjson.loads(sorted((tmp_path / "reports").glob("*.json"))[-1].read_bytes())
    return {c["id"]: c["runs"][0] for c in report["cases"]}, report


def test_a_gzip_bomb_to_the_built_in_agent_is_the_run_s_error_in_bounded_memory(loopback, tmp_path: Path) -> None:
    srv = loopback(router(lambda messages: bomb_reply() if "(bomb)" in messages[-1]["content"] else text("A")))
    cases_file = judged_suite(tmp_path, [case("bomb", None, expect={"contains": "A"}),
                                         case("fine", None, expect={"contains": "A"})], agent="openai")
    runs, report = bombed(tmp_path, "--cases", str(cases_file), "--model", "m",
                          OPENAI_BASE_URL=srv.base_url)
    assert runs["bomb"]["status"] == "error"
    assert runs["bomb"]["error"] == f"{LIMIT} ({srv.base_url}, model m)"
    assert runs["fine"]["status"] == "passed"
    # The whole report: both cases, one run passed, one errored; the bomb was asked for once, not retried.
    assert (report["summary"]["runs"], report["summary"]["runs_errored"]) == (1, 1)
    assert sum("(bomb)" in r["messages"][-1]["content"] for r in srv.requests) == 1


def test_a_bomb_in_an_error_status_in_two_layers_or_plain_is_cut_too(loopback, tmp_path: Path) -> None:
    # A 500 answer's body is read by the SDK's error path, not by a completion's: the same cap holds. Two
    # layers of gzip (8 KiB for 4 GiB) and deflate are inflated by the same decoders, in pieces; 70 MiB
    # sent as they are pass the limit as well.
    replies = {"status": bomb_reply(500), "layers": bomb_reply(layers=2, encoding="gzip, gzip"),
               "deflate": Reply(status=200, body=zlib.compress(bytes(300 * 2**20), 9),
                                headers={"content-encoding": "deflate"}),
               "plain": Reply(status=200, body=b'{"choices": [{"message": {"content": "' + b"A" * (70 * 2**20)
                              + b'"}}]}')}
    srv = loopback(router(lambda messages: next(
        (reply for key, reply in replies.items() if f"({key})" in messages[-1]["content"]), text("A"))))
    cases_file = judged_suite(tmp_path, [case(key, None, expect={"contains": "A"}) for key in replies],
                              agent="openai")
    runs, report = bombed(tmp_path, "--cases", str(cases_file), "--model", "m",
                          OPENAI_BASE_URL=srv.base_url)
    assert {key: runs[key]["error"] for key in replies} == {key: f"{LIMIT} ({srv.base_url}, model m)"
                                                            for key in replies}
    assert report["summary"]["runs_errored"] == 4


def test_a_gzip_bomb_to_the_judge_is_the_run_s_error(loopback, tmp_path: Path) -> None:
    judge = loopback(router(lambda messages: bomb_reply()))
    cases_file = judged_suite(tmp_path, [case("judged", "RUBRIC_PASS")])
    runs, _ = bombed(tmp_path, "--cases", str(cases_file), AGENT_EVAL_JUDGE_BASE_URL=judge.base_url,
                     AGENT_EVAL_JUDGE_MODEL="judge-m")
    run = runs["judged"]
    assert run["status"] == "error"
    assert run["error"] == f"judge error: {LIMIT} ({judge.base_url}, model judge-m)"


SIM_TOOLS = '''
from agent_eval import tool


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"
'''


def test_a_gzip_bomb_to_the_user_simulator_is_the_run_s_error(loopback, tmp_path: Path) -> None:
    srv = loopback(lambda request, index: bomb_reply() if request["model"] == "user-m" else text("hello"))
    cases_file = write_suite(tmp_path, [{"id": "talk", "scenario": "You want help.", "max_turns": 2,
                                         "expect": {"contains": "hello"}}],
                             {"name": "sim", "tools": "tools.py", "agent": "openai"}, {"tools.py": SIM_TOOLS})
    runs, _ = bombed(tmp_path, "--cases", str(cases_file), "--model", "agent-m",
                     "--user-model", "user-m", OPENAI_BASE_URL=srv.base_url)
    run = runs["talk"]
    assert run["status"] == "error"
    assert LIMIT in run["error"] and f"({srv.base_url}, model user-m)" in run["error"], run["error"]


# An agent of its own, through the run's recording endpoint (task.base_url) with the openai SDK; the case's
# metadata says whether it streams.
BRIDGED = '''
import openai


def agent(task):
    client = openai.OpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
    messages = [{"role": "user", "content": task.input}]
    try:
        if not task.metadata.get("stream"):
            return client.chat.completions.create(model="m", messages=messages).choices[0].message.content
        chunks = client.chat.completions.create(model="m", messages=messages, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    except openai.APIError as exc:
        return f"the endpoint said {type(exc).__name__}"
'''


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_gzip_bomb_through_the_recording_endpoint_is_the_run_s_error(loopback, tmp_path: Path,
                                                                       stream: bool) -> None:
    srv = loopback(router(lambda messages: bomb_reply() if "bomb" in messages[-1]["content"] else text("A")))
    cases_file = write_suite(tmp_path, [{"id": c, "query": c, "metadata": {"stream": stream},
                                         "expect": {"contains": "A"}} for c in ("bomb", "fine")],
                             {"name": "bridged", "tools": "tools.py", "agent": "agent.py:agent"},
                             {"tools.py": SIM_TOOLS, "agent.py": BRIDGED})
    runs, _ = bombed(tmp_path, "--cases", str(cases_file), "--base-url", srv.base_url)
    assert runs["bomb"]["status"] == "error"
    assert runs["bomb"]["error"] == f"{LIMIT} ({srv.base_url}, model m)"
    assert runs["fine"]["status"] == "passed"
