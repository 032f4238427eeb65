"""Record and replay at the HTTP transport of agent-eval's shared client (`run --record/--replay DIR`).

A command that records or replays makes one `Tape` (its folder, its miss rule, its counts) and hands
it to its player, which opens a `RunTape` per run. Every model request agent-eval sends (the built-in
agent's, the judge's, the simulator's, and each request a framework or `cmd:` agent makes through the
run's endpoint) passes through one transport, `TapeTransport`, which the clients of `agent_eval.llm`
are built with. While a run's `RunTape` is current (a context variable the player sets; the endpoint
sets its run's), the transport:
- records: each answered exchange (not an attempt that will be retried: 408, 409, 429, 5xx) becomes
  a line of the run's cassette, written when the run ends, secrets removed;
- replays: a request whose canonical form matches a recorded one (the n-th such request, the n-th
  answer) is answered from the cassette with no network; a stream as a stream. Its recorded latency
  is credited to the run (reported, not waited for). A miss either answers with a body that fails to
  read (`ReplayMiss`, so the run ends in `error`, never retried) or, with `--replay-miss live`, goes to
  the provider and is appended to the cassette.
"""
from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import orjson

from agent_eval.provider import cassette
from agent_eval.provider.cassette import Exchange

RETRIED = frozenset({408, 409, 429})
REPLAY_MISS = "replay miss"


@dataclass
class Counts:
    """summary.replay: requests answered from the cassettes, missed, sent live; runs that asked nothing."""

    hits: int = 0
    misses: int = 0
    live: int = 0
    no_request_runs: int = 0  # replayed runs that made no agent request through agent-eval

    def summary(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class Tape:
    """One command's recording or replaying (`run --record DIR`, `run --replay DIR`): the cassettes'
    folder, what a replay miss does, and the counts of `summary.replay`. The command makes it and hands
    it to the player, which opens each run's `RunTape` from it; nothing of it is process-wide."""

    folder: Path
    replay: bool
    live_on_miss: bool = False
    counts: Counts = field(default_factory=Counts)
    loaded: dict[tuple[str, int], list[Exchange]] = field(default_factory=dict)  # read before the run

    def open_run(self, case_id: str, trial: int) -> RunTape:
        """The tape of run (case_id, trial): under --replay its cassette's exchanges."""
        path = cassette.cassette_path(self.folder, case_id, trial)
        recorded: list[Exchange] = []
        if self.replay:
            found = self.loaded.pop((case_id, trial), None)
            recorded = found if found is not None else cassette.read_cassette(path)  # a worker reads its own
        return RunTape(self, case_id, trial, path, recorded)

    def close_run(self, run: RunTape) -> str | None:
        """The run has ended: its cassette is written (recording, or a replay that went live); the error
        when it cannot be, else None."""
        if self.replay and run.agent_requests == 0:
            self.counts.no_request_runs += 1
        if not self.replay or run.changed:
            try:
                cassette.write_lines(run.path, run.lines)
            except OSError as exc:
                return f"cannot write the cassette {run.path} ({exc.strerror or exc})"
        return None


class ReplayMiss(httpx2.StreamError):
    """The answer of a replayed request that has no recorded answer: reading it fails, and nothing
    retries a StreamError (it is not a connection error)."""


@dataclass
class RunTape:
    """One run's cassette while it plays."""

    tape: Tape
    case_id: str
    trial: int
    path: Path
    recorded: list[Exchange] = field(default_factory=list)
    lines: list[dict[str, Any]] = field(default_factory=list)  # what the cassette file will hold
    requests: int = 0
    agent_requests: int = 0
    credit_s: float = 0.0  # recorded latency of the agent's replayed answers: its time, not waited for
    credits: list[tuple[float, float]] = field(default_factory=list)  # (perf_counter, credit_s from then on)
    miss: str | None = None
    changed: bool = False
    _index: dict[bytes, deque[Exchange]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for exchange in self.recorded:
            key = cassette.match_key(exchange.role, exchange.path, exchange.request)
            self._index.setdefault(key, deque()).append(exchange)
            self.lines.append(_line_of(exchange))

    def credit_at(self, when: float) -> float:
        """The replayed answers' recorded latency credited up to the time `when` (perf_counter)."""
        return next((credit for at, credit in reversed(self.credits) if at <= when), 0.0)

    def take(self, role: str, path: str, body: Any) -> Exchange | None:
        queue = self._index.get(cassette.match_key(role, path, body))
        return queue.popleft() if queue else None

    def describe_miss(self, role: str, path: str, body: Any, seq: int) -> str:
        """`replay miss: ...` naming the role, the request's number and the nearest recorded one's first
        differing field."""
        head = f"{REPLAY_MISS}: {role} request {seq} ({path}) of case {self.case_id!r} trial {self.trial}"
        best: tuple[int, str, Exchange] | None = None
        for exchange in self.recorded:
            if exchange.role != role or exchange.path != path:
                continue
            found = cassette.first_difference(body, exchange.request)
            if found is None:  # the same request, its recorded answers all taken
                return (f"{head} repeats the recorded one ({self.path} line {exchange.seq}) more often than the "
                        "recording did")
            if best is None or found[0] > best[0]:
                best = (found[0], found[1], exchange)
        if best is None:
            return f"{head} has no recorded {role} request to compare with in {self.path}"
        return (f"{head} differs from the nearest recorded one ({self.path} line {best[2].seq}) at "
                f"{best[1]}")

    def add(self, role: str, path: str, body: Any, status: int, answer: Any, stream: bool,
            latency_s: float, usage: Any, live: bool) -> None:
        line = {"seq": len(self.lines) + 1, "role": role, "path": path, "request": body, "response": answer,
                "status": status, "latency_s": round(latency_s, 6), "usage": usage, "stream": stream}
        if live:
            line["live"] = True
        self.lines.append(line)
        self.changed = True


def _line_of(exchange: Exchange) -> dict[str, Any]:
    return {"seq": exchange.seq, "role": exchange.role, "path": exchange.path, "request": exchange.request,
            "response": exchange.response, "status": exchange.status, "latency_s": exchange.latency_s,
            "usage": exchange.usage, "stream": exchange.stream}


_current: ContextVar[RunTape | None] = ContextVar("agent_eval_tape", default=None)
_role: ContextVar[str] = ContextVar("agent_eval_tape_role", default="agent")


def current() -> RunTape | None:
    """The tape of the run whose task this is, if it records or replays."""
    return _current.get()


_replayed_here: ContextVar[list[float] | None] = ContextVar("agent_eval_tape_replayed", default=None)


def replayed_s() -> float:
    """The recorded latency of the agent's answers replayed inside the innermost `using` block so far."""
    held = _replayed_here.get()
    return held[0] if held is not None else 0.0


@contextmanager
def using(tape: RunTape | None, role: str | None = None) -> Iterator[None]:
    """Make `tape` the current run's (and `role` the requests' role) inside the block."""
    token = _current.set(tape)
    role_token = _role.set(role) if role is not None else None
    held_token = _replayed_here.set([0.0])
    try:
        yield
    finally:
        _current.reset(token)
        _replayed_here.reset(held_token)
        if role_token is not None:
            _role.reset(role_token)


@contextmanager
def as_role(role: str) -> Iterator[None]:
    token = _role.set(role)
    try:
        yield
    finally:
        _role.reset(token)


# --- the transport -------------------------------------------------------------------------------------
class TapeTransport(httpx2.AsyncBaseTransport):
    """Wraps a client's transport; passes everything through unless a run's tape is current (the run's
    task says which command's tape: two commands in one process never see each other's)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, base_path: str) -> None:
        self._inner, self._base = inner, base_path.rstrip("/")

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        tape = _current.get()
        if tape is None or request.method != "POST":
            return await self._inner.handle_async_request(request)
        try:
            raw = request.content
        except httpx2.RequestNotRead:
            return await self._inner.handle_async_request(request)
        path = request.url.path
        path = path[len(self._base):] if self._base and path.startswith(self._base) else path
        role = _role.get()
        try:
            body = cassette.scrub(orjson.loads(raw)) if raw else None
        except orjson.JSONDecodeError:
            body = cassette.scrub(raw.decode("utf-8", "replace"))
        tape.requests += 1
        if role == "agent":
            tape.agent_requests += 1
        mode, counts = tape.tape, tape.tape.counts
        if mode.replay:
            hit = tape.take(role, path, body)
            if hit is not None:
                counts.hits += 1
                if role == "agent":
                    tape.credit_s += hit.latency_s or 0.0
                    tape.credits.append((time.perf_counter(), tape.credit_s))
                    held = _replayed_here.get()
                    if held is not None:
                        held[0] += hit.latency_s or 0.0
                return _replayed(hit, request)
            if not mode.live_on_miss:
                counts.misses += 1
                message = tape.describe_miss(role, path, body, tape.requests)
                tape.miss = tape.miss or message
                return httpx2.Response(200, headers=[("content-type", "application/json")],
                                       stream=_Failing(message), request=request)
        started = time.perf_counter()
        response = await self._inner.handle_async_request(request)
        if response.status_code in RETRIED or response.status_code >= 500:
            return response  # an attempt that agent-eval's loop retries: the exchange is the answered one
        stream = response.headers.get("content-type", "").startswith("text/event-stream")
        live = mode.replay

        def done(data: bytes) -> None:
            answer = _events(data) if stream else _decoded(data)
            answer = cassette.scrub(answer)
            tape.add(role, path, body, response.status_code, answer, stream, time.perf_counter() - started,
                     _usage(answer, stream), live)
            if live:
                counts.misses += 1
                counts.live += 1

        return httpx2.Response(response.status_code, headers=response.headers.raw, request=request,
                               stream=_Tee(response.stream, done), extensions=response.extensions)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Tee(httpx2.AsyncByteStream):
    """Passes an answer's body on, and hands the whole of it to `done` once it has been read to the end."""

    def __init__(self, inner: Any, done: Callable[[bytes], None]) -> None:
        self._inner, self._done = inner, done

    async def __aiter__(self) -> AsyncIterator[bytes]:
        parts = []
        async for chunk in self._inner:
            parts.append(chunk)
            yield chunk
        self._done(b"".join(parts))

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Failing(httpx2.AsyncByteStream):
    def __init__(self, message: str) -> None:
        self._message = message

    async def __aiter__(self) -> AsyncIterator[bytes]:
        raise ReplayMiss(self._message)
        yield b""  # pragma: no cover  (makes this an async generator)


def _replayed(hit: Exchange, request: httpx2.Request) -> httpx2.Response:
    if hit.stream and isinstance(hit.response, list):
        return httpx2.Response(hit.status, headers=[("content-type", "text/event-stream")],
                               content=_sse(hit.response, hit.path), request=request)
    body = hit.response.encode() if isinstance(hit.response, str) else orjson.dumps(hit.response)
    kind = "text/plain" if isinstance(hit.response, str) else "application/json"
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
