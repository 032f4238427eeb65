"""Every chat completion agent-eval makes: the built-in agent's, the judge's and the user simulator's.

A request is a plain dict, encoded with orjson and sent through the openai SDK client's own `post`,
so the client, its connection pool, `max_retries=8`, the backoff and `Retry-After` are the SDK's.
The answer is parsed with orjson into the few fields agent-eval reads (`Completion`), which skips
the SDK's request transformation and response models: the per-completion cost that dominates a run.
Every failure is a `ProviderError` that names the endpoint (secrets removed) and the model.
"""
from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

from agent_eval.errors import ProviderError

MAX_RETRIES = 8
PLACEHOLDER_KEY = "unused"
"""The key sent to an endpoint that needs none (Ollama, vLLM, llama.cpp) when no key is set anywhere."""

_SECRET_PARAM = re.compile(r"key|token|secret|password|sig|auth", re.IGNORECASE)
_SHOWN_CHARS = 300


def redact_url(url: str | None) -> str | None:
    """The URL with its userinfo and the values of secret-looking query parameters replaced by ***."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        host = parts.netloc
        if "@" in host:
            host = "***@" + host.rpartition("@")[2]
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            if any(_SECRET_PARAM.search(name) for name, _ in pairs):
                query = urlencode([(name, "***" if _SECRET_PARAM.search(name) else value)
                                   for name, value in pairs], safe="*")
        return urlunsplit((parts.scheme, host, parts.path, query, parts.fragment))
    except ValueError:  # not a URL urllib can split: show nothing of it that might be a secret
        return "<unparseable URL>"


def is_redacted(url: str | None) -> bool:
    """True when `redact_url` would change the URL (it holds a secret that is never stored)."""
    return bool(url) and redact_url(url) != url


def restore_url(stored: str | None, *candidates: str | None) -> str | None:
    """The full URL behind a stored one: itself when nothing was redacted, else the first candidate
    (a flag or an environment variable) that redacts to it, else None (its secret is gone for good)."""
    if "***" not in (stored or ""):
        return stored
    return next((c for c in candidates if c and redact_url(c) == stored), None)


@dataclass(slots=True)
class Completion:
    """What agent-eval reads of one Chat Completions answer."""

    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # wire form, `arguments` a str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str | None = None


# --- retries: the progress display's hook and the count for the error message -----------------------
RetryListener = Callable[[str, int, int], None]  # (endpoint, attempt, max_retries)
_listener: RetryListener | None = None
_retries: ContextVar[list[int] | None] = ContextVar("agent_eval_llm_retries", default=None)


def set_retry_listener(listener: RetryListener | None) -> None:
    """Call `listener(endpoint, attempt, max_retries)` each time the SDK is about to retry a request."""
    global _listener
    _listener = listener


def notify_retry(endpoint: str, attempt: int, most: int) -> None:
    """Tell the retry listener, if any, that a request is about to be retried (here or in a worker)."""
    if _listener is not None:
        _listener(endpoint, attempt, most)


def _client_class() -> type:
    from openai import AsyncOpenAI

    class Client(AsyncOpenAI):
        """The SDK's client, telling agent-eval about each retry before the SDK sleeps on it."""

        endpoint: str = ""

        async def _sleep_for_retry(self, *, retries_taken: int, max_retries: int, options: Any,
                                   response: Any) -> None:
            count = _retries.get()
            if count is not None:
                count[0] += 1
            notify_retry(self.endpoint, retries_taken + 1, max_retries)
            await super()._sleep_for_retry(retries_taken=retries_taken, max_retries=max_retries,
                                           options=options, response=response)

    return Client


_CLIENT_CLASS: type | None = None
_CLIENTS: dict[tuple[str | None, str | None], tuple[Any, Any, Any]] = {}  # (url, key) -> (loop, client, closer)
# A client replaced because its event loop ended is kept, not dropped: collecting one that was never
# closed would schedule its close on the new loop, where the old loop's sockets cannot be closed.
_RETIRED: list[Any] = []
CLOSE_GRACE_S = 2.0


async def _close_when_the_loop_ends(client: Any) -> AsyncIterator[None]:
    """Parked at its yield; the event loop closes every such generator as it shuts down (asyncio.run,
    and the runner's own loop, call shutdown_asyncgens), which closes the client's pool with it."""
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.close(), CLOSE_GRACE_S)


def _http_client(base_url: str | None) -> Any:
    """The SDK's aiohttp transport where it is available (its documented choice for concurrency: about
    half the client CPU of the default per request), else the SDK's default. A URL with credentials in
    it keeps the default, which sends them as Basic auth (aiohttp refuses them beside the API key)."""
    if base_url and "@" in urlsplit(base_url).netloc:
        return None
    try:
        from openai import DefaultAioHttpClient

        return DefaultAioHttpClient()
    except (ImportError, RuntimeError):  # the SDK without its aiohttp extra
        return None


async def shared_client(base_url: str | None, api_key: str | None) -> Any:
    """One SDK client per endpoint and event loop for the whole process (its pool is the loop's)."""
    global _CLIENT_CLASS
    loop = asyncio.get_running_loop()
    key = (base_url, api_key)
    entry = _CLIENTS.get(key)
    if entry is None or entry[0] is not loop:
        if entry is not None:
            _RETIRED.append(entry[1:])
        if _CLIENT_CLASS is None:
            _CLIENT_CLASS = _client_class()
        http_client = _http_client(base_url)
        client = _CLIENT_CLASS(base_url=base_url, api_key=api_key, max_retries=MAX_RETRIES,
                               **({"http_client": http_client} if http_client is not None else {}))
        client.endpoint = redact_url((base_url or str(client.base_url)).rstrip("/")) or ""
        closer = _close_when_the_loop_ends(client)
        await closer.__anext__()
        entry = _CLIENTS[key] = (loop, client, closer)
    return entry[1]


# --- the call ---------------------------------------------------------------------------------------
async def complete(base_url: str | None, api_key: str | None, body: dict[str, Any],
                   timeout_s: float | None = None, timeout_flag: str = "--judge-timeout") -> Completion:
    """POST body to /chat/completions and parse the answer; any failure is a ProviderError.

    `timeout_s` bounds the request as a whole, the SDK's retries included.
    """
    client = await shared_client(base_url, api_key)
    count = [0]
    token = _retries.set(count)
    try:
        if timeout_s is None:
            raw = await _post(client, body)
        else:
            try:  # wait_for, not asyncio.timeout: Python 3.10 is supported
                raw = await asyncio.wait_for(_post(client, body), timeout_s)
            except asyncio.TimeoutError:
                raise ProviderError(f"no answer within {timeout_flag} {timeout_s:g}s"
                                    f"{_where(client, body, count[0])}") from None
    except ProviderError:
        raise
    except Exception as exc:
        import openai

        if not isinstance(exc, openai.OpenAIError):  # the transport's own (an odd URL, say): the provider's
            where = _where(client, body, count[0])
            raise ProviderError(f"{type(exc).__name__}: {_shorten(str(exc))}{where}") from exc
        name, message = type(exc).__name__, str(exc)
        if isinstance(exc, openai.APITimeoutError) and _was_refused(exc):
            name, message = "APIConnectionError", "Connection error"  # see _was_refused
        if isinstance(exc, openai.APIConnectionError):
            message = message.rstrip(".")
        raise ProviderError(f"{name}: {_shorten(message)}{_where(client, body, count[0])}",
                            status_code=getattr(exc, "status_code", None)) from exc
    finally:
        _retries.reset(token)
    return parse_completion(raw, lambda: _where(client, body, count[0]))


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


async def _post(client: Any, body: dict[str, Any]) -> bytes:
    from openai._httpx2 import http_response_types

    try:
        content = orjson.dumps(body)
    except TypeError:  # a value orjson refuses (a tool schema from user code): the SDK's encoder tries
        response = await client.post("/chat/completions", body=body, cast_to=http_response_types()[0])
    else:
        response = await client.post("/chat/completions", content=content, cast_to=http_response_types()[0])
    return response.content


def _where(client: Any, body: dict[str, Any], retries: int) -> str:
    tail = f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""
    return f" ({client.endpoint}, model {body.get('model')}){tail}"


def _shorten(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "…"


def parse_completion(raw: bytes, where: Callable[[], str] = lambda: "") -> Completion:
    """The fields agent-eval reads from a Chat Completions body; a ProviderError when they are not there."""
    try:
        data = orjson.loads(raw)
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
        completion.prompt_tokens = _count(usage.get("prompt_tokens"))
        completion.completion_tokens = _count(usage.get("completion_tokens"))
    model = data.get("model")
    completion.model = model if isinstance(model, str) else None
    return completion


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


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
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str):
            what = "no function" if not isinstance(function, dict) else "a function without a name"
            raise ProviderError(f"the provider's tool call {k + 1} has {what}{where()}")
        arguments = function.get("arguments")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):  # some servers send the arguments as an object
            arguments = orjson.dumps(arguments).decode()
        call_id = call.get("id")
        wire.append({"id": call_id if isinstance(call_id, str) else f"call_{k}", "type": "function",
                     "function": {"name": name, "arguments": arguments}})
    return wire
