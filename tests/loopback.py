"""A loopback OpenAI-compatible server (Chat Completions, and Responses) for scripted tests and benchmarks.

The one place that knows the wire format. Usage::

    from tests.loopback import LoopbackServer, text, tool_calls, status

    with LoopbackServer([tool_calls([("lookup", {"key": "a"})]), text("done")]) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="test")
        ...
        assert srv.count == 2

A script is either a list of replies consumed in order (one per scripted request), or a callable
`(request_body: dict, index: int) -> reply`, where `index` counts scripted requests from 0.
A reply is a `Reply` (see the constructors below), a `str` (shorthand for `text`), or a list of
`(name, args)` pairs (shorthand for `tool_calls`). Requests answered by `fail_every` never reach
the script and consume no entry of a list script, so an SDK retry gets the scripted reply.

The server is an asyncio HTTP/1.1 server with keep-alive on its own event-loop thread, so slow
replies (`latency_s`, `stall`) never block other connections.
"""
from __future__ import annotations

import asyncio
import itertools
import threading
import traceback
from http import HTTPStatus
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from tests.loopback_wire import chat_events, completion_body, error_body, response_body, response_events

__all__ = [
    "LoopbackServer",
    "Reply",
    "message",
    "raw",
    "router",
    "stall",
    "status",
    "text",
    "tool_calls",
    "tool_then_text",
]

# The SDK honours retry-after-ms before retry-after, and ignores a delay of 0 (it falls back to its
# own 0.5 s backoff), so a small positive value keeps retried tests and benchmarks quick.
FAST_RETRY = {"retry-after-ms": "5"}
_MAX_HEAD = 1 << 20


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a completion (`message` set) or a raw status with a JSON body."""

    status: int = 200
    message: dict[str, Any] | None = None
    finish_reason: str = "stop"
    usage: tuple[int, int] = (10, 5)
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    hang: bool = False
    then: Reply | None = None
    extra: dict[str, Any] = field(default_factory=dict)


ReplyLike = Reply | str | Sequence[tuple]
Script = Sequence[ReplyLike] | Callable[[dict, int], ReplyLike]


def text(content: str, prompt_tokens: int = 10, completion_tokens: int = 5) -> Reply:
    """A final assistant answer (finish_reason "stop")."""
    message = {"role": "assistant", "content": content, "tool_calls": None}
    return Reply(message=message, finish_reason="stop", usage=(prompt_tokens, completion_tokens))


def tool_calls(
    calls: Sequence[tuple], prompt_tokens: int = 10, completion_tokens: int = 5, content: str | None = None
) -> Reply:
    """An assistant turn calling tools; each call is `(name, args)` or `(name, args, id)`.

    A dict `args` is JSON-encoded; a str is sent unchanged (to script malformed JSON). Ids default
    to "call_<k>", k being the call's position in this reply.
    """
    wire = []
    for k, call in enumerate(calls):
        name, args = call[0], call[1]
        call_id = call[2] if len(call) > 2 else f"call_{k}"
        arguments = args if isinstance(args, str) else orjson.dumps(args).decode()
        wire.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
    message = {"role": "assistant", "content": content, "tool_calls": wire}
    return Reply(message=message, finish_reason="tool_calls", usage=(prompt_tokens, completion_tokens))


def message(wire_message: dict[str, Any], finish_reason: str = "stop", usage: tuple[int, int] = (10, 5),
            **extra: Any) -> Reply:
    """A completion whose `choices[0].message` is exactly `wire_message` (to script odd shapes: content
    as a list of parts, a tool call without `function`); `extra` adds top-level fields to the body."""
    return Reply(message=dict(wire_message), finish_reason=finish_reason, usage=usage, extra=extra)


def raw(body: bytes | dict | list, code: int = 200) -> Reply:
    """A body sent exactly as given, with `code`: bytes as they are (not JSON, truncated), else JSON."""
    return Reply(status=code, body=body)


def status(code: int, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
    """A bare HTTP status; the body defaults to an OpenAI-style error object."""
    if body is None:
        body = error_body(code, f"loopback scripted status {code}")
    return Reply(status=code, body=body, headers=dict(headers or {}))


def stall(seconds: float | None = None, then: ReplyLike | None = None) -> Reply:
    """Wait `seconds` then answer `then` (default text("")); `seconds=None` hangs until server stop."""
    if seconds is None:
        return Reply(hang=True)
    return Reply(delay_s=seconds, then=_coerce(then) if then is not None else text(""))


def router(fn: Callable[[list[dict]], ReplyLike]) -> Callable[[dict, int], ReplyLike]:
    """A stateless script: `fn(messages)` picks the reply from the conversation sent."""
    return lambda request, index: fn(request.get("messages") or [])


def tool_then_text(
    name: str, args: dict | Callable[[list[dict]], dict], answer: str | Callable[[list[dict]], str]
) -> Callable[[dict, int], ReplyLike]:
    """A router: one call of `name` after a user message, then `answer` after the tool result."""

    def pick(messages: list[dict]) -> Reply:
        if messages and messages[-1].get("role") == "tool":
            return text(answer(messages) if callable(answer) else answer)
        return tool_calls([(name, args(messages) if callable(args) else args)])

    return router(pick)


def _coerce(reply: ReplyLike) -> Reply:
    if isinstance(reply, Reply):
        return reply
    if isinstance(reply, str):
        return text(reply)
    if isinstance(reply, (list, tuple)):
        return tool_calls(reply)
    raise TypeError(f"loopback: a script produced {type(reply).__name__}, not a Reply")


class LoopbackServer:
    """A Chat Completions server on 127.0.0.1 (ephemeral port), run in a background thread."""

    def __init__(
        self,
        script: Script,
        latency_s: float = 0.0,
        fail_every: dict[int, int] | None = None,
        fail_headers: dict[str, str] | None = None,
        keep_requests: bool = True,
    ) -> None:
        self._script = script
        self._keep = keep_requests  # False: requests are only counted (a benchmark serving many thousands)
        self._entries = None if callable(script) else list(script)
        self.latency_s = latency_s
        self.fail_every = dict(fail_every or {})
        self.fail_headers = dict(FAST_RETRY if fail_headers is None else fail_headers)
        self._lock = threading.Lock()
        self._requests: list[dict] = []
        self._headers: list[dict[str, str]] = []
        self._statuses: dict[int, int] = {}
        self._errors: list[str] = []
        self._scripted = 0
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self.port = 0

    # --- observation, safe from any thread -------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict]:
        """Received request bodies, in arrival order (a snapshot)."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """Received request headers (lower-case names), parallel to `requests`."""
        with self._lock:
            return list(self._headers)

    @property
    def statuses(self) -> list[int | None]:
        """The status answered to each request, parallel to `requests` (None while pending)."""
        with self._lock:
            return [self._statuses.get(n) for n in range(len(self._requests))]

    @property
    def errors(self) -> list[str]:
        """Script problems (exhaustion, exceptions, bad replies), answered as 500s."""
        with self._lock:
            return list(self._errors)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._requests)

    # --- lifecycle -------------------------------------------------------------------------------
    def start(self) -> LoopbackServer:
        """Serve from a new thread; works from sync code and from inside a running event loop."""
        loop = asyncio.new_event_loop()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=serve, name="loopback-openai", daemon=True)
        self._thread.start()
        listening = asyncio.start_server(self._handle, "127.0.0.1", 0, limit=_MAX_HEAD, backlog=1024)
        try:
            self._server = asyncio.run_coroutine_threadsafe(listening, loop).result(10)
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(10)
            raise
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        """Close the listener and every connection, then join the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- HTTP/1.1 ------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path = (lines[0].split(" ") + ["", ""])[:2]
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        key, value = line.split(":", 1)
                        headers[key.strip().lower()] = value.strip()
                if "chunked" in headers.get("transfer-encoding", ""):
                    await self._send(writer, 411, error_body(411, "loopback needs Content-Length"), {})
                    return
                raw = await reader.readexactly(int(headers.get("content-length") or 0))
                code, body, extra = await self._answer(method, path, headers, raw)
                await self._send(writer, code, body, extra)
                if headers.get("connection", "").lower() == "close":
                    return
        except (asyncio.CancelledError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _send(self, writer: asyncio.StreamWriter, code: int, body: Any, extra: dict[str, str]) -> None:
        payload = body if isinstance(body, bytes) else orjson.dumps(body)
        try:
            reason = HTTPStatus(code).phrase
        except ValueError:
            reason = "Status"
        kind = extra.pop("content-type", "application/json")
        head = [f"HTTP/1.1 {code} {reason}", f"content-type: {kind}", f"content-length: {len(payload)}"]
        head += [f"{key}: {value}" for key, value in extra.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
        await writer.drain()

    async def _answer(self, method: str, path: str, headers: dict, raw: bytes) -> tuple[int, Any, dict]:
        path = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and path.endswith("/models"):
            return 200, {"object": "list", "data": [{"id": "loopback", "object": "model"}]}, {}
        responses = path.endswith("/responses")
        if method != "POST" or not (path.endswith("/chat/completions") or responses):
            message = f"loopback serves POST /v1/chat/completions and /v1/responses, not {method} {path}"
            return 404, error_body(404, message), {}
        try:
            request = orjson.loads(raw)
        except orjson.JSONDecodeError:
            request = {"_raw": raw.decode("utf-8", "replace")}
        with self._lock:
            number = len(self._requests)
            self._requests.append(request if self._keep else None)  # type: ignore[arg-type]
            self._headers.append(headers if self._keep else None)  # type: ignore[arg-type]
        code, body, extra = await self._reply_to(request, number + 1, responses)
        with self._lock:
            self._statuses[number] = code
        return code, body, extra

    async def _reply_to(self, request: dict, number: int, responses: bool = False) -> tuple[int, Any, dict]:
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        if "_raw" in request:
            return 400, error_body(400, "request body is not JSON"), {}
        for every, code in self.fail_every.items():
            if number % every == 0:
                return code, error_body(code, f"loopback fail_every {every}"), dict(self.fail_headers)
        reply = self._next_reply(request)
        while reply.delay_s > 0 or reply.hang:
            if reply.hang:
                await asyncio.get_running_loop().create_future()  # cancelled by stop()
            await asyncio.sleep(reply.delay_s)
            reply = reply.then or text("")
        if reply.message is None:
            return reply.status, reply.body if reply.body is not None else {}, dict(reply.headers)
        if responses:
            body = response_body(request, reply.message, reply.usage, number)
            if request.get("stream"):
                return reply.status, response_events(body), {**reply.headers, "content-type": "text/event-stream"}
            return reply.status, body, dict(reply.headers)
        if request.get("stream"):
            return reply.status, chat_events(request, self._completion(request, reply)), {
                **reply.headers, "content-type": "text/event-stream"}
        return reply.status, self._completion(request, reply), dict(reply.headers)

    def _next_reply(self, request: dict) -> Reply:
        with self._lock:
            index = self._scripted
            self._scripted += 1
        try:
            if self._entries is not None:
                if index >= len(self._entries):
                    raise LookupError(
                        f"script exhausted: request {index + 1} but only {len(self._entries)} replies")
                return _coerce(self._entries[index])
            return _coerce(self._script(request, index))  # type: ignore[operator]
        except Exception as exc:  # noqa: BLE001 - a script bug is answered as a 500 and recorded
            message = str(exc) if isinstance(exc, LookupError) else traceback.format_exc(limit=-3)
            with self._lock:
                self._errors.append(message)
            # x-should-retry stops the SDK from retrying a broken script eight times.
            return Reply(status=500, body=error_body(500, f"loopback: {message}"),
                         headers={"x-should-retry": "false"})

    def _completion(self, request: dict, reply: Reply) -> dict:
        assert reply.message is not None
        return completion_body(request, reply.message, reply.finish_reason, reply.usage, next(self._ids),
                               **reply.extra)
