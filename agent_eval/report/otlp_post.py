"""`--otlp-endpoint URL`: each run's trace POSTed as OTLP/HTTP JSON as it finishes, with OTEL_EXPORTER_OTLP_HEADERS.

`RunSender.journaled` is all the run's hot path does: it appends the run's JSON to a list, which goes to the
sender thread as a batch (64 runs, or whatever finished in the last half second); the thread builds the
spans and POSTs each batch as one request, with aiohttp (a dependency already: `openai[aiohttp]`) on an
event loop of its own. Waking the thread once a batch, not once a run, keeps it from taking the
interpreter's lock from the run loop at every run. When QUEUE_BATCHES batches are already waiting, a batch
is sent at the command's end from the report instead, so none is lost and no run waits for the collector.

Every bound is a whole one, whatever a collector does: each POST (connect, headers, body) has TIMEOUT_S in
all, however slowly the collector drips its answer; at the command's end the sender waits at most
FINISH_S in all, and `stop` (the first Ctrl-C or SIGTERM) ends the wait at once. Runs left unsent then
are counted. A failed POST never changes a verdict: the command gets one warning with the counts and
the first reason.
"""
from __future__ import annotations

import asyncio
import math
import os
import queue
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import orjson

from agent_eval.provider import events
from agent_eval.redaction import redact_secrets, redact_url
from agent_eval.tracebacks import describe

HEADERS_ENV = "OTEL_EXPORTER_OTLP_HEADERS"
TIMEOUT_S = 10.0  # one POST, connect to status line and headers, in all
FINISH_S = 15.0  # the most the command's end waits for the sender, in all
INTERRUPTED_FINISH_S = 1.0  # the same once a Ctrl-C or SIGTERM stopped the run: the command ends within 5 s,
# with room for writing the partial report on a loaded machine (2.0 took 5.5 s in all once, at load 15)
BATCH_RUNS = 64  # the most runs one POST carries
HAND_EVERY_S = 0.5  # a finished run waits at most this long (or for 63 more) before the thread sees it
QUEUE_BATCHES = 8  # batches waiting for the sender thread; past that a batch is sent at the end
GIVE_UP_AFTER = 3  # consecutive failed POSTs after which the rest of the command's runs are not tried
WAIT_SLICE_S = 0.05  # how often the end's wait looks at `stop`
_DONE = None
Run = tuple[str, int, bytes]  # case id, trial, the run's JSON


def otlp_headers(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """OTEL_EXPORTER_OTLP_HEADERS ("k1=v1,k2=v2", values URL-encoded) as headers."""
    raw = (os.environ if env is None else env).get(HEADERS_ENV, "")
    headers: dict[str, str] = {}
    for item in raw.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            headers[unquote(key.strip())] = unquote(value.strip())
    return headers


@dataclass(frozen=True)
class Sent:
    """How the command's runs fared: sent, failed (the collector refused them, or could not be reached),
    not sent (still waiting when the end's wait ran out, or was stopped), and the first reason."""

    sent: int
    failed: int
    not_sent: int
    reason: str | None


class RunSender(events.RunListener):
    """POSTs the traces of one command's runs to `url`, from a background thread, as the runs finish: it
    listens to the journal (each run is offered once its line is written).

    `head` holds what every run's spans name (the report's run_id, created_at, suite and model).
    """

    def __init__(self, url: str, head: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> None:
        import aiohttp  # noqa: F401  # here, not first on the sender thread while the run imports it too

        import agent_eval.report.otel  # noqa: F401

        self.url, self.head = url, dict(head)
        self.headers = {**otlp_headers(), **(headers or {}), "Content-Type": "application/json"}
        self.stop = threading.Event()  # set by the first Ctrl-C or SIGTERM once the runs are over
        self.finish_s = FINISH_S  # INTERRUPTED_FINISH_S when a Ctrl-C or SIGTERM stopped the run
        self.sent = self.failed = 0
        self.reason: str | None = None
        self._lock = threading.Lock()
        self._handed_runs = 0  # runs given to the thread
        self._queue: queue.Queue[list[Run] | None] = queue.Queue()  # bounded by hand: see _hand_over
        self._pending: list[Run] = []  # finished runs not handed to the thread yet
        self._handed = -math.inf  # when runs were last handed over (time.monotonic)
        self._deferred: set[tuple[str, int]] = set()  # runs that found the queue full
        self._thread: threading.Thread | None = None
        self._failed_in_a_row = 0

    def journaled(self, case_id: str, trial: int, run_json: bytes) -> None:
        """Take one finished run (never blocks). Runs are handed to the thread in batches, at most
        HAND_EVERY_S apart, so that the thread wakes once a batch, not once a run."""
        self._pending.append((case_id, trial, run_json))
        now = time.monotonic()
        if len(self._pending) >= BATCH_RUNS or now - self._handed >= HAND_EVERY_S:
            self._hand_over(now)

    def _hand_over(self, now: float) -> None:
        batch, self._pending, self._handed = self._pending, [], now
        if self._queue.qsize() >= QUEUE_BATCHES:  # the collector is slower than the runs: sent at the end
            self._deferred.update((case_id, trial) for case_id, trial, _ in batch)
            return
        self._give(batch)

    def _give(self, batch: list[Run]) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._send_queued, name="otlp-sender", daemon=True)
            self._thread.start()
        self._handed_runs += len(batch)
        self._queue.put(batch)

    def finish(self, report: Mapping[str, Any], run_bytes: Iterable[list[bytes]], every_run: bool = False) -> Sent:
        """Send what is still pending or queued, then the runs of `report` that found the queue full (with
        `every_run`, all of them: a command whose runs were never offered), waiting FINISH_S at most in all,
        or until `stop` is set."""
        deadline = time.monotonic() + self.finish_s
        if self._pending:
            self._hand_over(time.monotonic())
        rest = [(str(case["id"]), int(lite.get("trial") or 0), raw)
                for case, raws in zip(report["cases"], run_bytes, strict=True)
                for lite, raw in zip(case["runs"], raws, strict=True)
                if every_run or (str(case["id"]), int(lite.get("trial") or 0)) in self._deferred]
        for start in range(0, len(rest), BATCH_RUNS):
            self._give(rest[start:start + BATCH_RUNS])
        if self._thread is not None:
            self._queue.put(_DONE)
            while self._thread.is_alive() and not self.stop.is_set() and (left := deadline - time.monotonic()) > 0:
                self._thread.join(min(WAIT_SLICE_S, left))
        with self._lock:
            return Sent(self.sent, self.failed, self._handed_runs - self.sent - self.failed, self.reason)

    def _send_queued(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._send_all())
        finally:
            loop.close()

    async def _send_all(self) -> None:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as session:
            while (batch := self._queue.get()) is not _DONE:
                await self._post(session, batch)

    async def _post(self, session: Any, batch: list[Run]) -> None:
        """One POST of the batch's runs (their spans in one export request); counts each run."""
        from agent_eval.report.otel import export_request, run_spans

        if self._failed_in_a_row >= GIVE_UP_AFTER:
            self._count(len(batch), "the collector failed 3 times in a row; the rest was not tried")
            return
        why: str | None
        try:
            spans = [span for case_id, _, raw in batch for span in run_spans(self.head, case_id, orjson.loads(raw))]
            body = orjson.dumps(export_request(self.head, spans))
            # Only the status is read: a collector's body (of any size, a gzip bomb even) is never needed, and
            # the response is closed, not released, so nothing of it is read to keep the connection.
            async with session.post(self.url, data=body, headers=self.headers, allow_redirects=False) as response:
                status = response.status
                response.close()
            why = None if 200 <= status < 300 else f"HTTP {status}"
        except TimeoutError:
            why = f"no answer within {TIMEOUT_S:g} s"
        except Exception as exc:  # noqa: BLE001 - any transport failure is the collector's, counted
            why = redact_secrets(describe(exc).replace(self.url, str(redact_url(self.url))))
        self._count(len(batch), why)

    def _count(self, runs: int, why: str | None) -> None:
        with self._lock:
            if why is None:
                self.sent += runs
                self._failed_in_a_row = 0
            else:
                self.failed += runs
                self.reason = self.reason or why
                self._failed_in_a_row += 1


def warning(url: str, outcome: Sent) -> str | None:
    """The one warning of a command whose runs did not all reach the collector (None when they did)."""
    if not outcome.failed and not outcome.not_sent:
        return None
    total = outcome.sent + outcome.failed + outcome.not_sent
    parts = []
    if outcome.failed:
        parts.append(f"{outcome.failed} of {total} run trace(s) could not be sent ({outcome.reason})")
    if outcome.not_sent:
        parts.append(f"{outcome.not_sent} of {total} run trace(s) were not sent: the command waits at most "
                     f"{FINISH_S:g} s for the collector at its end ({INTERRUPTED_FINISH_S:g} s after a Ctrl-C), and "
                     "stops waiting at a Ctrl-C")
    return f"warning: --otlp-endpoint {redact_url(url)}: {'; '.join(parts)}; the verdict is unchanged."
