"""Record and replay (`run --record/--replay DIR`): the command's tape and each run's.

A command that records or replays makes one `Tape` (its folder, its miss rule, its counts) and hands
it to its player, which opens a `RunTape` per run and makes it current (a context variable; the run's
endpoint sets its run's) while the run plays. The transport that the clients of `agent_eval.llm` are
built with (provider/tape_transport.py) records and replays through the current `RunTape`.
"""
from __future__ import annotations

import os
from collections import deque
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from agent_eval.errors import ConfigError
from agent_eval.provider import cassette
from agent_eval.provider.cassette import Exchange

REPLAY_MISS = "replay miss"


@dataclass
class Counts:
    """summary.replay: requests answered from the cassettes, missed, sent live; runs that asked nothing."""

    hits: int = 0
    misses: int = 0
    live: int = 0
    no_request_runs: int = 0  # replayed runs that made no agent request through agent-eval
    live_cassettes: list[str] = field(default_factory=list)  # "case/trial.jsonl (n requests)" that went live

    def summary(self) -> dict[str, Any]:
        """summary.replay; `live_cassettes` only when a request went live."""
        out = asdict(self)
        if not self.live_cassettes:
            del out["live_cassettes"]
        return out


@dataclass
class Tape:
    """One command's recording or replaying (`run --record DIR`, `run --replay DIR`): the cassettes'
    folder, what a replay miss does, and the counts of `summary.replay`. The command makes it and hands
    it to the player, which opens each run's `RunTape` from it; nothing of it is process-wide."""

    folder: Path
    replay: bool
    live_on_miss: bool = False
    counts: Counts = field(default_factory=Counts)
    lock: int | None = None  # the descriptor locking the folder while this command records into it
    extends: bool = False  # --record DIR --replay-miss live on a recording: a run it lacks is recorded anew
    timeout: float | None = None  # --timeout: how long a request the recording abandoned is held on replay

    def open_run(self, case_id: str, trial: int) -> RunTape:
        """The tape of run (case_id, trial): under --replay its cassette's exchanges, read now (one run's
        at a time); a cassette that cannot be read makes the tape `unreadable`, which fails the run."""
        path = cassette.cassette_path(self.folder, case_id, trial)
        recorded: list[Exchange] = []
        if self.replay and not (self.extends and not path.exists()):
            try:
                recorded = cassette.read_cassette(path)
            except ConfigError as exc:
                return RunTape(self, case_id, trial, path, unreadable=str(exc))
        return RunTape(self, case_id, trial, path, recorded)

    def close(self) -> None:
        """The command is done with the folder: its lock is let go."""
        if self.lock is not None:
            os.close(self.lock)
            self.lock = None

    def close_run(self, run: RunTape) -> str | None:
        """The run has ended: its cassette is written (recording, or a replay that went live); the error
        when it cannot be, else None."""
        if run.unreadable is not None:
            return None  # the cassette is left as it is
        if run.live:
            shown = run.path.relative_to(self.folder).as_posix()
            self.counts.live_cassettes.append(f"{shown} ({run.live} request{'s' if run.live != 1 else ''})")
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
    unreadable: str | None = None  # why its cassette could not be read (the run's error)
    live: int = 0  # requests the recording lacked, asked live and appended (--replay-miss live)
    in_flight: dict[object, Callable[[], None]] = field(default_factory=dict)  # recording: how to abandon each
    _index: dict[bytes, deque[Exchange]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.miss = self.miss or self.unreadable
        for exchange in self.recorded:
            key = cassette.match_key(exchange.role, exchange.path, exchange.request)
            self._index.setdefault(key, deque()).append(exchange)
            self.lines.append(_line_of(exchange))

    def credit(self, latency_s: float) -> None:
        """An agent's replayed answer: its recorded latency is the run's time from now on (not waited for)."""
        self.credit_s += latency_s
        self.credits.append((time.perf_counter(), self.credit_s))
        held = _replayed_here.get()
        if held is not None:
            held[0] += latency_s

    def abandon(self) -> None:
        """--timeout ended the run: each request still in flight is recorded as abandoned, with its time."""
        for closed in list(self.in_flight.values()):
            closed()

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
        best: tuple[cassette.Difference, Exchange] | None = None
        for exchange in self.recorded:
            if exchange.role != role or exchange.path != path:
                continue
            found = cassette.first_difference(body, exchange.request)
            if found is None:  # the same request, its recorded answers all taken
                return (f"{head} repeats the recorded one ({self.path} line {exchange.seq}) more often than the "
                        "recording did")
            if best is None or found.equal > best[0].equal:
                best = (found, exchange)
        if best is None:
            return f"{head} has no recorded {role} request to compare with in {self.path}"
        difference, nearest = best
        return (f"{head} differs from the nearest recorded one ({self.path} line {nearest.seq}) at "
                f"{difference.path}: now {cassette.shown_value(difference.live)}, recorded "
                f"{cassette.shown_value(difference.recorded)}")

    def add(self, role: str, path: str, body: Any, status: int | str, answer: Any, stream: bool,
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


def current_role() -> str:
    """Who is asking: agent, judge or user."""
    return _role.get()


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


_unsent: ContextVar[list[int] | None] = ContextVar("agent_eval_tape_unsent", default=None)


@contextmanager
def counting_unsent() -> Iterator[list[int]]:
    """Inside the block, `held[0]` counts the requests answered without the network (replayed or missed)."""
    held = [0]
    token = _unsent.set(held)
    try:
        yield held
    finally:
        _unsent.reset(token)


def note_unsent() -> None:
    """The transport answered a request itself (from the cassette, or as a miss): no provider saw it."""
    held = _unsent.get()
    if held is not None:
        held[0] += 1


@contextmanager
def as_role(role: str) -> Iterator[None]:
    token = _role.set(role)
    try:
        yield
    finally:
        _role.reset(token)
