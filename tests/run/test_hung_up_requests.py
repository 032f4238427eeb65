"""A request the agent abandons is `client_closed` and nothing else (window, bucket, upstream, a run that
ended), and a request with no usage to read is never an invalid token count; the endpoint's path stays
under the base URL."""
from __future__ import annotations

import asyncio

import openai
import pytest

from agent_eval.provider import state
from agent_eval.provider.endpoints import Settings
from agent_eval.provider.throttle import RateLimit
from agent_eval.provider.tokens import invalid_counts
from agent_eval.run.agents.python import PythonAgent
from agent_eval.run.episode import play_run
from agent_eval.run.world import EnvTemplate
from agent_eval.suite.tools import ToolSet
from tests.builders import configure_endpoints as configure
from tests.loopback import stall, text


def noop(env: dict) -> str:
    """Do nothing."""
    return "ok"


TOOLS = ToolSet.from_functions([noop])


pytestmark = pytest.mark.usefixtures("command_state")


def play(fn, base_url, timeout=None):
    agent = PythonAgent("agent.py:fn", fn, {"model": "m1", "base_url": base_url, "api_key": "real-key"})
    return asyncio.run(play_run({"id": "c1", "query": "hi"}, 0, agent, TOOLS, EnvTemplate({}), None, timeout))


async def hang_up_on_the_waiting(task, settle: float = 0.3) -> str:
    """Three requests at once: the first goes upstream, the two others wait (window or bucket) and are
    abandoned; then the first is awaited."""
    client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)

    def ask():
        return asyncio.ensure_future(client.chat.completions.create(model=task.model, messages=task.messages))

    first = ask()
    await asyncio.sleep(0.1)
    waiting = [ask(), ask()]
    await asyncio.sleep(0.2)
    for request in waiting:
        request.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    answer = await first
    for _ in range(100):  # the endpoint notices the hang-ups on its own loop turns
        if all(c["status"] is not None for c in task._ctx.llm_calls):
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(settle)
    return answer.choices[0].message.content


@pytest.mark.parametrize("limit", ["window", "bucket"])
def test_requests_abandoned_while_they_wait_for_the_limit_are_client_closed_only(loopback, limit) -> None:
    configure(Settings(ceiling=1) if limit == "window" else Settings(rate_limit=RateLimit(6.0)))
    srv = loopback([stall(0.5, text("done")), text("late"), text("late")])
    played = play(hang_up_on_the_waiting, srv.base_url)
    assert played.error is None and played.trace["stop_reason"] == "completed"
    assert played.trace["final_answer"] == "done"
    assert sorted(map(str, (c["status"] for c in played.trace["llm_calls"]))) == [
        "200", "client_closed", "client_closed"]
    assert invalid_counts(played.trace["llm_calls"]) == 0  # no usage to read is not an impossible count
    assert srv.count == 1  # the abandoned ones never went upstream


def test_the_built_in_path_cancelled_while_it_waits_for_a_place_sees_only_its_cancellation(loopback) -> None:
    # The window's wake-up drops a cancelled waiter: the cancelled request must not then fail to remove it.
    import agent_eval.llm as llm

    configure(Settings(ceiling=1))
    srv = loopback([text("a")])

    async def scenario() -> BaseException | None:
        client = await llm.shared_client(srv.base_url, "k")
        window = state.current().endpoints.endpoint("agent", client.endpoint, "m1").window
        await window.acquire()  # another run's request holds the only place
        waiting = asyncio.ensure_future(llm.complete(srv.base_url, "k", {"model": "m1", "messages": []}))
        await asyncio.sleep(0.05)
        waiting.cancel()  # --timeout (or Ctrl-C) cancels it ...
        window.release()  # ... just as the place comes free
        return (await asyncio.gather(waiting, return_exceptions=True))[0]

    assert isinstance(asyncio.run(scenario()), asyncio.CancelledError)


def test_paths_without_usage_are_never_invalid_token_counts(loopback) -> None:
    srv = loopback([text("done")])

    async def agent(task):
        client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
        await client.models.list()
        answer = await client.chat.completions.create(model=task.model, messages=task.messages)
        return answer.choices[0].message.content

    played = play(agent, srv.base_url)
    calls = played.trace["llm_calls"]
    assert [c["path"] for c in calls] == ["/models", "/chat/completions"] and calls[0]["status"] == 200
    assert invalid_counts(calls) == 0


LEAVES_A_REQUEST_UPSTREAM = '''
import os, subprocess, sys, time
# A grandchild in a session of its own asks the model and is still waiting when the run ends.
code = ("import json, os, urllib.request\\n"
        "request = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions', method='POST',"
        " data=json.dumps({'model': 'm1', 'messages': []}).encode(), headers={'Content-Type': 'application/json',"
        " 'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']})\\n"
        "try:\\n    urllib.request.urlopen(request, timeout=30)\\nexcept Exception:\\n    pass\\n")
subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
time.sleep(0.5)
print("left it running")
'''


def test_a_request_still_upstream_when_a_cmd_run_ends_is_client_closed(loopback, tmp_path) -> None:
    import sys

    from agent_eval.run.agents import load_agent

    srv = loopback([stall(None)])
    (tmp_path / "agent_script.py").write_text(LEAVES_A_REQUEST_UPSTREAM)
    agent = load_agent(f"cmd:{sys.executable} agent_script.py", tmp_path,
                       {"model": "m1", "cases_dir": str(tmp_path), "base_url": srv.base_url, "api_key": "real"})
    played = asyncio.run(play_run({"id": "c1", "query": "hi"}, 0, agent, TOOLS, EnvTemplate({}), None, None))
    assert played.error is None and played.trace["final_answer"] == "left it running"
    import orjson

    stored = orjson.loads(played.trace_json)  # what the journal and the report get
    assert [c["status"] for c in stored["llm_calls"]] == ["client_closed"]
    assert invalid_counts(stored["llm_calls"]) == 0


class PathRecorder:
    """An upstream that answers every request with a small completion and keeps the paths it was asked."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.paths: list[str] = []
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                recorder.paths.append(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                body = (b'{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop",'
                        b'"message":{"role":"assistant","content":"ok"}}],'
                        b'"usage":{"prompt_tokens":1,"completion_tokens":1}}')
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/prefix/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


HOSTILE_PATHS = ["/../../admin", "/chat\\..\\..\\admin", "/chat/../../../admin", "/%2e%2e/%2e%2e/admin",
                 "/%2E%2E%2f%2e%2e%2fadmin", "/..%2f..%2fadmin", "/./chat/completions", "/chat/%2e/completions",
                 "/%252e%252e/admin"]


def test_dot_segments_in_the_agents_path_are_refused_and_nothing_leaves_the_base_url() -> None:
    import http.client
    from urllib.parse import urlsplit

    upstream = PathRecorder()
    try:
        async def agent(task):
            base = urlsplit(task.base_url)
            statuses = []
            for path in [*HOSTILE_PATHS, "/chat/completions", "/models", "//evil.example/x", "/%2fevil/y"]:
                def ask(path=path):
                    connection = http.client.HTTPConnection(base.hostname, base.port, timeout=10)
                    connection.request("POST" if "models" not in path else "GET", base.path + path, body=b"{}",
                                       headers={"Authorization": f"Bearer {task.api_key}",
                                                "Content-Type": "application/json"})
                    status = connection.getresponse().status
                    connection.close()
                    return status
                statuses.append(await asyncio.to_thread(ask))
            return ",".join(map(str, statuses))

        played = play(agent, upstream.base_url)
    finally:
        upstream.close()
    statuses = played.trace["final_answer"].split(",")
    assert statuses == ["400"] * len(HOSTILE_PATHS) + ["200"] * 4
    assert upstream.paths == ["/prefix/v1/chat/completions", "/prefix/v1/models", "/prefix/v1/evil.example/x",
                              "/prefix/v1/evil/y"]


def test_a_base_url_with_a_query_keeps_its_path_and_sends_the_query_with_every_request() -> None:
    # Azure's `?api-version=...`: the path is the base URL's path followed by the request's, the query is kept.
    import agent_eval.llm as llm

    upstream = PathRecorder()
    base = upstream.base_url + "?api-version=2024-06-01"
    try:
        async def both():
            await llm.complete(base, "k", {"model": "m", "messages": [{"role": "user", "content": "hi"}]})

            async def agent(task):
                client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
                await client.chat.completions.create(model=task.model, messages=task.messages)
                return "ok"

            return await play_run({"id": "c1", "query": "hi"}, 0, PythonAgent(
                "agent.py:fn", agent, {"model": "m1", "base_url": base, "api_key": "k"}), TOOLS, EnvTemplate({}),
                None, None)

        played = asyncio.run(both())
    finally:
        upstream.close()
    assert played.error is None, played.error
    assert upstream.paths == ["/prefix/v1/chat/completions?api-version=2024-06-01"] * 2


def test_an_answer_without_usage_is_no_invalid_token_count(loopback) -> None:
    # A local server that reports no usage (as some do) is 0 tokens, as for the built-in agent, not "invalid".
    from tests.loopback import raw

    body = {"id": "x", "object": "chat.completion", "model": "m1",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]}
    srv = loopback([raw(body)])

    async def agent(task):
        client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
        answer = await client.chat.completions.create(model=task.model, messages=task.messages)
        return answer.choices[0].message.content

    played = play(agent, srv.base_url)
    calls = played.trace["llm_calls"]
    assert [c["status"] for c in calls] == [200] and invalid_counts(calls) == 0
