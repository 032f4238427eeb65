"""The loopback server, driven by the real openai SDK."""
from __future__ import annotations

import asyncio
import json
import threading

import openai
import pytest

from tests.loopback import LoopbackServer, stall, status, text, tool_calls, tool_then_text

USER = [{"role": "user", "content": "hi"}]


def client(srv: LoopbackServer, max_retries: int = 0, timeout: float = 10.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="test", max_retries=max_retries, timeout=timeout)


def test_text_reply_carries_usage_and_echoes_model(loopback):
    srv = loopback([text("hello", prompt_tokens=12, completion_tokens=3)])
    response = client(srv).chat.completions.create(model="gpt-test", messages=USER)
    assert response.object == "chat.completion"
    assert response.model == "gpt-test"
    choice = response.choices[0]
    assert (choice.message.role, choice.message.content) == ("assistant", "hello")
    assert choice.finish_reason == "stop"
    assert choice.message.tool_calls is None
    assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.total_tokens) == (
        12, 3, 15)
    assert srv.count == 1
    assert srv.requests[0]["messages"] == USER
    assert srv.request_headers[0]["authorization"] == "Bearer test"


def test_tool_call_reply_has_json_arguments(loopback):
    srv = loopback([tool_calls([("lookup", {"key": "a"}), ("add", {"x": 1, "y": 2.5})])])
    response = client(srv).chat.completions.create(model="m", messages=USER, tools=[])
    calls = response.choices[0].message.tool_calls
    assert response.choices[0].finish_reason == "tool_calls"
    assert [c.id for c in calls] == ["call_0", "call_1"]
    assert [c.function.name for c in calls] == ["lookup", "add"]
    assert [json.loads(c.function.arguments) for c in calls] == [{"key": "a"}, {"x": 1, "y": 2.5}]


def test_malformed_arguments_arrive_unchanged(loopback):
    srv = loopback([tool_calls([("lookup", '{"key": "a"')])])
    call = client(srv).chat.completions.create(model="m", messages=USER).choices[0].message.tool_calls[0]
    assert call.function.arguments == '{"key": "a"'


def test_429_with_retry_after_is_retried_by_the_sdk(loopback):
    srv = loopback([status(429, headers={"retry-after-ms": "5"}), text("ok")])
    response = client(srv, max_retries=2).chat.completions.create(model="m", messages=USER)
    assert response.choices[0].message.content == "ok"
    assert srv.count == 2
    assert srv.statuses == [429, 200]


def test_400_is_not_retried(loopback):
    srv = loopback([status(400), text("never")])
    with pytest.raises(openai.BadRequestError):
        client(srv, max_retries=3).chat.completions.create(model="m", messages=USER)
    assert srv.count == 1


def test_fail_every_counts_requests_globally_and_spares_the_script(loopback):
    srv = loopback(lambda request, index: text(f"reply {index}"), fail_every={3: 429, 5: 500})
    c = client(srv, max_retries=0)
    outcomes = []
    for _ in range(6):
        try:
            outcomes.append(c.chat.completions.create(model="m", messages=USER).choices[0].message.content)
        except openai.APIStatusError as exc:
            outcomes.append(exc.status_code)
    # requests 3 and 6 are multiples of 3, request 5 of 5; the script sees only the other three
    assert outcomes == ["reply 0", "reply 1", 429, "reply 2", 500, 429]
    assert srv.statuses == [200, 200, 429, 200, 500, 429]


def test_fail_every_is_absorbed_by_sdk_retries(loopback):
    srv = loopback(lambda request, index: text("ok"), fail_every={2: 429})
    c = client(srv, max_retries=2)
    answers = [c.chat.completions.create(model="m", messages=USER).choices[0].message.content
               for _ in range(3)]
    assert answers == ["ok"] * 3
    assert srv.statuses == [200, 429, 200, 429, 200]


def test_exhausted_script_answers_500_and_records_it(loopback):
    srv = loopback([text("only one")])
    c = client(srv, max_retries=3)
    c.chat.completions.create(model="m", messages=USER)
    with pytest.raises(openai.InternalServerError, match="script exhausted"):
        c.chat.completions.create(model="m", messages=USER)
    assert srv.count == 2  # x-should-retry: false stops the SDK from retrying a broken script
    assert len(srv.errors) == 1 and "script exhausted" in srv.errors[0]


def test_script_exception_is_answered_and_recorded(loopback):
    def broken(request, index):
        raise ValueError("boom")

    srv = loopback(broken)
    with pytest.raises(openai.InternalServerError):
        client(srv, max_retries=2).chat.completions.create(model="m", messages=USER)
    assert "ValueError: boom" in srv.errors[0]


def test_router_answers_from_the_conversation(loopback):
    srv = loopback(tool_then_text("lookup", {"key": "k"}, lambda messages: f"got {messages[-1]['content']}"))
    c = client(srv)
    first = c.chat.completions.create(model="m", messages=USER).choices[0].message
    assert first.tool_calls[0].function.name == "lookup"
    history = USER + [first.model_dump(exclude_none=True),
                      {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "42"}]
    second = c.chat.completions.create(model="m", messages=history).choices[0].message
    assert second.content == "got 42"


def test_latency_applies_to_concurrent_requests_without_serialising(loopback):
    srv = loopback(lambda request, index: text(request["messages"][0]["content"]), latency_s=0.2)

    async def ask_all() -> list[str]:
        async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0, timeout=30) as c:
            replies = await asyncio.gather(*[
                c.chat.completions.create(model="m", messages=[{"role": "user", "content": str(n)}])
                for n in range(20)
            ])
        return [r.choices[0].message.content for r in replies]

    assert asyncio.run(ask_all()) == [str(n) for n in range(20)]
    assert srv.count == 20


def test_stall_then_answer_and_client_timeout_on_hang(loopback):
    srv = loopback([stall(0.05, then=text("late")), stall()])
    c = client(srv, max_retries=0, timeout=0.5)
    assert c.chat.completions.create(model="m", messages=USER).choices[0].message.content == "late"
    with pytest.raises(openai.APITimeoutError):
        c.chat.completions.create(model="m", messages=USER)


def test_stop_closes_a_hanging_connection_and_joins_the_thread():
    srv = LoopbackServer([stall()]).start()
    outcome: list[object] = []

    def ask() -> None:
        try:
            client(srv, max_retries=0, timeout=30).chat.completions.create(model="m", messages=USER)
        except openai.APIConnectionError as exc:
            outcome.append(exc)

    asker = threading.Thread(target=ask)
    asker.start()
    for _ in range(200):  # bounded wait until the request has arrived
        if srv.count:
            break
        threading.Event().wait(0.01)
    srv.stop()
    asker.join(30)
    assert not asker.is_alive() and outcome
    assert srv._thread is not None and not srv._thread.is_alive()


def test_starts_and_stops_from_inside_a_running_event_loop():
    async def inside() -> str:
        with LoopbackServer([text("from async")]) as srv:
            async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0) as c:
                response = await c.chat.completions.create(model="m", messages=USER)
        return response.choices[0].message.content

    assert asyncio.run(inside()) == "from async"
