"""The recording model endpoint: one loopback aiohttp server per process, a path per run.

An agent pointed at `task.base_url` (`http://127.0.0.1:PORT/r/<run token>/v1`) with `task.api_key` (the
token) talks to its real endpoint through agent-eval's own client (the built-in agent's: its retries,
its connection pool), and every completion lands in the run's `trace.llm_calls` as it is answered.
"""
from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import orjson

from agent_eval.llm import _shorten, _was_refused, close_when_the_loop_ends, redact_url, shared_client
from agent_eval.provider import keying, retry, state, tape
from agent_eval.provider.bounded import BodyTooLarge
from agent_eval.limits import MAX_MESSAGE_BYTES
from agent_eval.provider.waits import recording
from agent_eval.provider.tokens import USAGE_PATHS, loads_answer
from agent_eval.run.wire import Answer, ModelCall, StreamReader, read_answer, request_tools

if TYPE_CHECKING:
    from agent_eval.provider.waits import Waits
    from agent_eval.run.agents.base import RunContext
    from agent_eval.run.bridge_mcp import McpServer

INFRA_STATUSES = frozenset({401, 403, 404, 408, 409, 429})
NO_RETRY = {"x-should-retry": "false"}
MAX_REQUEST = MAX_MESSAGE_BYTES  # an agent's request body: a long conversation, never aiohttp's default of 1 MiB


@dataclass
class Completion:
    """One recorded completion's tool calls, for pairing with the sandbox's steps after the run."""

    turn: int
    offered: set[str]
    calls: list[ModelCall]
    t_end_s: float


@dataclass
class Outcome:
    """How one recorded request ended: a success, or the provider error that ended it after the retries."""

    ok: bool
    error: str | None = None  # the ProviderError text, when it failed after the retries for infrastructure


@dataclass
class RunLink:
    """One run's path on the endpoint: its token, real endpoint and what its requests produced."""

    token: str
    base_url: str
    model: str | None
    real_base_url: str | None
    real_api_key: str | None
    llm_calls: list[dict[str, Any]]
    t0: Callable[[], float]  # the run's time origin (the sandbox's t0, set at the first turn)
    turn: int = 0
    completions: list[Completion] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    mcp: McpServer | None = None  # when the mcp package is installed
    run: RunContext | None = None  # the run's sandbox and tool schemas, for the MCP server
    mcp_url: str | None = None
    waits: Waits | None = None  # its requests' waiting for the rate limit
    leave: Callable[[], object] | None = None  # removes the run's path from the endpoint
    cleanups: list[Callable[[], object]] = field(default_factory=list)  # once the run has ended (a cmd: folder)
    pending: dict[asyncio.Task[Any], dict[str, Any]] = field(default_factory=dict)  # requests in flight, their entries
    closed: bool = False
    tape: tape.RunTape | None = None  # the run's cassette under --record / --replay
    keys: keying.RunKeys | None = None  # the run's case and trial, for a loopback model's X-Agent-Eval-* headers
    command: state.CommandState = field(default_factory=state.current)  # the run's command: endpoints, clients

    def close(self) -> None:
        """The run has ended: its path answers 401 from now on, a request still in flight (a child left
        behind holds it) is abandoned (`client_closed`, its upstream call cancelled), its cleanups run."""
        self.closed = True
        if self.leave is not None:
            self.leave()
            self.leave = None
        now = time.perf_counter()
        for task, entry in list(self.pending.items()):
            if entry["status"] is None:
                entry.update(status="client_closed", latency_s=max(0.0, now - self.t0() - entry["t_start_s"]))
            task.cancel()
        self.pending.clear()
        while self.cleanups:
            self.cleanups.pop()()

    def infrastructure_error(self) -> str | None:
        """The provider error of the last request that failed for infrastructure, unless one succeeded after."""
        error = None
        for outcome in self.outcomes:
            if outcome.ok:
                error = None
            elif outcome.error is not None:
                error = outcome.error
        return error


class _Failed(Exception):
    """The retry loop gave up: the SDK's last error, the retries made, and why it stopped when not plain."""

    def __init__(self, error: BaseException, retries: int, note: str) -> None:
        super().__init__(str(error))
        self.error, self.retries, self.note = error, retries, note


class _RawStream:
    """Keeps the SDK's streamed HTTP response unread: the endpoint passes its bytes through."""

    def __init__(self, *, cast_to: Any, response: Any, client: Any, options: Any = None) -> None:
        self.response = response


def _raw_stream_class() -> type:
    from openai import AsyncStream

    class RawStream(_RawStream, AsyncStream[bytes]):  # the SDK checks for a typed AsyncStream
        pass

    return RawStream


class Endpoint:
    """The process's recording endpoint on its event loop; runs register a path and leave it."""

    def __init__(self) -> None:
        self.links: dict[str, RunLink] = {}
        self.port = 0
        self._runner: Any = None
        self._stream_cls: type | None = None

    async def start(self) -> None:
        from aiohttp import web

        def request(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> Any:
            # aiohttp's own limit on a request body is 1 MiB: too small for a long conversation
            return web.BaseRequest(message, payload, protocol, writer, task, asyncio.get_running_loop(),
                                   client_max_size=MAX_REQUEST)

        # handler_cancellation: a client that disconnects cancels its handler, and the upstream call.
        server = web.Server(self._handle, handler_cancellation=True, access_log=None, request_factory=request)
        self._runner = web.ServerRunner(server, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def open(self, model: str | None, base_url: str | None, api_key: str | None,
             llm_calls: list[dict[str, Any]], t0: Any) -> RunLink:
        token = "ae-" + secrets.token_urlsafe(18)
        root = f"http://127.0.0.1:{self.port}/r/{token}"
        link = RunLink(token, root + "/v1", model, base_url, api_key, llm_calls, t0, tape=tape.current(),
                       keys=keying.current())
        self.links[token] = link
        link.leave = lambda: self.links.pop(token, None)
        return link

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        parts = request.path.split("/", 4)
        link = self.links.get(parts[2]) if len(parts) >= 4 and parts[1] == "r" else None
        auth = request.headers.get("Authorization")
        # The MCP URL is the run's credential itself (MCP clients seldom set headers); /v1 wants the token.
        if link is None or auth != f"Bearer {link.token}" and not (parts[3] == "mcp" and auth is None):
            return _error(web, 401, "invalid_api_key", "the run token is missing or wrong: use task.api_key")
        if parts[3] == "mcp" and link.mcp is not None:
            return await link.mcp.handle(request)
        if parts[3] != "v1":
            return _error(web, 404, "not_found", f"agent-eval's endpoint serves /v1 and /mcp, not {request.path}")
        if has_dot_segments(request.raw_path):  # the forwarded URL stays the base URL followed by the agent's path
            return _error(web, 400, "invalid_path", "'.' and '..' segments (raw or percent-encoded) are not "
                          "allowed in a request path")
        # "//host/x" would read as a host of its own: the path is always the base URL's followed by it
        with tape.using(link.tape, "agent"), state.using(link.command):  # the handler's task is not the run's
            return await self._forward(web, link, request, "/" + (parts[4].lstrip("/") if len(parts) > 4 else ""))

    async def _forward(self, web: Any, link: RunLink, request: Any, path: str) -> Any:
        raw = await request.read()
        recorded = request.method == "POST" and path.rstrip("/") in USAGE_PATHS
        path = path.rstrip("/") if recorded else path
        body: Any = None
        if recorded:
            with contextlib.suppress(orjson.JSONDecodeError):
                body = orjson.loads(raw)
        stream = isinstance(body, dict) and body.get("stream") is True
        wants_usage = True
        if stream and path == "/chat/completions":
            options = body.get("stream_options")
            wants_usage = isinstance(options, dict) and options.get("include_usage") is True
            if not wants_usage:
                body["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
                raw = orjson.dumps(body)
        model = body.get("model") if isinstance(body, dict) and isinstance(body.get("model"), str) else None
        started = time.perf_counter()
        entry: dict[str, Any] = {"latency_s": None, "t_start_s": started - link.t0(), "prompt_tokens": None,
                                 "completion_tokens": None, "model": model or link.model, "path": path,
                                 "status": None, "retries": 0}
        link.llm_calls.append(entry)
        count = [0]  # attempts sent
        client, task = None, asyncio.current_task()
        if task is not None:
            link.pending[task] = entry
        try:
            client = await shared_client(link.real_base_url, link.real_api_key)
            keyed = keying.headers_for(link.real_base_url, "agent", link.keys, link.turn)  # X-Agent-Eval-*

            def attempt() -> Any:
                count[0] += 1
                return self._send(client, request, path, raw, stream, keyed)

            # agent-eval's own retry loop, the endpoint's window and token bucket, as for the built-in
            # agent; waiting for the limit is the run's (trace.rate_limit_wait_s), not the agent's.
            ep = state.current().endpoints.endpoint("agent", client.endpoint, model or link.model)
            with recording(link.waits), tape.counting_unsent() as unsent:
                try:
                    response = await retry.send(ep, attempt, None, client.endpoint)
                except retry.RequestFailed as failed:
                    raise _Failed(failed.error, failed.retries, failed.note) from None
                finally:  # summary.provider counts what reached the provider: not what a recording answered
                    ep.requests -= unsent[0]
            entry["retries"] = max(0, count[0] - 1)
            if stream:
                return await self._pass_stream(web, link, request, entry, response, path, wants_usage, body, started)
            data = response.content
            answer = None
            if recorded:
                with contextlib.suppress(orjson.JSONDecodeError):
                    answer = read_answer(path, loads_answer(data))
            self._finish(link, entry, response.status_code, answer, body if recorded else None, started)
            return web.Response(body=data, status=response.status_code,
                                content_type=_content_type(response), headers=_kept_headers(response))
        except asyncio.CancelledError:
            if not link.closed:  # once the run has ended its trace is frozen (close() said client_closed)
                entry.update(status="client_closed", latency_s=time.perf_counter() - started,
                             retries=max(0, count[0] - 1))
            raise
        except _Failed as failed:  # the provider's failure after the retries: the agent gets it, the run knows
            return self._failed(web, link, entry, failed.error, client, model, failed.retries, started, failed.note)
        except Exception as exc:  # noqa: BLE001 - not retried: the transport's own (an odd URL), or no client for the endpoint
            return self._failed(web, link, entry, exc, client, model, max(0, count[0] - 1), started)
        finally:
            if task is not None:
                link.pending.pop(task, None)

    async def _send(self, client: Any, request: Any, path: str, raw: bytes, stream: bool, keyed: Any) -> Any:
        from openai._models import FinalRequestOptions
        from openai._httpx2 import http_response_types

        if self._stream_cls is None:
            self._stream_cls = _raw_stream_class()
        headers = {"Content-Type": request.headers.get("Content-Type", "application/json"), **keyed}
        options = FinalRequestOptions.construct(method=request.method.lower(), url=path, headers=headers,
                                                params=dict(request.query), content=raw or None)
        answer = await client.request(http_response_types()[0], options, stream=stream, stream_cls=self._stream_cls)
        return getattr(answer, "response", answer)  # a stream: the response, its body still unread

    async def _pass_stream(self, web: Any, link: RunLink, request: Any, entry: dict[str, Any], response: Any,
                           path: str, wants_usage: bool, body: Any, started: float) -> Any:
        out = web.StreamResponse(status=response.status_code, headers=_kept_headers(response))
        out.content_type = _content_type(response)
        reader = StreamReader(path, wants_usage)
        try:
            await out.prepare(request)
            async for chunk in response.aiter_bytes():
                for event in reader.feed(chunk):
                    await out.write(event)
            rest = reader.rest()
            if rest:
                await out.write(rest)
            await out.write_eof()
        except asyncio.CancelledError:
            if not link.closed:
                entry.update(status="client_closed", latency_s=time.perf_counter() - started)
            raise
        except Exception as exc:  # the stream broke mid-way: recorded; the agent sees its connection end
            if link.closed:
                raise
            entry.update(status=type(exc).__name__, latency_s=time.perf_counter() - started)
            broke = str(exc) if isinstance(exc, BodyTooLarge) else f"{type(exc).__name__}: the stream broke: {exc}"
            link.outcomes.append(Outcome(False, f"{broke} ({_endpoint(link)}, model {entry['model']})"))
            raise
        finally:
            await response.aclose()
        self._finish(link, entry, response.status_code, reader.finish(), body, started)
        return out

    def _finish(self, link: RunLink, entry: dict[str, Any], status: int, answer: Answer | None, body: Any,
                started: float) -> None:
        if link.closed:  # answered after the run ended: its trace is frozen, the entry says client_closed
            return
        entry.update(status=status, latency_s=time.perf_counter() - started + tape.replayed_s())  # --replay: recorded
        if body is None:
            return
        if answer is not None:
            entry["prompt_tokens"], entry["completion_tokens"] = answer.prompt_tokens, answer.completion_tokens
            if answer.model:
                entry["model"] = entry["model"] or answer.model
            link.completions.append(Completion(link.turn, request_tools(body), answer.calls,
                                               time.perf_counter() - link.t0()))
        link.outcomes.append(Outcome(True))

    def _failed(self, web: Any, link: RunLink, entry: dict[str, Any], exc: BaseException, client: Any,
                model: str | None, retries: int, started: float, note: str = "") -> Any:
        status = getattr(exc, "status_code", None)
        if link.closed:
            return _error(web, 502, "upstream_error", "the run has ended", NO_RETRY)
        entry.update(status=status if isinstance(status, int) else type(exc).__name__,
                     latency_s=time.perf_counter() - started, retries=retries)
        tail = f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""
        where = f" ({_endpoint(link, client)}, model {model or link.model}){tail}"
        name, text = type(exc).__name__, str(exc).rstrip(".")
        if name == "APITimeoutError" and _was_refused(exc):  # the aiohttp transport's refused connection
            name, text = "APIConnectionError", "Connection error"
        entry["status"] = entry["status"] if isinstance(status, int) else name
        message = f"{name}: {_shorten(text)}{where}{note}" if not isinstance(exc, BodyTooLarge) else f"{text}{where}"
        is_infra = not isinstance(status, int) or status in INFRA_STATUSES or status >= 500
        if entry["path"] in USAGE_PATHS or is_infra:
            link.outcomes.append(Outcome(False, message if is_infra else None))
        response = getattr(exc, "response", None)
        if isinstance(status, int) and response is not None:
            return web.Response(body=response.content, status=status, content_type=_content_type(response),
                                headers={**_kept_headers(response), **NO_RETRY})
        return _error(web, 502, "upstream_error", message, NO_RETRY)


def has_dot_segments(raw_path: str) -> bool:
    """True when a request path holds a `.` or `..` segment, raw or percent-encoded (once or more)."""
    path = raw_path.split("?", 1)[0]
    for _ in range(4):
        decoded = unquote(path)
        if decoded == path:
            break
        path = decoded
    return any(segment in (".", "..") for segment in path.replace("\\", "/").split("/"))


def _content_type(response: Any) -> str:
    return (response.headers.get("content-type") or "application/json").split(";")[0].strip()


def _kept_headers(response: Any) -> dict[str, str]:
    request_id = response.headers.get("x-request-id")
    return {"x-request-id": request_id} if request_id else {}


def _endpoint(link: RunLink, client: Any = None) -> str:
    shown = getattr(client, "endpoint", None) or redact_url(link.real_base_url) or "https://api.openai.com/v1"
    return str(shown)


def _error(web: Any, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Any:
    body = {"error": {"message": message, "type": code, "param": None, "code": code}}
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json", headers=headers)


# --- one endpoint per event loop ----------------------------------------------------------------------
_ENDPOINTS: dict[asyncio.AbstractEventLoop, Endpoint] = {}
_STARTING: dict[asyncio.AbstractEventLoop, asyncio.Task[Endpoint]] = {}


async def endpoint() -> Endpoint:
    """The running event loop's endpoint, started on first use and stopped when the loop shuts down."""
    loop = asyncio.get_running_loop()
    found = _ENDPOINTS.get(loop)
    if found is not None:
        return found
    starting = _STARTING.get(loop)
    if starting is None:  # one start, whose endpoint or failure every caller meanwhile gets (a later one retries)
        starting = _STARTING[loop] = loop.create_task(_start(loop))
    return await asyncio.shield(starting)  # a caller cancelled (--timeout) leaves the start to the others


async def _start(loop: asyncio.AbstractEventLoop) -> Endpoint:
    try:
        made = Endpoint()
        await made.start()
        closer = close_when_the_loop_ends(made.stop)
        await closer.__anext__()
        made._closer = closer  # type: ignore[attr-defined]  # kept alive until the loop shuts down
        for old in [key for key in _ENDPOINTS if key.is_closed()]:
            del _ENDPOINTS[old]
        _ENDPOINTS[loop] = made
        return made
    finally:
        _STARTING.pop(loop, None)
