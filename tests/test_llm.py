"""agent_eval.llm against the loopback server: the one chat-completion call, its errors and its limits."""
from __future__ import annotations

import asyncio

import openai
import pytest

from agent_eval import llm, redaction
from agent_eval.errors import ProviderError
from tests.loopback import message, raw, stall, status, text, tool_calls

BODY = {"model": "m-test", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}


def ask(srv, body: dict = BODY, base_url: str | None = None, timeout_s: float | None = None) -> llm.Completion:
    return asyncio.run(llm.complete(base_url or srv.base_url, "test-key", body, timeout_s))


def failure(srv, **kwargs) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        ask(srv, **kwargs)
    return caught.value


@pytest.fixture
def fast_backoff(monkeypatch):
    """agent-eval's own backoff (0.5 s doubling to 8 s) made tiny, for errors that carry no Retry-After."""
    from agent_eval.provider import hints

    monkeypatch.setattr(hints, "BACKOFF_FLOOR_S", 0.001)
    monkeypatch.setattr(hints, "BACKOFF_CAP_S", 0.002)


def test_an_answer_is_read_into_content_tool_calls_usage_and_model(loopback) -> None:
    srv = loopback([tool_calls([("lookup", {"key": "a"})], prompt_tokens=12, completion_tokens=3), text("done")])
    first = ask(srv)
    assert first.tool_calls == [{"id": "call_0", "type": "function",
                                 "function": {"name": "lookup", "arguments": '{"key":"a"}'}}]
    assert (first.content, first.prompt_tokens, first.completion_tokens, first.model) == (None, 12, 3, "m-test")
    second = ask(srv)
    assert (second.content, second.tool_calls) == ("done", [])
    sent = srv.requests[0]
    assert sent == BODY  # the dict as given, nothing added or reshaped
    assert srv.request_headers[0]["content-type"] == "application/json"
    assert srv.request_headers[0]["authorization"] == "Bearer test-key"


def test_429_and_500_bursts_are_retried_and_each_retry_is_reported(loopback) -> None:
    srv = loopback(lambda request, index: text(f"answer {index}"), fail_every={2: 429, 3: 500})
    seen: list[tuple[str, int, int]] = []
    llm.set_retry_listener(lambda endpoint, attempt, most: seen.append((endpoint, attempt, most)))
    try:
        answers = [ask(srv).content for _ in range(6)]
    finally:
        llm.set_retry_listener(None)
    assert answers == [f"answer {n}" for n in range(6)]  # every scripted reply, in order, none lost
    statuses = srv.statuses
    assert statuses.count(200) == 6 and statuses.count(429) > 0 and statuses.count(500) > 0
    assert len(seen) == len(statuses) - 6  # one report per retry
    assert {e for e, _, _ in seen} == {srv.base_url} and all(most == 8 for _, _, most in seen)


def test_a_provider_still_failing_after_8_retries_names_endpoint_model_and_retries(loopback) -> None:
    srv = loopback([status(500, headers={"retry-after-ms": "1"})] * 9)
    error = failure(srv)
    assert str(error).startswith("InternalServerError: Error code: 500")
    assert str(error).endswith(f"({srv.base_url}, model m-test) after 8 retries")
    assert error.status_code == 500 and srv.count == 9  # the first try and eight retries


def test_a_400_is_not_retried_and_says_no_retries(loopback) -> None:
    srv = loopback([status(400)])
    error = failure(srv)
    assert str(error).startswith("BadRequestError") and str(error).endswith(f"({srv.base_url}, model m-test)")
    assert error.status_code == 400 and srv.count == 1
    assert isinstance(error.__cause__, openai.BadRequestError)  # the SDK's error class is kept


def test_a_dead_endpoint_is_a_connection_error_naming_it(fast_backoff) -> None:
    error = failure(None, base_url="http://127.0.0.1:9/v1")
    # Nothing listens on a loopback port: a local server that is not running is not retried for 87 s.
    assert str(error) == "APIConnectionError: Connection error (http://127.0.0.1:9/v1, model m-test) after 2 retries"


def test_only_a_refused_connection_to_a_loopback_address_gets_fewer_retries() -> None:
    from types import SimpleNamespace

    import httpx
    import openai

    from agent_eval.provider.hints import MAX_RETRIES
    from agent_eval.provider.retry import LOOPBACK_REFUSED_RETRIES, _most_retries

    request = httpx.Request("POST", "http://x/v1/chat/completions")
    refused = openai.APIConnectionError(request=request)
    refused.__cause__ = httpx.ConnectError("[Errno 111] Connection refused")
    reset = openai.APIConnectionError(request=request)
    reset.__cause__ = httpx.ReadError("Connection reset by peer")
    assert _most_retries(SimpleNamespace(base_url="http://localhost:8000/v1"), refused) == LOOPBACK_REFUSED_RETRIES
    assert _most_retries(SimpleNamespace(base_url="http://localhost:8000/v1"), reset) == MAX_RETRIES
    assert _most_retries(SimpleNamespace(base_url="https://api.openai.com/v1"), refused) == MAX_RETRIES


def test_secrets_in_the_endpoint_never_reach_the_message(loopback) -> None:
    srv = loopback([status(400)])
    secret_url = srv.base_url.replace("http://", "http://me:sk-SECRET@") + "?api-key=sk-OTHER&region=eu"
    error = str(failure(srv, base_url=secret_url))
    assert "SECRET" not in error and "OTHER" not in error
    assert f"(http://***@127.0.0.1:{srv.port}/v1?api-key=***&region=eu, model m-test)" in error


def test_a_body_that_is_not_json_is_a_provider_error(loopback) -> None:
    srv = loopback([raw(b"<html>502 Bad Gateway</html>")])
    error = str(failure(srv))
    assert error.startswith("the provider's answer is not JSON ('<html>502 Bad Gateway</html>')")
    assert error.endswith(f"({srv.base_url}, model m-test)")


def test_empty_choices_is_a_provider_error(loopback) -> None:
    srv = loopback([raw({"id": "x", "object": "chat.completion", "choices": [], "usage": None})])
    assert str(failure(srv)) == f"the provider's answer has no choices ({srv.base_url}, model m-test)"


def test_a_tool_call_without_function_is_a_provider_error(loopback) -> None:
    srv = loopback([message({"role": "assistant", "content": None,
                             "tool_calls": [{"id": "c1", "type": "function",
                                             "function": {"name": "a", "arguments": "{}"}},
                                            {"id": "c2", "type": "function"}]})])
    assert str(failure(srv)) == f"the provider's tool call 2 has no function ({srv.base_url}, model m-test)"


def test_content_as_a_list_of_parts_is_their_text_joined(loopback) -> None:
    parts = [{"type": "text", "text": "The value "}, {"type": "image_url", "image_url": {"url": "x"}},
             {"type": "text", "text": "is 42."}]
    srv = loopback([message({"role": "assistant", "content": parts})])
    assert ask(srv).content == "The value is 42."


def test_extra_unknown_fields_are_ignored(loopback) -> None:
    odd = {"role": "assistant", "content": "ok", "reasoning_content": "hmm", "refusal": None, "annotations": [],
           "tool_calls": [{"id": "c1", "type": "function", "index": 0, "x_vendor": 1,
                           "function": {"name": "f", "arguments": "{}", "strict": True}}]}
    srv = loopback([message(odd, system_fingerprint="fp", service_tier="default", x_extra={"a": [1]})])
    answer = ask(srv)
    assert answer.content == "ok"
    assert answer.tool_calls == [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    assert (answer.prompt_tokens, answer.completion_tokens) == (10, 5)


def test_absent_usage_counts_zero_tokens(loopback) -> None:
    srv = loopback([raw({"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]})])
    answer = ask(srv)
    assert (answer.content, answer.prompt_tokens, answer.completion_tokens, answer.model) == ("hi", 0, 0, None)


def test_a_timeout_bounds_an_endpoint_that_never_answers(loopback) -> None:
    srv = loopback([stall(None)])
    error = str(failure(srv, timeout_s=0.3))
    assert error == f"no answer within --judge-timeout 0.3s ({srv.base_url}, model m-test)"


def test_a_timeout_bounds_the_retries_too(loopback) -> None:
    # Every request is a 503 asking for a 400 ms wait: the eight retries need 3.2 s, the bound is 1 s.
    srv = loopback([text("never")], fail_every={1: 503}, fail_headers={"retry-after-ms": "400"})
    error = str(failure(srv, timeout_s=1.0))
    assert error.startswith(f"no answer within --judge-timeout 1s ({srv.base_url}, model m-test)")
    assert srv.count < 9  # cut short: the SDK's retries did not all happen


@pytest.mark.parametrize(("url", "shown"), [
    ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1"),
    ("https://user:pa55@host.example/v1", "https://***@host.example/v1"),
    ("https://host/v1?api_key=abc&Token=t&x-signature=s&mode=fast",
     "https://host/v1?api_key=***&Token=***&x-signature=***&mode=fast"),
    ("https://host/openai/deployments/d?api-version=2024-06-01", "https://host/openai/deployments/d?api-version=2024-06-01"),
    ("https://host/v1?Authorization=Bearer+x&PASSWORD=p&client_secret=c",
     "https://host/v1?Authorization=***&PASSWORD=***&client_secret=***"),
    (None, None),
])
def test_redact_url_hides_userinfo_and_secret_query_values(url: str | None, shown: str | None) -> None:
    assert llm.redact_url(url) == shown
    assert redaction.is_redacted(url) == (url != shown)


def test_the_progress_display_shows_each_retry_and_a_log_shows_them_from_the_third_on() -> None:
    import io

    from rich.console import Console
    from rich.progress import Progress, TextColumn

    from agent_eval.commands.run import RUNNING, ProgressLine
    from agent_eval.provider.endpoints import WindowBoard

    screen = io.StringIO()
    progress = Progress(TextColumn("[bold]{task.description}"), console=Console(file=screen, width=200))
    progress.add_task(RUNNING, total=3)
    show = ProgressLine(progress, Console(file=io.StringIO()), False, WindowBoard()).retrying
    show("http://h/v1?tag=[red]", 2, 8)  # brackets are text, not Rich markup
    progress.console.print(progress.get_renderable())
    assert "retrying http://h/v1?tag=[red] (attempt 2/8)" in screen.getvalue()
    log = io.StringIO()
    show = ProgressLine(None, Console(file=log, width=200), False, WindowBoard()).retrying
    for attempt in (1, 2, 3, 3, 4):
        show("http://h/v1", attempt, 8)
    assert log.getvalue().splitlines() == ["retrying http://h/v1 (attempt 3/8)",
                                           "retrying http://h/v1 (attempt 4/8)"]
    quiet = io.StringIO()
    ProgressLine(None, Console(file=quiet), True, WindowBoard()).retrying("http://h/v1", 5, 8)
    assert quiet.getvalue() == ""


def test_calls_each_on_a_loop_of_their_own_keep_no_client_of_a_loop_that_ended(loopback) -> None:
    """A library caller's asyncio.run(llm.complete(...)) per request: the client of each ended loop was closed
    with it, and none of them is kept (they piled up, one per call, for the process's life)."""
    import gc

    def clients() -> int:
        gc.collect()
        return len([kept for kept in gc.get_objects() if isinstance(kept, llm._client_class())])

    srv = loopback([text("hi")] * 6)
    before = clients()
    for _ in range(6):
        assert ask(srv).content == "hi"
    assert clients() - before <= 1  # this endpoint's last one, which its next call on a new loop replaces
