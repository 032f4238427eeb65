"""HTTP answers read with a size limit: at most MAX_MESSAGE_BYTES bytes of one body after decompression.

The SDK's client and the `mcp` HTTP client read a body whole, and httpx2 inflates gzip, deflate and
the rest as it reads, so a 1 MiB gzip bomb becomes gigabytes in memory. The clients built here hand
them a response whose stream is already decoded (by httpx2's own decoders, in pieces of 1 MiB) and
that ends with `BodyTooLarge` once it passes the limit: nothing past it is read or kept.
"""
from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2

from agent_eval.limits import MAX_MESSAGE_BYTES

_DECODED = frozenset({b"content-encoding", b"content-length"})  # no longer true of the decoded stream


class BodyTooLarge(httpx2.StreamError):
    """A body passed the limit after decompression. A StreamError, not a RequestError: the SDK does not
    make it a connection error (which agent-eval's loop would retry), and `mcp` answers its request."""

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        super().__init__(f"the answer is over the {limit // 2**20} MiB limit after decompression; "
                         "read no further")


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, decoded: httpx2.Response, limit: int,
                 on_over: Callable[[httpx2.Request], None] | None) -> None:
        self._decoded, self._limit, self._on_over = decoded, limit, on_over

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        async for chunk in self._decoded.aiter_bytes():
            total += len(chunk)
            if total > self._limit:
                if self._on_over is not None:
                    self._on_over(self._decoded.request)
                raise BodyTooLarge(self._limit)
            yield chunk

    async def aclose(self) -> None:
        await self._decoded.aclose()


class CappedTransport(httpx2.AsyncBaseTransport):
    """Wraps a transport: every answer's body is decoded here and cut at `limit` bytes; `on_over` is
    called with the request when one is (before BodyTooLarge is raised). Answers to requests of an
    `uncapped` method pass as they are."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int = MAX_MESSAGE_BYTES,
                 on_over: Callable[[httpx2.Request], None] | None = None,
                 uncapped: frozenset[str] = frozenset()) -> None:
        self._inner, self._limit, self._on_over, self._uncapped = inner, limit, on_over, uncapped

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if request.method in self._uncapped:
            return response
        decoded = httpx2.Response(response.status_code, headers=response.headers, stream=response.stream,
                                  request=request)
        headers = [(k, v) for k, v in response.headers.raw if k.lower() not in _DECODED]
        return httpx2.Response(response.status_code, headers=headers, request=request,
                               stream=_CappedStream(decoded, self._limit, self._on_over),
                               extensions=response.extensions)

    async def aclose(self) -> None:
        await self._inner.aclose()


def capped_client_class(base: type[httpx2.AsyncClient], limit: int = MAX_MESSAGE_BYTES,
                        on_over: Callable[[httpx2.Request], None] | None = None,
                        uncapped: frozenset[str] = frozenset()) -> type[httpx2.AsyncClient]:
    """A subclass of the client class `base` whose transports (the direct one and any proxy's) are capped."""

    class Capped(base):  # type: ignore[valid-type,misc]
        def _init_transport(self, *args: Any, **kwargs: Any) -> Any:
            return CappedTransport(super()._init_transport(*args, **kwargs), limit, on_over, uncapped)

        def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> Any:
            return CappedTransport(super()._init_proxy_transport(*args, **kwargs), limit, on_over, uncapped)

    return Capped
