"""The HTTP client under agent-eval's SDK clients (`agent_eval.llm`), and its transports.

The stack, outermost first: the record/replay transport (provider/tape_transport.py, idle unless a run's
tape is current), the 64 MiB cap on an answer after decompression (provider/bounded.py), then `ByScheme`,
which sends each request to the transport of its URL's scheme:
- **The transport** is the SDK's aiohttp one wherever it is available (its documented choice for
  concurrency: about half the client CPU of httpx's per request, bench/README.md), at any concurrency:
  the SDK imports aiohttp when it is imported, so httpx's costs a one-case run more (httpcore2 to import,
  a slower first request), never less. A URL with credentials in it keeps httpx's, which sends them as
  Basic auth (aiohttp refuses them beside the API key).
- **TLS only where it is used.** A verified SSL context (the CA certificates read from disk, tens of
  milliseconds, and httpcore2 imported) is built when the client of an https:// URL is made, and for
  an http:// URL only when one of its requests goes to an https:// URL (a redirect): its http://
  requests go through a transport whose context trusts no certificate and reads no file. Verification
  is never loosened: an https:// request always goes through the verified context.
The environment's proxies (HTTP_PROXY and the rest) get the same stack, as mounts, with TLS, each built at
its first request: a URL the proxies do not serve (NO_PROXY) builds none of them.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx2

from agent_eval.provider.bounded import CappedTransport
from agent_eval.provider.tape_transport import TapeTransport

MakeTransport = Callable[..., httpx2.AsyncBaseTransport]  # make(tls: bool, **proxy)


class ByScheme(httpx2.AsyncBaseTransport):
    """Sends http:// requests to one transport and every other to a TLS one, each built by `make(tls)` when
    first needed (the one of the client's own URL when the client is made, so that no run pays for it)."""

    def __init__(self, make: MakeTransport, base_url: str | None) -> None:
        self._make = make
        self.plain: httpx2.AsyncBaseTransport | None = None
        self.tls: httpx2.AsyncBaseTransport | None = None  # None until an https:// request needs it
        if urlsplit(base_url or "https:").scheme == "http":
            self.plain = make(False)
        else:
            self.tls = make(True)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.scheme == "http":
            if self.plain is None:
                self.plain = self._make(False)
            return await self.plain.handle_async_request(request)
        if self.tls is None:
            self.tls = self._make(True)
        return await self.tls.handle_async_request(request)

    async def aclose(self) -> None:
        for side in (self.plain, self.tls):
            if side is not None:
                await side.aclose()


class Lazy(httpx2.AsyncBaseTransport):
    """The transport `make()` builds at the first request sent through it (a proxy's mount)."""

    def __init__(self, make: Callable[[], httpx2.AsyncBaseTransport]) -> None:
        self._make = make
        self.inner: httpx2.AsyncBaseTransport | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.inner is None:
            self.inner = self._make()
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()


def http_client(base_url: str | None) -> Any:
    """The SDK's HTTP client for `base_url`, built with the stack above."""
    from httpx2._utils import get_environment_proxies
    from openai import DefaultAsyncHttpxClient
    from openai._constants import DEFAULT_CONNECTION_LIMITS

    make = _httpx_transport
    if not (base_url and "@" in urlsplit(base_url).netloc):
        with contextlib.suppress(ImportError):  # the SDK without its aiohttp extra
            make = _aiohttp_transport()
    base_path = urlsplit(base_url or "https://api.openai.com/v1").path

    def stack(inner: httpx2.AsyncBaseTransport) -> TapeTransport:
        return TapeTransport(CappedTransport(inner), base_path)

    def proxied(url: str) -> Lazy:
        proxy = httpx2.Proxy(url=url)  # read now: a malformed one is refused with the client
        return Lazy(lambda: make(True, limits=DEFAULT_CONNECTION_LIMITS, proxy=proxy))

    direct = ByScheme(lambda tls: make(tls, limits=DEFAULT_CONNECTION_LIMITS), base_url)
    mounts = {pattern: None if url is None else stack(proxied(url))
              for pattern, url in get_environment_proxies().items()}
    return DefaultAsyncHttpxClient(transport=stack(direct), mounts=mounts)


def _refusing() -> Any:
    """An SSL context that verifies and trusts no certificate: the http:// side's, which makes no TLS
    connection (were one ever asked of it, it would fail, never pass unverified). No file is read."""
    import ssl

    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED and check_hostname, no CA loaded


def _httpx_transport(tls: bool, **options: Any) -> httpx2.AsyncBaseTransport:
    return httpx2.AsyncHTTPTransport(**options) if tls else httpx2.AsyncHTTPTransport(verify=_refusing(), **options)


def _aiohttp_transport() -> MakeTransport:
    """make(tls, **options) for the SDK's aiohttp transport (ImportError without the SDK's aiohttp extra)."""
    from openai._vendor.httpx_aiohttp import AiohttpTransport

    class Plain(AiohttpTransport):
        """The SDK's aiohttp transport for http:// requests. Its parent's __init__ builds a verified SSL
        context (and imports httpcore2 to) whatever the URL; this one sets the same attributes without it."""

        def __init__(self, limits: httpx2.Limits) -> None:  # not the parent's: see the docstring
            self.ssl_context = _refusing()
            self.proxy, self.limits, self.retries, self.socket_options = None, limits, 0, []
            self.uds = self.local_address = self.client = None

    def make(tls: bool, **options: Any) -> httpx2.AsyncBaseTransport:
        return AiohttpTransport(**options) if tls else Plain(**options)

    return make
