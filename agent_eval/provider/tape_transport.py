"""The record/replay transport: every request of agent-eval's HTTP clients passes it (`run --record/--replay`).

While a run's `RunTape` is current (provider/tape.py), the transport:
- records: each answered exchange (not an attempt that will be retried: 408, 409, 429, 5xx) becomes
  a line of the run's cassette, written when the run ends, secrets removed; a request abandoned at
  --timeout becomes a line with the status `client_closed` and the time it had waited;
- replays: a request whose canonical form matches a recorded one (the n-th such request, the n-th
  answer) is answered from the cassette with no network, through the same 64 MiB cap as a live answer;
  a stream as a stream. Its recorded latency is credited to the run (reported, not waited for; it
  counts against --timeout). A request the recording abandoned is credited its time and then held
  until --timeout ends the run, as it did live. A miss either answers with a body that fails to read
  (`ReplayMiss`, so the run ends in `error`, never retried) or, with `--replay-miss live`, goes to the
  provider and is appended to the cassette.
"""
from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import orjson

from agent_eval.limits import MAX_MESSAGE_BYTES
from agent_eval.provider import cassette
from agent_eval.provider.bounded import BodyTooLarge
from agent_eval.provider.cassette import CLIENT_CLOSED, Exchange
from agent_eval.provider.tape import ReplayMiss, RunTape, current, current_role, note_unsent

RETRIED = frozenset({408, 409, 429})
HOLD_GRACE_S = 1.0  # a request the recording abandoned is held this long past --timeout at most


class TapeTransport(httpx2.AsyncBaseTransport):
    """Wraps a client's transport; passes everything through unless a run's tape is current (the run's
    task says which command's tape: two commands in one process never see each other's)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, base_path: str) -> None:
        self._inner, self._base = inner, base_path.rstrip("/")

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        tape = current()
        if tape is None or request.method != "POST":
            return await self._inner.handle_async_request(request)
        try:
            raw = request.content
        except httpx2.RequestNotRead:
            return await self._inner.handle_async_request(request)
        path = request.url.path
        path = path[len(self._base):] if self._base and path.startswith(self._base) else path
        role = current_role()
        try:
            body = cassette.scrub_request(orjson.loads(raw)) if raw else None
        except orjson.JSONDecodeError:
            body = cassette.scrub(raw.decode("utf-8", "replace"))
        tape.requests += 1
        if role == "agent":
            tape.agent_requests += 1
        if tape.unreadable is not None:
            note_unsent()
            return _failing(tape.unreadable, request)
        mode, counts = tape.tape, tape.tape.counts
        if mode.replay:
            hit = tape.take(role, path, body)
            if hit is not None:
                note_unsent()
                counts.hits += 1
                if role == "agent":
                    tape.credit(hit.latency_s or 0.0)
                if hit.status == CLIENT_CLOSED:
                    return await _held(tape, hit, request)
                return _replayed(hit, request)
            if not mode.live_on_miss:
                note_unsent()
                counts.misses += 1
                message = tape.describe_miss(role, path, body, tape.requests)
                tape.miss = tape.miss or message
                return _failing(message, request)
        live = mode.replay
        started, key = time.perf_counter(), object()

        def closed() -> None:  # --timeout abandoned the request: recorded as such, with its time
            if tape.in_flight.pop(key, None) is not None:
                tape.add(role, path, body, CLIENT_CLOSED, None, False, time.perf_counter() - started, None, live)

        tape.in_flight[key] = closed
        response = None
        try:
            response = await self._inner.handle_async_request(request)
        except asyncio.CancelledError:
            closed()
            raise
        finally:
            if response is None:  # failed: the retry loop's to tell
                tape.in_flight.pop(key, None)
        if response.status_code in RETRIED or response.status_code >= 500:
            tape.in_flight.pop(key, None)
            return response  # an attempt that agent-eval's loop retries: the exchange is the answered one
        stream = response.headers.get("content-type", "").startswith("text/event-stream")

        def done(data: bytes) -> None:
            if tape.in_flight.pop(key, None) is None:
                return  # recorded as abandoned already
            answer = _events(data) if stream else _decoded(data)
            answer = cassette.scrub(answer)
            tape.add(role, path, body, response.status_code, answer, stream, time.perf_counter() - started,
                     _usage(answer, stream), live)
            if live:
                counts.misses += 1
                counts.live += 1
                tape.live += 1

        return httpx2.Response(response.status_code, headers=response.headers.raw, request=request,
                               stream=_Tee(response.stream, done, closed), extensions=response.extensions)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Tee(httpx2.AsyncByteStream):
    """Passes an answer's body on, and hands the whole of it to `done` once it has been read to the end
    (or calls `closed` when the read is cancelled)."""

    def __init__(self, inner: Any, done: Callable[[bytes], None], closed: Callable[[], None]) -> None:
        self._inner, self._done, self._closed = inner, done, closed

    async def __aiter__(self) -> AsyncIterator[bytes]:
        parts = []
        try:
            async for chunk in self._inner:
                parts.append(chunk)
                yield chunk
        except asyncio.CancelledError:
            self._closed()
            raise
        self._done(b"".join(parts))

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Raising(httpx2.AsyncByteStream):
    def __init__(self, error: Exception) -> None:
        self._error = error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        raise self._error
        yield b""  # pragma: no cover  (makes this an async generator)


def _failing(message: str, request: httpx2.Request) -> httpx2.Response:
    """An answer whose body fails to read with `ReplayMiss(message)`: the run's error, never retried."""
    return httpx2.Response(200, headers=[("content-type", "application/json")], stream=_Raising(ReplayMiss(message)),
                           request=request)


async def _held(tape: RunTape, hit: Exchange, request: httpx2.Request) -> httpx2.Response:
    """A request the recording abandoned at --timeout: held until --timeout ends the run again (its time is
    credited already); without a --timeout that could, the run's error."""
    limit = tape.tape.timeout
    message = (f"the recording abandoned this request at its --timeout after {hit.latency_s or 0:g}s "
               f"({tape.path} line {hit.seq})")
    if limit is not None:
        await asyncio.sleep(limit + HOLD_GRACE_S)
        message += f", and --timeout {limit:g}s did not end the run here"
    else:
        message += "; replay with --timeout as recorded"
    tape.miss = tape.miss or message
    return _failing(message, request)


def _replayed(hit: Exchange, request: httpx2.Request) -> httpx2.Response:
    if hit.stream and isinstance(hit.response, list):
        body, kind = _sse(hit.response, hit.path), "text/event-stream"
    elif isinstance(hit.response, str):
        body, kind = hit.response.encode(), "text/plain"
    else:
        body, kind = orjson.dumps(hit.response), "application/json"
    assert isinstance(hit.status, int)
    if len(body) > MAX_MESSAGE_BYTES:  # the cap a live answer has
        return httpx2.Response(hit.status, headers=[("content-type", kind)], stream=_Raising(BodyTooLarge()),
                               request=request)
    return httpx2.Response(hit.status, headers=[("content-type", kind)], content=body, request=request)


def _decoded(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return data.decode("utf-8", "replace")


_BLANK = re.compile(rb"\r?\n\r?\n")


def _events(data: bytes) -> list[Any]:
    """The data of each server-sent event: parsed JSON, or the text (`[DONE]`)."""
    events: list[Any] = []
    for block in _BLANK.split(data):
        lines = [line[5:].lstrip(b" ") for line in block.splitlines() if line.startswith(b"data:")]
        if lines:
            events.append(_decoded(b"\n".join(lines)))
    return events


def _sse(events: list[Any], path: str) -> bytes:
    out = bytearray()
    for event in events:
        if isinstance(event, str):
            out += b"data: " + event.encode() + b"\n\n"
            continue
        if path.endswith("/responses") and isinstance(event, dict) and isinstance(event.get("type"), str):
            out += b"event: " + event["type"].encode() + b"\n"
        out += b"data: " + orjson.dumps(event) + b"\n\n"
    return bytes(out)


def _usage(answer: Any, stream: bool) -> Any:
    """The usage the answer reports: a body's `usage`, or a stream's last (a Responses stream's in its
    completed response)."""
    items = reversed(answer) if stream and isinstance(answer, list) else [answer]
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("usage"), dict):
            return item["usage"]
        inner = item.get("response")
        if isinstance(inner, dict) and isinstance(inner.get("usage"), dict):
            return inner["usage"]
    return None
