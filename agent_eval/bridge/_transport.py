"""The HTTP transports of the bridge's model clients: one per event loop (async) and one per process (sync),
shared by every run's client.

Each run gets a model client of its own (its own token), but building an SDK client builds an HTTP
client too, and that loads the system's certificates: tens of milliseconds, on every run, for a client
that only ever speaks plain HTTP to 127.0.0.1. The transports are built once and handed to every
client instead. A framework that closes its client closes the transport with it; the next run then
builds a new one.
"""
from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import AsyncIterator
from typing import Any

_ASYNC: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
_SYNC: list[Any] = []
_LOCK = threading.Lock()
_CLOSERS: list[Any] = []  # parked generators: the loop closes each as it shuts down (see llm.py)


async def _close_when_the_loop_ends(client: Any) -> AsyncIterator[None]:
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.close_shared(), 2.0)


async def _park(closer: AsyncIterator[None]) -> None:
    await closer.__anext__()


def async_http_client() -> Any:
    """The running loop's shared async transport for the SDK (None outside a running loop: the SDK
    then builds its own)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    client = _ASYNC.get(loop)
    if client is None or client.is_closed:
        client = _ASYNC[loop] = _new_async_client()
        closer = _close_when_the_loop_ends(client)
        loop.create_task(_park(closer))  # parked at its yield until the loop shuts down
        _CLOSERS.append(closer)
    return client


def _new_async_client() -> Any:
    """The SDK's aiohttp transport (about half the CPU per request of its default), else its default; a
    run's client closing it leaves it open."""
    try:
        from openai import DefaultAioHttpClient as base
        client = _shared_class(base)()
    except (ImportError, RuntimeError):  # the SDK without its aiohttp extra
        from openai import DefaultAsyncHttpxClient as base
        client = _shared_class(base)()
    return client


def _shared_class(base: type) -> type:
    class Shared(base):
        async def aclose(self) -> None:  # a run's SDK client closing: the other runs still use it
            return None

        async def close_shared(self) -> None:
            await super().aclose()

    return Shared


def sync_http_client() -> Any:
    """The process's shared sync transport (a framework that builds a sync client beside its async one)."""
    with _LOCK:
        if not _SYNC or _SYNC[0].is_closed:
            from openai import DefaultHttpxClient

            _SYNC[:] = [DefaultHttpxClient()]
        return _SYNC[0]
