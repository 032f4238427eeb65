"""task.mcp_url: the run's tools over streamable-HTTP MCP, on the recording endpoint's port.

One MCP server of the `mcp` package per endpoint (stateless, JSON answers), behind the endpoint's
aiohttp server through a small ASGI bridge; each request names its run by the token in its path, so a
call reaches that run's sandbox only. A tool error is a result with `isError: true`.
"""
from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from agent_eval.run.endpoint import Endpoint, RunLink

if TYPE_CHECKING:
    from agent_eval.run.agents.base import RunContext

# Each endpoint's MCP server, gone with its endpoint: a later loop's endpoint never gets an ended loop's server.
_SERVERS: weakref.WeakKeyDictionary[Endpoint, McpServer] = weakref.WeakKeyDictionary()


class McpServer:
    """The endpoint's MCP server: the session manager runs in a task of its own for the loop's life."""

    def __init__(self, links: dict[str, RunLink]) -> None:
        from mcp.server.lowlevel import Server
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        self.links = links
        app = Server("agent-eval", on_list_tools=self._list_tools, on_call_tool=self._call_tool)
        self.manager = StreamableHTTPSessionManager(app, stateless=True, json_response=True)
        self._ready = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._serve())

    async def _serve(self) -> None:
        async with self.manager.run():
            self._ready.set()
            await asyncio.Event().wait()  # until the loop shuts down and cancels this task

    def _link(self, ctx: Any) -> RunLink | None:
        request = getattr(ctx, "request", None)
        path = str(getattr(getattr(request, "url", None), "path", "") or "")
        parts = path.split("/")
        return self.links.get(parts[2]) if len(parts) > 2 else None

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        link = self._link(ctx)
        schemas = link.run.tool_schemas if link is not None and link.run is not None else []
        return types.ListToolsResult(tools=[
            types.Tool(name=s["function"]["name"], description=s["function"].get("description") or "",
                       input_schema=s["function"].get("parameters") or {"type": "object", "properties": {}})
            for s in schemas])

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        link = self._link(ctx)
        if link is None or link.run is None:
            return types.CallToolResult(content=[types.TextContent(type="text", text="Error: the run has ended")],
                                        is_error=True)
        meta = ctx.meta or {}
        call_id = meta.get("call_id") if isinstance(meta, dict) else None
        args = params.arguments if params.arguments is not None else {}
        from agent_eval.errors import ToolError

        try:
            output, error = await link.run.sandbox.acall(params.name, args,
                                                         call_id if isinstance(call_id, str) else None)
        except ToolError as exc:
            output, error = None, str(exc)
        text = output if error is None else f"Error: {error}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text or "")],
                                    is_error=error is not None)

    async def handle(self, request: Any) -> Any:
        """One aiohttp request, served by the MCP session manager as an ASGI app."""
        from aiohttp import web

        await self._ready.wait()
        body = await request.read()
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
                 "scheme": "http", "path": request.path, "raw_path": request.path.encode(),
                 "query_string": request.query_string.encode(), "root_path": "",
                 "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.items()],
                 "client": ("127.0.0.1", 0), "server": ("127.0.0.1", 0)}
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                await asyncio.Event().wait()  # no more body: wait for the disconnect that never comes
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        response: web.StreamResponse | None = None

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal response
            if message["type"] == "http.response.start":
                response = web.StreamResponse(status=message["status"], headers={
                    k.decode("latin-1"): v.decode("latin-1") for k, v in message.get("headers", [])})
                await response.prepare(request)
            elif message["type"] == "http.response.body" and response is not None and message.get("body"):
                await response.write(message["body"])

        await self.manager.handle_request(scope, receive, send)
        if response is None:
            return web.Response(status=500, text="the MCP server sent no answer")
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
        return response


async def attach_mcp(ctx: RunContext, link: RunLink) -> None:
    """Serve the run's tools at /r/<token>/mcp when the mcp package is installed (else mcp_url stays None)."""
    try:
        import mcp.server.lowlevel
        import mcp.server.streamable_http_manager  # noqa: F401
    except ImportError:
        return
    from agent_eval.run.endpoint import endpoint

    served = await endpoint()
    server = _SERVERS.get(served)
    if server is None:
        server = _SERVERS[served] = McpServer(served.links)
    link.run, link.mcp = ctx, server
    link.mcp_url = link.base_url[: -len("/v1")] + "/mcp"
