"""The scripted model: a loopback OpenAI-compatible server that answers from a script (scripted/script.py).

It serves `POST /v1/chat/completions` (a stream too) and `POST /v1/responses`, and `GET /v1/models`. The
first entry matching a request answers it; a request no entry matches is HTTP 400 naming the request (with
`x-should-retry: false`: no client retries it). Start it from Python (`scripted_model`, a context manager
giving its base URL), as the pytest fixture `agent_eval_scripted_model`, or as `agent-eval scripted-model`.
"""
from __future__ import annotations

import asyncio
import itertools
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from agent_eval.errors import ConfigError
from agent_eval.provider.keying import read_headers
from agent_eval.scripted.script import Asked, Entry, load_script, pick
from agent_eval.scripted.wire import chat_events, completion_body, error_body, response_body, response_events

HOST = "127.0.0.1"
MAX_REQUEST = 64 << 20
NO_RETRY = {"x-should-retry": "false"}
MAX_ASKED = 10_000  # what a long-lived server keeps of the requests it was asked (tests read it)


class ScriptedModel:
    """The server's state: the checked script, and what it was asked (its log: (asked, answered status))."""

    def __init__(self, entries: list[Entry], where: str = "the script") -> None:
        self.entries = entries
        self.where = where
        self.asked: deque[tuple[Asked, int]] = deque(maxlen=MAX_ASKED)
        self.port = 0
        self._numbers = itertools.count(1)
        self._runner: Any = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    async def start(self, port: int = 0) -> None:
        from aiohttp import web

        if type(port) is not int or not 0 <= port <= 65535:
            raise ConfigError(f"the scripted model's port is a whole number from 0 to 65535 (0: any free one), "
                              f"not {port!r}.")

        def request(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> Any:
            return web.BaseRequest(message, payload, protocol, writer, task, asyncio.get_running_loop(),
                                   client_max_size=MAX_REQUEST)

        server = web.Server(self._handle, access_log=None, request_factory=request)
        self._runner = web.ServerRunner(server, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, HOST, port, backlog=1024)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            raise ConfigError(f"the scripted model cannot listen on {HOST}:{port} ({exc.strerror or exc}); "
                              "pass another --port, or 0 for any free one.") from None
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        path = request.path.rstrip("/")
        if request.method == "GET" and path.endswith("/models"):
            return _json(web, 200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        responses = path.endswith("/responses")
        if request.method != "POST" or not (path.endswith("/chat/completions") or responses):
            return _json(web, 404, error_body(404, f"the scripted model serves POST /v1/chat/completions and "
                                                   f"/v1/responses, not {request.method} {request.path}"))
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            return _json(web, 400, error_body(400, "the request body is not a JSON object"), NO_RETRY)
        role, case, trial, turn = read_headers(request.headers)
        asked = Asked(role, case, trial, turn, last_text(body, responses))
        entry = pick(self.entries, asked)
        self.asked.append((replace(asked, last=asked.last[:200]), 400 if entry is None else 200))
        if entry is None:
            message = f"scripted model: no entry of {self.where} matches this request ({asked.describe()})"
            return _json(web, 400, error_body(400, message), NO_RETRY)
        number = next(self._numbers)
        usage = entry.usage(_request_text(body, responses))
        if responses:
            answer = response_body(body, entry.message, usage, number)
            if body.get("stream") is True:
                return web.Response(body=response_events(answer), content_type="text/event-stream")
            return _json(web, 200, answer)
        answer = completion_body(body, entry.message, entry.finish_reason, usage, number)
        if body.get("stream") is True:
            return web.Response(body=chat_events(body, answer), content_type="text/event-stream")
        return _json(web, 200, answer)


def last_text(body: dict[str, Any], responses: bool = False) -> str:
    """The text of a request's last message (Chat Completions `messages`, or a Responses `input`)."""
    items = body.get("input") if responses else body.get("messages")
    if isinstance(items, str):
        return items
    if not isinstance(items, list) or not items or not isinstance(items[-1], dict):
        return ""
    last = items[-1]
    content = last.get("content", last.get("output"))
    return _text_of(content)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part if isinstance(part, str) else str(part.get("text") or "")
                       for part in content if isinstance(part, (str, dict)))
    return ""


def _request_text(body: dict[str, Any], responses: bool) -> str:
    items = body.get("input") if responses else body.get("messages")
    if isinstance(items, str):
        return items
    return "".join(_text_of(item.get("content", item.get("output"))) for item in items or ()
                   if isinstance(item, dict)) if isinstance(items, list) else ""


def _json(web: Any, status: int, body: Any, headers: dict[str, str] | None = None) -> Any:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json", headers=headers)


@contextmanager
def scripted_model(script: str | Path | Sequence[Any], port: int = 0) -> Iterator[str]:
    """Serve `script` (a script file, or its list of entries) on 127.0.0.1 from a background thread for the
    block; gives the base URL (`http://127.0.0.1:PORT/v1`). A bad script is a ConfigError naming the entry."""
    with serving(script, port) as model:
        yield model.base_url


@contextmanager
def serving(script: str | Path | Sequence[Any], port: int = 0) -> Iterator[ScriptedModel]:
    """As `scripted_model`, giving the server itself (its `base_url`, and `asked`: what it was asked)."""
    where = str(script) if isinstance(script, (str, Path)) else "the script"
    model = ScriptedModel(load_script(script), where)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=_serve_forever, args=(loop,), name="agent-eval-scripted-model", daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(model.start(port), loop).result(30)
        yield model
    finally:
        try:
            asyncio.run_coroutine_threadsafe(model.stop(), loop).result(30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)


def _serve_forever(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        loop.close()


async def serve_until_stopped(model: ScriptedModel, port: int, started: Any) -> None:
    """The command's server: serve on this loop until cancelled (Ctrl-C); `started(base_url)` once up."""
    await model.start(port)
    try:
        started(model.base_url)
        await asyncio.Event().wait()
    finally:
        await model.stop()
