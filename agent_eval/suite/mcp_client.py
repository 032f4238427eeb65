"""One live MCP session (stdio or streamable HTTP) over the official `mcp` client, with bounded requests.

The session lives in a task of its own, because the SDK's transports are anyio task groups that must
be entered and left by one task: a connection can then be opened by one run and closed by another, and
its requests can come from any task. Every request is bounded, and any failure of the server (it does
not start, exits, breaks the protocol or does not answer in time) is a ServerError naming it.
"""
from __future__ import annotations

import asyncio
import contextvars
import os
import signal
import tempfile
from typing import Any

import orjson

from agent_eval.suite.mcp_spec import DEFAULT_TIMEOUT_S, ENV_FILE_VAR, ServerSpec

# The process groups of every stdio server alive in this process, so a hard exit can kill them all.
LIVE_GROUPS: set[int] = set()
_SPAWNED: contextvars.ContextVar[list | None] = contextvars.ContextVar("agent_eval_mcp_spawned", default=None)
_CLOSE_GRACE_S = 5.0
_timeout = getattr(asyncio, "timeout", None)


class ServerError(Exception):
    """The MCP server itself failed: infrastructure, never the agent's fault."""

    def __init__(self, *args: object) -> None:
        from agent_eval.redaction import redact_secrets

        # A server's error text may echo a key: redacted before it is stored or shown.
        super().__init__(*(redact_secrets(a) if isinstance(a, str) else a for a in args))


class ProtocolError(ServerError):
    """The server answered a request with a JSON-RPC error: it is alive, the request failed."""


def kill_live_servers() -> None:
    """SIGKILL every stdio server process group still alive (a hard exit: nothing else will run)."""
    for group in list(LIVE_GROUPS):
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
        LIVE_GROUPS.discard(group)


def _track_spawns() -> None:
    """Learn each stdio server's process id as the SDK spawns it (the SDK does not expose it).

    The spawn helper is private to the SDK, so this is best effort: without it the SDK's own shutdown
    (close stdin, SIGTERM, SIGKILL of the server's process group) still runs, only a hard exit cannot kill.
    """
    import mcp.client.stdio as stdio

    spawn = getattr(stdio, "_create_platform_compatible_process", None)
    if spawn is None or getattr(spawn, "_agent_eval", False):
        return

    async def tracked(*args: Any, **kwargs: Any) -> Any:
        process = await spawn(*args, **kwargs)
        sink = _SPAWNED.get()
        if sink is not None:
            sink.append(process.pid)
            LIVE_GROUPS.add(process.pid)  # the SDK starts each server in a new session: its group id is its pid
        return process

    tracked._agent_eval = True  # type: ignore[attr-defined]
    stdio._create_platform_compatible_process = tracked
    import atexit

    atexit.register(kill_live_servers)


class Connection:
    """One MCP session with `spec`'s server; `start` it, make requests, then `close` it."""

    def __init__(self, spec: ServerSpec, timeout: float, env_blob: bytes | None = None) -> None:
        self.spec = spec
        self.timeout = timeout
        self._env_blob = env_blob
        self._env_path: str | None = None
        self._pids: list[int] = []
        self._session: Any = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._ended = asyncio.Event()
        self._failure: BaseException | None = None
        self._stderr: Any = None
        self._owner: asyncio.Task | None = None
        self.fault: str | None = None  # set once the server has failed: no request is sent to it again

    # ------------------------------------------------------------------ lifecycle

    def begin(self) -> None:
        """Start the server in the background; `start` waits for it."""
        if self._owner is None:
            self._owner = asyncio.get_running_loop().create_task(self._own(), name=f"mcp {self.spec.label}")

    async def start(self) -> None:
        """Start the server and complete the MCP handshake; ServerError when it cannot."""
        self.begin()
        waiter = asyncio.ensure_future(self._ready.wait())
        # A process start is not a request: a loaded machine may take seconds, so a short --timeout
        # does not bound it (the default does, so a server that never starts cannot hang the run).
        limit = max(self.timeout, DEFAULT_TIMEOUT_S)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), limit)
        except TimeoutError:
            raise self._fail(f"did not start within {limit:g}s") from None
        finally:
            waiter.cancel()
        if self._session is None:
            raise self._fail(f"failed to start: {_describe(self._failure)}{self._stderr_tail()}")

    async def _own(self) -> None:
        from contextlib import AsyncExitStack

        from mcp import ClientSession

        _SPAWNED.set(self._pids)
        try:
            async with AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(*streams))
                await session.initialize()
                self._session = session
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - any end of the session is the server's failure
            self._failure = exc
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self._session = None
            for pid in self._pids:
                LIVE_GROUPS.discard(pid)
            self._ready.set()
            self._ended.set()
            self._remove_env_file()

    def _transport(self) -> Any:
        spec = self.spec
        if spec.url is not None:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            client = create_mcp_http_client(headers=dict(spec.headers) or None)
            return streamable_http_client(spec.url, http_client=client)
        from mcp import StdioServerParameters, stdio_client

        _track_spawns()
        env = {**os.environ, **spec.env}
        if self._env_blob is not None:
            fd, self._env_path = tempfile.mkstemp(prefix="agent-eval-env-", suffix=".json")
            with os.fdopen(fd, "wb") as f:
                f.write(self._env_blob)
            env[ENV_FILE_VAR] = self._env_path
        else:
            env.pop(ENV_FILE_VAR, None)
        program, args = spec.executable()
        self._stderr = tempfile.TemporaryFile()
        params = StdioServerParameters(command=program, args=args, env=env, cwd=str(spec.cwd))
        return stdio_client(params, errlog=self._stderr)

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
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def kill(self) -> None:
        """SIGKILL the server's process group now, if it is still alive (synchronous)."""
        for pid in self._pids:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            LIVE_GROUPS.discard(pid)
        self._remove_env_file()

    def _remove_env_file(self) -> None:
        if self._env_path is not None:
            try:
                os.unlink(self._env_path)
            except OSError:
                pass
            self._env_path = None

    # ------------------------------------------------------------------ requests

    async def _request(self, what: str, make: Any) -> Any:
        """Run one request in the caller's task, bounded by the timeout.

        No task of its own: a shared server's call then costs the round trip and little more. When the
        server exits, the SDK fails the requests in flight ("Connection closed").
        """
        if self.fault is not None:
            raise ServerError(self.fault)
        session = self._session
        if session is None:
            raise self._fail(f"has exited{self._exit_detail()}")
        try:
            if _timeout is None:  # Python 3.10
                return await asyncio.wait_for(make(session), self.timeout)
            async with _timeout(self.timeout):  # a timer handle; anyio.fail_after costs 3x as much per call
                return await make(session)
        except TimeoutError:
            if self._ended.is_set():
                raise self._fail(f"exited during {what}{self._exit_detail()}") from None
            raise self._fail(f"did not answer {what} within {self.timeout:g}s") from None
        except Exception as exc:  # noqa: BLE001 - whatever the transport raises is the server's failure
            if _is_protocol_error(exc):  # the server answered with a JSON-RPC error: it is alive
                raise ProtocolError(f"MCP server {self.spec.label}: {what} failed: {_describe(exc)}") from None
            if _is_closed(exc) or self._ended.is_set():
                raise self._fail(f"exited during {what}{self._exit_detail()}") from None
            raise self._fail(f"failed during {what}: {_describe(exc)}{self._exit_detail()}") from None

    async def list_tools(self) -> list[Any]:
        """Every tool of tools/list, following pagination."""
        tools: list[Any] = []
        cursor = None
        for _ in range(1000):
            if cursor is None:
                page = await self._request("tools/list", lambda s: s.list_tools())
            else:
                from mcp.types import PaginatedRequestParams

                params = PaginatedRequestParams(cursor=cursor)
                page = await self._request("tools/list", lambda s, p=params: s.list_tools(params=p))
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call_tool(self, tool: str, args: dict) -> tuple[str | None, str | None]:
        """tools/call: (observation, None), or (None, error) when the result has isError."""
        try:
            result = await self._request(f"tools/call {tool}", lambda s: s.call_tool(tool, args))
        except ProtocolError as exc:  # e.g. invalid params: the call failed, as a tool error does
            return None, f"MCPError: {str(exc).split(' failed: ', 1)[-1]}"
        text = observation(result)
        return (None, text or "the tool reported an error") if result.is_error else (text, None)

    async def read_json(self, uri: str) -> Any:
        """resources/read of `uri`, its text parsed as JSON; ServerError when it is not JSON."""
        result = await self._request(f"resources/read {uri}", lambda s: s.read_resource(uri))
        parts = [getattr(c, "text", None) for c in result.contents]
        text = next((p for p in parts if p is not None), None)
        if text is None:
            raise ServerError(f"MCP server {self.spec.label}: the state resource {uri} has no text content")
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise ServerError(f"MCP server {self.spec.label}: the state resource {uri} is not JSON ({exc})") \
                from None

    # ------------------------------------------------------------------ failure details

    def _fail(self, what: str) -> ServerError:
        self.fault = f"MCP server {self.spec.label} {what}"
        return ServerError(self.fault)

    def _exit_detail(self) -> str:
        return self._stderr_tail()

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - 2000))
            tail = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends with: {' | '.join(tail[-3:])[-300:]}" if tail else ""


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
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
