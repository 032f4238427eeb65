"""The X-Agent-Eval-* headers: which role, case, trial and turn a model request is for.

agent-eval's own clients and its agent endpoint send them to a loopback model only (a scripted model, a
local test server), never to another host; they are not part of a request's body, so a cassette never
matches on them. The run's case and trial, and the turn, are context variables of the run's task (the
judge's and the simulator's requests, made inside it, see them too).
"""
from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

ROLE, CASE, TRIAL, TURN = "X-Agent-Eval-Role", "X-Agent-Eval-Case", "X-Agent-Eval-Trial", "X-Agent-Eval-Turn"


@dataclass(frozen=True)
class RunKeys:
    """The run a request belongs to: its case id, trial (0-based) and turn (0-based, None before the first)."""

    case: str
    trial: int
    turn: int | None = None


_run: ContextVar[RunKeys | None] = ContextVar("agent_eval_run_keys", default=None)


@contextmanager
def for_run(case_id: str, trial: int) -> Iterator[None]:
    """Inside the block, requests made are run (case_id, trial)'s."""
    token = _run.set(RunKeys(case_id, trial))
    try:
        yield
    finally:
        _run.reset(token)


def at_turn(turn: int) -> None:
    """The current run is at user turn `turn` (set in the run's own task; `for_run` undoes it)."""
    keys = _run.get()
    if keys is not None:
        _run.set(RunKeys(keys.case, keys.trial, turn))


def current() -> RunKeys | None:
    return _run.get()


def is_loopback(base_url: str | None) -> bool:
    """True when `base_url`'s host is this machine (localhost, 127.0.0.0/8, ::1)."""
    if not base_url:
        return False
    try:
        host = urlsplit(base_url).hostname
    except ValueError:
        return False
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def headers_for(base_url: str | None, role: str, keys: RunKeys | None, turn: int | None = None) -> dict[str, str]:
    """The X-Agent-Eval-* headers of a request of run `keys` (at `turn` when given) to `base_url`: none unless
    it is a loopback address. The case id is percent-encoded (a header holds ASCII only); the judge's
    requests carry no turn."""
    if not is_loopback(base_url):
        return {}
    if keys is not None and turn is not None:
        keys = RunKeys(keys.case, keys.trial, turn)
    found = {ROLE: role}
    if keys is not None:
        found[CASE] = quote(keys.case, safe="")
        found[TRIAL] = str(keys.trial)
        if keys.turn is not None and role != "judge":
            found[TURN] = str(keys.turn)
    return found


def read_headers(headers: Mapping[str, str]) -> tuple[str | None, str | None, int | None, int | None]:
    """(role, case, trial, turn) from a request's headers (a server's side); what is absent or odd is None."""
    def number(name: str) -> int | None:
        value = headers.get(name)
        return int(value) if value is not None and value.isdecimal() and len(value) < 10 else None

    case = headers.get(CASE)
    return headers.get(ROLE), unquote(case) if case is not None else None, number(TRIAL), number(TURN)
