"""One live MCP session (stdio or streamable HTTP) over the official `mcp` client, with bounded requests.

The session lives in a task of its own, because the SDK's transports are anyio task groups that must
be entered and left by one task: a connection can then be opened by one run and closed by another, and
its requests can come from any task. Every request is bounded, and any failure of the server (it does
not start, exits, breaks the protocol or does not answer in time) is a ServerError naming it.
"""
from __future__ import annotations

import asyncio
import atexit
import logging
import os
import re
import sys
import tempfile
import time
from typing import Any

import orjson

from agent_eval.suite.mcp_http import HttpWatch, call_key
from agent_eval.suite.mcp_spec import ENV_FILE_VAR, ServerSpec
from agent_eval.tracebacks import describe
from agent_eval.suite.mcp_stdio import LIVE_GROUPS, MAX_MESSAGE, Link, kill_group, stdio_transport

_CLOSE_GRACE_S = 5.0
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# Stray stdout lines per server label: [count, first line]; told once per command (`stray_warnings`).
_STRAY: dict[str, list[Any]] = {}


class ServerError(Exception):
    """The MCP server itself failed: infrastructure, never the agent's fault."""

    def __init__(self, *args: object) -> None:
        from agent_eval.redaction import redact_secrets

        # A server's error text may echo a key: redacted before it is stored or shown.
        super().__init__(*(redact_secrets(a) if isinstance(a, str) else a for a in args))


class ProtocolError(ServerError):
    """The server answered a request with a JSON-RPC error: it is alive, the request failed."""


# The mcp client logs a server's bad answers (with tracebacks) besides failing the request; agent-eval
# reports each failure once, as a ServerError naming the server.
logging.getLogger("mcp").setLevel(logging.CRITICAL)


def kill_live_servers() -> None:
    """SIGKILL every stdio server process group still alive (a hard exit: nothing else will run)."""
    for group in list(LIVE_GROUPS):
        kill_group(group)


def stray_warnings() -> list[str]:
    """One warning per server that wrote lines on stdout that are not JSON-RPC, with the count and the
    first line (inert: control characters escaped); each is told once."""
    lines = []
    for label, (count, first) in sorted(_STRAY.items()):
        shown = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", first or "")[:200]
        lines.append(f"warning: MCP server {label} wrote {count} line{'s' if count != 1 else ''} on stdout "
                     f"that {'are' if count != 1 else 'is'} not JSON-RPC (ignored); the first: {shown}")
    _STRAY.clear()
    return lines


def _tell_stray_at_exit() -> None:
    for line in stray_warnings():
        print(line, file=sys.stderr, flush=True)


atexit.register(_tell_stray_at_exit)
atexit.register(kill_live_servers)


class Connection:
    """One MCP session with `spec`'s server; `start` it, make requests, then `close` it."""

    def __init__(self, spec: ServerSpec, env_blob: bytes | None = None) -> None:
        self.spec = spec
        self.timeout = spec.timeout
        self._env_blob = env_blob
        self._env_path: str | None = None
        self.link = Link()
        self._session: Any = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._ended = asyncio.Event()
        self._failure: BaseException | None = None
        self._owner: asyncio.Task[Any] | None = None
        self._begun = 0.0
        self.http = HttpWatch(spec.label)  # what the HTTP client saw that the mcp client drops
        self.fault: str | None = None  # set once the server has failed: no request is sent to it again

    # ------------------------------------------------------------------ lifecycle

    def begin(self) -> None:
        """Start the server in the background; `start` waits for it."""
        if self._owner is None:
            self._begun = time.monotonic()
            self._owner = asyncio.get_running_loop().create_task(self._own(), name=f"mcp {self.spec.label}")

    async def start(self) -> None:
        """Start the server and complete the MCP handshake within the entry's start_timeout (counted from
        `begin`); ServerError when it cannot."""
        self.begin()
        waiter = asyncio.ensure_future(self._ready.wait())
        limit = self.spec.start_timeout
        try:
            await asyncio.wait_for(asyncio.shield(waiter), max(0.0, limit - (time.monotonic() - self._begun)))
        except TimeoutError:
            raise self._fail(f"did not start within start_timeout {limit:g}s{self._stderr_tail()}") from None
        finally:
            waiter.cancel()
        if self._session is None:
            raise self._fail(f"failed to start: {self._why()}{self._stderr_tail()}")

    async def _own(self) -> None:
        from contextlib import AsyncExitStack

        from mcp import ClientSession

        try:
            async with AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(*streams))
                await session.initialize()
                self._session = session
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # boundary: the top level of the task that owns the session, which no one
            # awaits: any end of the session is the server's failure, handed to the runs through _failure
            self._failure = exc
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self._session = None
            if self.link.pid is not None:
                kill_group(self.link.pid)
            if self.link.stray:
                seen = _STRAY.setdefault(self.spec.label, [0, self.link.first_stray])
                seen[0] += self.link.stray
                self.link.stray = 0
            self._ready.set()
            self._ended.set()
            self._remove_env_file()

    def _transport(self) -> Any:
        spec = self.spec
        if spec.url is not None:
            return self.http.transport(spec.url, spec.headers)
        env = {**os.environ, **spec.env}
        if self._env_blob is not None:
            fd, self._env_path = tempfile.mkstemp(prefix="agent-eval-env-", suffix=".json")
            with os.fdopen(fd, "wb") as f:
                f.write(self._env_blob)
            env[ENV_FILE_VAR] = self._env_path
        else:
            env.pop(ENV_FILE_VAR, None)
        program, args = spec.executable()
        return stdio_transport([program, *args], env, str(spec.cwd), self.link)

    async def close(self) -> None:
        """End the session and stop the server; bounded, and a server that lingers is killed."""
        self._stop.set()
        if self.fault is not None:
            self.kill()  # a server that failed may not stop when asked; nothing of it is needed anymore
        if self._owner is not None and not self._ended.is_set():
            try:
                await asyncio.wait_for(asyncio.shield(self._ended.wait()), _CLOSE_GRACE_S)
            except TimeoutError:
                pass
        self.kill()

    def kill(self) -> None:
        """SIGKILL the server's process group now, if it is still alive (synchronous)."""
        if self.link.pid is not None:
            kill_group(self.link.pid)
        self._remove_env_file()

    def _remove_env_file(self) -> None:
        if self._env_path is not None:
            try:
                os.unlink(self._env_path)
            except OSError:
                pass
            self._env_path = None

    # ------------------------------------------------------------------ requests

    async def _request(self, what: str, make: Any, key: bytes | None = None) -> Any:
        """Run one request in the caller's task, bounded by the entry's timeout.

        No task of its own: a shared server's call then costs the round trip and little more. When the
        server exits, the SDK fails the requests in flight ("Connection closed").
        """
        if self.fault is not None:
            raise ServerError(self.fault)
        session = self._session
        if session is None:
            raise self._fail(f"has exited{self._stderr_tail()}")
        try:
            async with asyncio.timeout(self.timeout):  # a timer handle; anyio.fail_after costs 3x as much per call
                return await make(session)
        except Exception as exc:  # noqa: BLE001 - whatever the transport raises is the server's failure
            if (problem := self.http.size_problem(key, what)) is not None:
                raise ServerError(problem) from None
            if self.link.fault is not None:
                raise self._fail(f"{self.link.fault} during {what}") from None
            if isinstance(exc, TimeoutError):
                if self._ended.is_set():
                    raise self._fail(f"exited during {what}{self._stderr_tail()}") from None
                raise self._fail(f"did not answer {what} within timeout {self.timeout:g}s") from None
            if _is_protocol_error(exc):  # the server answered with a JSON-RPC error: it is alive
                raise ProtocolError(f"MCP server {self.spec.label}: {what} failed: {_describe(exc)}") from None
            if _is_closed(exc) or self._ended.is_set():
                raise self._fail(f"exited during {what}{self._stderr_tail()}") from None
            raise self._fail(f"failed during {what}: {_describe(exc)}{self._stderr_tail()}") from None

    async def list_tools(self) -> list[Any]:
        """Every tool of tools/list, following pagination."""
        tools: list[Any] = []
        cursor = None
        for _ in range(1000):
            if cursor is None:
                page = await self._request("tools/list", lambda s: s.list_tools(), b"method:tools/list")
            else:
                from mcp.types import PaginatedRequestParams

                params = PaginatedRequestParams(cursor=cursor)
                page = await self._request("tools/list", lambda s, p=params: s.list_tools(params=p),
                                           b"method:tools/list")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call_tool(self, tool: str, args: dict[str, Any]) -> tuple[str | None, str | None]:
        """tools/call: (observation, None), or (None, error) when the result has isError.

        An HTTP answer of 401, 403, 404 or 5xx is a ServerError naming the status: an expired token or
        a broken server is not a tool error for the agent to see.
        """
        key = call_key(tool, args) if self.spec.url is not None else None
        try:
            result = await self._request(f"tools/call {tool}", lambda s: s.call_tool(tool, args), key)
        except ProtocolError as exc:  # e.g. invalid params: the call failed, as a tool error does
            self._check_refusal(key, tool)
            return None, f"MCPError: {str(exc).split(' failed: ', 1)[-1]}"
        self._check_refusal(key, tool)
        text = observation(result)
        return (None, text or "the tool reported an error") if result.is_error else (text, None)

    def _check_refusal(self, key: bytes | None, tool: str) -> None:
        if (problem := self.http.refusal(key, tool)) is not None:
            raise ServerError(problem)

    async def read_json(self, uri: str) -> Any:
        """resources/read of `uri`, its text parsed as JSON; ServerError when it is not JSON, is over
        64 MiB or is nested past MAX_DEPTH levels."""
        from agent_eval.suite.fields import MAX_DEPTH, is_too_deep

        result = await self._request(f"resources/read {uri}", lambda s: s.read_resource(uri),
                                     b"method:resources/read")
        parts = [getattr(c, "text", None) for c in result.contents]
        text = next((p for p in parts if p is not None), None)
        where = f"MCP server {self.spec.label}: the state resource {uri}"
        if text is None:
            raise ServerError(f"{where} has no text content")
        if len(text) > MAX_MESSAGE // 4 and len(text.encode("utf-8", "replace")) > MAX_MESSAGE:
            raise ServerError(f"{where} is over the {MAX_MESSAGE // 2**20} MiB limit")
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            if "recursion" in str(exc).lower():
                raise ServerError(f"{where} is nested past the depth limit of {MAX_DEPTH} levels") from None
            raise ServerError(f"{where} is not JSON ({exc})") from None
        if isinstance(value, (dict, list)) and is_too_deep(value):
            raise ServerError(f"{where} is nested past the depth limit of {MAX_DEPTH} levels")
        return value

    # ------------------------------------------------------------------ failure details

    def _fail(self, what: str) -> ServerError:
        self.fault = f"MCP server {self.spec.label} {what}"
        return ServerError(self.fault)

    def _stderr_tail(self) -> str:
        tail = self.link.stderr_tail()
        return f"; its stderr ends with: {' | '.join(tail)[-300:]}" if tail else ""

    def _why(self) -> str:
        if self.link.fault is not None:
            return self.link.fault
        return _describe(self._failure)


def observation(result: Any) -> str:
    """The text parts joined by newlines; else the structured content as compact JSON; others as markers."""
    texts, others = [], []
    for part in result.content or ():
        kind = getattr(part, "type", None)
        if kind == "text":
            texts.append(part.text)
        else:
            others.append(_marker(part, kind))
    if texts:
        return "\n".join(texts + others)
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        return orjson.dumps(structured, option=orjson.OPT_NON_STR_KEYS).decode()
    return "\n".join(others)


def _marker(part: Any, kind: str | None) -> str:
    """`<image/png, 1234 bytes>` for a binary part; a resource part shows its URI's type and size."""
    resource = getattr(part, "resource", None)
    if resource is not None:
        data = getattr(resource, "text", None) or getattr(resource, "blob", None) or ""
        mime = getattr(resource, "mime_type", None) or "resource"
        return f"<{mime}, {_size(data, getattr(resource, 'blob', None) is not None)} bytes>"
    mime = getattr(part, "mime_type", None) or kind or "content"
    data = getattr(part, "data", None)
    if data is None:
        uri = getattr(part, "uri", None)
        return f"<{mime}{', ' + str(uri) if uri else ''}>"
    return f"<{mime}, {_size(data, True)} bytes>"


def _size(data: str, is_base64: bool) -> int:
    if not is_base64:
        return len(data.encode("utf-8", "replace"))
    padding = data.count("=", max(0, len(data) - 2))
    return max(0, len(data) * 3 // 4 - padding)


def _is_closed(exc: BaseException) -> bool:
    return "connection closed" in str(exc).lower() or isinstance(exc, (EOFError, ConnectionError))


def _is_protocol_error(exc: BaseException) -> bool:
    from mcp import MCPError

    return isinstance(exc, MCPError) and not _is_closed(exc)


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "the session ended"
    group = getattr(exc, "exceptions", None)  # the SDK's task groups wrap the cause
    if group:
        inner = [e for e in group if not isinstance(e, asyncio.CancelledError)]
        if inner:
            return _describe(inner[0])
    return describe(exc)
