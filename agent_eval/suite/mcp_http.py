"""Streamable-HTTP MCP: the HTTP client agent-eval gives the `mcp` transport, and what it sees there.

The `mcp` client turns an HTTP refusal (401, 403, 404, 5xx) and an answer it could not read into JSON-RPC
errors, which would reach the agent as tool errors. Its HTTP client is ours: each answer to a POST is cut
at 64 MiB after decompression (provider/bounded.py), and a response hook notes each refusal, so that
the caller can tell the server's fault from a tool error.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from agent_eval.suite.mcp_stdio import MAX_MESSAGE

_REFUSALS = (401, 403, 404)  # with every 5xx: an HTTP status that is the server's fault, not a tool error


class HttpWatch:
    """One HTTP session's refusals and cut answers, keyed by request (`request_key`)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._refused: dict[bytes, list[int]] = {}  # a tools/call's (name, args) -> HTTP statuses it got
        self._oversized: list[bytes] = []  # the requests whose answer passed 64 MiB

    def transport(self, url: str, headers: Mapping[str, str]) -> Any:
        """The `mcp` streamable-HTTP transport over a capped client with the refusal hook."""
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

        from agent_eval.provider.bounded import capped_client_class

        # The GET stream of server notifications lives as long as the session: each of its events is
        # bounded instead (a POST's answer, one request's, is cut first).
        capped = capped_client_class(httpx2.AsyncClient, MAX_MESSAGE, self._on_too_large, frozenset({"GET"}))
        client = capped(headers=dict(headers) or None,
                        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT))
        client.event_hooks["response"].append(self._on_response)
        return streamable_http_client(url, http_client=client, max_sse_event_size=MAX_MESSAGE + 2**20)

    def _on_too_large(self, request: Any) -> None:
        key = request_key(request)
        if key is not None:
            self._oversized.append(key)

    async def _on_response(self, response: Any) -> None:
        status = response.status_code
        if status not in _REFUSALS and status < 500:
            return
        key = request_key(response.request)
        if key is not None and not key.startswith(b"method:"):
            self._refused.setdefault(key, []).append(status)

    def size_problem(self, key: bytes | None, what: str) -> str | None:
        """The message when this request's answer was cut at 64 MiB (the session itself is fine)."""
        if key is None or key not in self._oversized:
            return None
        self._oversized.remove(key)
        return f"MCP server {self.label} sent a message over the {MAX_MESSAGE // 2**20} MiB limit during {what}"

    def refusal(self, key: bytes | None, tool: str) -> str | None:
        """The message when this tools/call got an HTTP refusal."""
        statuses = self._refused.get(key) if key is not None else None
        if key is None or not statuses:
            return None
        status = statuses.pop(0)
        if not statuses:
            del self._refused[key]
        return f"MCP server {self.label} answered HTTP {status} to tools/call {tool}"


def request_key(request: Any) -> bytes | None:
    """An HTTP request's JSON-RPC message as the caller knows it: a tools/call's `call_key`, else
    b"method:" and its method; None when the body is no JSON-RPC request."""
    try:
        body = orjson.loads(request.content)
    except (orjson.JSONDecodeError, TypeError, AttributeError):
        return None
    if not isinstance(body, dict) or not isinstance(body.get("method"), str):
        return None
    params = body.get("params")
    if body["method"] == "tools/call" and isinstance(params, dict):
        return call_key(params.get("name"), params.get("arguments"))
    return b"method:" + body["method"].encode()


def call_key(tool: Any, args: Any) -> bytes:
    """A tools/call as the HTTP hook and the caller both see it: its name and arguments, keys sorted."""
    try:
        return orjson.dumps([tool, args], option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return repr((tool, args)).encode()
