"""Every chat completion agent-eval makes: the built-in agent's, the judge's and the user simulator's.

A request is a plain dict, encoded with orjson and sent through the openai SDK client's own `post`,
so the client and its connection pool are the SDK's; its own retries are off (max_retries=0) and
agent-eval's loop (agent_eval.provider.retry) retries, behind each endpoint's window and token bucket.
The answer is parsed with orjson into the few fields agent-eval reads (`Completion`), which skips
the SDK's request transformation and response models: the per-completion cost that dominates a run.
Every failure is a `ProviderError` that names the endpoint (secrets removed) and the model.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import orjson

from agent_eval.errors import ProviderError
from agent_eval.provider import events, keying, retry, state, tape
from agent_eval.redaction import redact_url as redact_url
from agent_eval.redaction import redact_secrets, remember_secret
from agent_eval.provider.tokens import token_count

_SHOWN_CHARS = 300


@dataclass(slots=True)
class Completion:
    """What agent-eval reads of one Chat Completions answer."""

    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # wire form, `arguments` a str
    prompt_tokens: int | None = 0  # None: the provider's count was not a valid one (score/usage.py)
    completion_tokens: int | None = 0
    model: str | None = None
    retries: int = 0  # attempts after the first one that was answered


# --- retries: the loop is agent_eval.provider.retry's; a command's listeners hear of them (provider.events) ---
def set_retry_listener(listener: Callable[[str, int, int], None] | None) -> None:
    """Outside a command (a library caller of `complete`): call `listener(endpoint, attempt, most)` each time a
    request is about to be retried; None stops it. A command's run tells its own `events.Listeners` instead."""
    listeners = state.OUTSIDE.listeners
    for old in [one for one in listeners if isinstance(one, events.RetryCallback)]:
        listeners.remove(old)
    if listener is not None:
        listeners.add(events.RetryCallback(listener))


@functools.cache  # one class for the process: built once, holds no command's state
def _client_class() -> type:
    from openai import AsyncOpenAI

    class Client(AsyncOpenAI):
        """The SDK's client with its own retries off (max_retries=0): agent-eval's loop retries."""

        endpoint: str = ""

    return Client


CLOSE_GRACE_S = 2.0


async def close_when_the_loop_ends(close: Callable[[], Awaitable[Any]]) -> AsyncIterator[None]:
    """Parked at its yield; the event loop closes every such generator as it shuts down (asyncio.run,
    and the runner's own loop, call shutdown_asyncgens), which calls `close` (a client's, a server's)."""
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(close(), CLOSE_GRACE_S)


async def shared_client(base_url: str | None, api_key: str | None) -> Any:
    """One SDK client per endpoint and event loop for the current command (its pool is the loop's)."""
    loop = asyncio.get_running_loop()
    key = (base_url, api_key)
    remember_secret(api_key)  # so that an error echoing it is redacted (redaction.py)
    clients = state.current().clients
    entry = clients.get(key)
    if entry is None or entry[0] is not loop:
        from agent_eval.provider import transports

        if entry is not None and entry[2].ag_frame is not None:  # its loop ended without closing it (state.py)
            state.current().retired.append(entry[1:])
        # A query in the base URL (Azure's ?api-version=...) goes with every request, after its path.
        parts = urlsplit(base_url) if base_url else None
        query = dict(parse_qsl(parts.query, keep_blank_values=True)) if parts is not None and parts.query else None
        bare = urlunsplit(parts._replace(query="")) if parts is not None and parts.query else base_url
        client = _client_class()(base_url=bare, api_key=api_key, max_retries=0, default_query=query,
                               http_client=transports.http_client(bare))
        client.endpoint = redact_url((base_url or str(client.base_url)).rstrip("/")) or ""
        closer = close_when_the_loop_ends(client.close)
        await closer.__anext__()
        entry = clients[key] = (loop, client, closer)
    return entry[1]


def preload() -> None:
    """Import the SDK and its transport now, before any run starts: an import takes seconds on a busy
    machine, and inside the first request it would count as that run's latency and against --timeout."""
    from agent_eval.provider import transports  # noqa: F401  (the client's own transports)

    _client_class()
    with contextlib.suppress(ImportError):
        from openai._httpx2 import http_response_types  # noqa: F401
        from openai._vendor.httpx_aiohttp import AiohttpTransport  # noqa: F401


# --- the call ---------------------------------------------------------------------------------------
async def complete(base_url: str | None, api_key: str | None, body: dict[str, Any],
                   timeout_s: float | None = None, timeout_flag: str = "--judge-timeout",
                   role: str = "agent") -> Completion:
    """POST body to /chat/completions and parse the answer; any failure is a ProviderError.

    `timeout_s` bounds the request, its retries included but not its waiting for the rate limit.
    `role` (agent, judge, user) names the endpoint's window and its line of `summary.provider`.
    """
    attempts = [0]
    content = await send_raw(base_url, api_key, body, timeout_s=timeout_s, timeout_flag=timeout_flag, role=role,
                             attempts=attempts)
    client = await shared_client(base_url, api_key)
    completion = parse_completion(content, lambda: _where(client, body, 0))
    completion.retries = attempts[0] - 1
    return completion


async def send_raw(base_url: str | None, api_key: str | None, body: dict[str, Any] | bytes,
                   path: str = "/chat/completions", *, model: str | None = None, timeout_s: float | None = None,
                   timeout_flag: str = "--judge-timeout", role: str = "agent",
                   attempts: list[int] | None = None) -> bytes:
    """POST one request through agent-eval's retry loop, the endpoint's window and its token bucket; the
    answered body as bytes, or a ProviderError naming the endpoint, the model and the retries.

    `body` is a dict (encoded here) or bytes sent as they are; `model` names the endpoint's model when
    `body` is bytes (else `body["model"]`). Waiting for the limit is recorded on the current run.
    `attempts`, when given, has its first item raised by one for each attempt sent.
    """
    from agent_eval.provider.bounded import BodyTooLarge

    client = await shared_client(base_url, api_key)
    if model is None and isinstance(body, dict):
        model = body.get("model")
    ep = state.current().endpoints.endpoint(role, client.endpoint, model)
    shown = {"model": model}
    headers = keying.headers_for(base_url, role, keying.current())  # a loopback model's X-Agent-Eval-*
    try:
        def attempt() -> Any:
            if attempts is not None:
                attempts[0] += 1
            return _post(client, body, path, headers)

        with tape.as_role(role), tape.counting_unsent() as unsent:
            try:
                response = await retry.send(ep, attempt, timeout_s, client.endpoint)
            finally:  # summary.provider counts what reached the provider: not what a recording answered
                ep.requests -= unsent[0]
    except retry.RequestTimedOut as exc:
        raise ProviderError(f"no answer within {timeout_flag} {timeout_s:g}s"
                            f"{_where(client, shown, exc.retries)}") from None
    except retry.RequestFailed as failed:
        import openai

        error, where = failed.error, _where(client, shown, failed.retries) + failed.note
        if not isinstance(error, openai.OpenAIError):  # the transport's own (an odd URL, say): the provider's
            raise ProviderError(f"{type(error).__name__}: {_shorten(str(error))}{where}") from error
        name, message = type(error).__name__, str(error)
        if isinstance(error, openai.APITimeoutError) and _was_refused(error):
            name, message = "APIConnectionError", "Connection error"  # see _was_refused
        if isinstance(error, openai.APIConnectionError):
            message = message.rstrip(".")
        raise ProviderError(f"{name}: {_shorten(message)}{where}",
                            status_code=getattr(error, "status_code", None)) from error
    except ProviderError:
        raise
    except BodyTooLarge as exc:  # not retried: the same answer would be read again
        raise ProviderError(f"{exc}{_where(client, shown, 0)}") from None
    except Exception as exc:  # not retried (a transport's own error, an odd URL): the provider's
        raise ProviderError(f"{type(exc).__name__}: {_shorten(str(exc))}{_where(client, shown, 0)}") from exc
    return response


def _was_refused(exc: BaseException) -> bool:
    """True when a "timeout" was a refused or dropped connection: the SDK's aiohttp transport maps every
    aiohttp connection error, a refused connection included, to a connect timeout."""
    link: BaseException | None = exc
    while link is not None:
        if type(link).__module__.startswith("aiohttp") and isinstance(link, OSError):
            return not isinstance(link, TimeoutError)
        if type(link).__name__ == "ServerDisconnectedError":
            return True
        link = link.__cause__ or link.__context__
    return False


async def _post(client: Any, body: dict[str, Any] | bytes, path: str, headers: dict[str, str]) -> bytes:
    from openai._httpx2 import http_response_types

    cast_to = http_response_types()[0]
    options: Any = {"headers": headers} if headers else {}
    try:
        content = body if isinstance(body, bytes) else orjson.dumps(body)
    except TypeError:  # a value orjson refuses (a tool schema from user code): the SDK's encoder tries
        response = await client.post(path, body=body, cast_to=cast_to, options=options)
    else:
        response = await client.post(path, content=content, cast_to=cast_to, options=options)
    return response.content


def _where(client: Any, body: dict[str, Any], retries: int) -> str:
    tail = f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""
    return f" ({client.endpoint}, model {body.get('model')}){tail}"


def _shorten(text: str) -> str:
    text = redact_secrets(text)  # before the cut, so that no part of a key is left at the end
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "…"


def parse_completion(raw: bytes, where: Callable[[], str] = lambda: "") -> Completion:
    """The fields agent-eval reads from a Chat Completions body; a ProviderError when they are not there."""
    from agent_eval.provider.tokens import loads_answer

    try:
        data = loads_answer(raw)
    except orjson.JSONDecodeError:
        shown = raw[:120].decode("utf-8", "replace")
        raise ProviderError(f"the provider's answer is not JSON ({shown!r}){where()}") from None
    try:
        message = data["choices"][0]["message"]
        content = message.get("content")
        calls = message.get("tool_calls")
    except (KeyError, IndexError, TypeError, AttributeError):
        choices = data.get("choices") if isinstance(data, dict) else None
        problem = ("no choices" if not choices else "no message in its first choice")
        raise ProviderError(f"the provider's answer has {problem}{where()}") from None
    if content is not None and not isinstance(content, str):
        content = _join_parts(content, where)
    completion = Completion(content, _tool_calls(calls, where) if calls else [])
    usage = data.get("usage")
    if isinstance(usage, dict):
        completion.prompt_tokens = token_count(usage.get("prompt_tokens"))
        completion.completion_tokens = token_count(usage.get("completion_tokens"))
    model = data.get("model")
    completion.model = model if isinstance(model, str) else None
    return completion


def _join_parts(content: Any, where: Callable[[], str]) -> str:
    """`content` given as a list of parts: the text of its text parts, joined."""
    if not isinstance(content, list):
        raise ProviderError(f"the provider's message content is a {type(content).__name__}, not text{where()}")
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "".join(texts)


def _tool_calls(calls: Any, where: Callable[[], str]) -> list[dict[str, Any]]:
    if not isinstance(calls, list):
        raise ProviderError(f"the provider's tool_calls is a {type(calls).__name__}, not a list{where()}")
    wire = []
    for k, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise ProviderError(f"the provider's tool call {k + 1} has no function{where()}")
        name = function.get("name")
        if not isinstance(name, str):
            raise ProviderError(f"the provider's tool call {k + 1} has a function without a name{where()}")
        arguments = function.get("arguments")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):  # some servers send the arguments as an object
            arguments = orjson.dumps(arguments).decode()
        call_id = call.get("id")
        wire.append({"id": call_id if isinstance(call_id, str) else f"call_{k}", "type": "function",
                     "function": {"name": name, "arguments": arguments}})
    return wire
