"""`--otlp-endpoint URL`: each run's trace POSTed as OTLP/HTTP JSON as it finishes, with OTEL_EXPORTER_OTLP_HEADERS.

`RunSender.offer` is all the run's hot path does: it appends the run's JSON to a list, which goes to a
bounded queue as a batch (64 runs, or whatever finished in the last half second), and a thread of its
own builds the spans and POSTs each batch as one request. Waking the thread once a batch, not once a
run, keeps it from taking the interpreter's lock from the run loop at every run. A batch that finds
the queue full is sent at the command's end from the report instead, so none is lost and no run waits
for the collector. A failed POST never changes a verdict: the command gets one warning with the count and the
first reason.
"""
from __future__ import annotations

import math
import os
import queue
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

import orjson

from agent_eval.tracebacks import describe

HEADERS_ENV = "OTEL_EXPORTER_OTLP_HEADERS"
TIMEOUT_S = 10.0
BATCH_RUNS = 64  # the most runs one POST carries
HAND_EVERY_S = 0.5  # a finished run waits at most this long (or for 63 more) before the thread sees it
QUEUE_BATCHES = 8  # batches waiting for the sender thread; past that a batch is sent at the end
GIVE_UP_AFTER = 3  # consecutive failed POSTs after which the rest of the command's runs are not tried
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


class RunSender:
    """POSTs the traces of one command's runs to `url`, from a background thread, as the runs finish.

    `head` holds what every run's spans name (the report's run_id, created_at, suite and model).
    """

    def __init__(self, url: str, head: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> None:
        import httpx  # noqa: F401  # here, not first on the sender thread while the run imports it too

        import agent_eval.report.otel  # noqa: F401

        self.url, self.head = url, dict(head)
        self.headers = {**otlp_headers(), **(headers or {}), "Content-Type": "application/json"}
        self.sent = self.failed = 0
        self.reason: str | None = None
        self._queue: queue.Queue[list[Run] | None] = queue.Queue(QUEUE_BATCHES)
        self._pending: list[Run] = []  # finished runs not handed to the thread yet
        self._handed = -math.inf  # when runs were last handed over (time.monotonic)
        self._deferred: set[tuple[str, int]] = set()  # runs that found the queue full
        self._thread: threading.Thread | None = None
        self._failed_in_a_row = 0

    def offer(self, case_id: str, trial: int, run_json: bytes) -> None:
        """Take one finished run (never blocks). Runs are handed to the thread in batches, at most
        HAND_EVERY_S apart, so that the thread wakes once a batch, not once a run."""
        self._pending.append((case_id, trial, run_json))
        now = time.monotonic()
        if len(self._pending) >= BATCH_RUNS or now - self._handed >= HAND_EVERY_S:
            self._hand_over(now)

    def _hand_over(self, now: float) -> None:
        batch, self._pending, self._handed = self._pending, [], now
        if self._thread is None:
            self._thread = threading.Thread(target=self._send_queued, name="otlp-sender", daemon=True)
            self._thread.start()
        try:
            self._queue.put_nowait(batch)
        except queue.Full:  # the collector is slower than the runs: these go from the report at the end
            self._deferred.update((case_id, trial) for case_id, trial, _ in batch)

    def finish(self, report: Mapping[str, Any], run_bytes: Iterable[list[bytes]], every_run: bool = False,
               ) -> tuple[int, int, str | None]:
        """Send what is still pending or queued, then the runs of `report` that found the queue full
        (with `every_run`, all of them: a command whose runs were never offered); (sent, failed, first
        reason)."""
        if self._pending:
            self._hand_over(time.monotonic())
        if self._thread is not None:
            self._queue.put(_DONE)
            self._thread.join()
        rest = [(str(case["id"]), int(lite.get("trial") or 0), raw)
                for case, raws in zip(report["cases"], run_bytes, strict=True)
                for lite, raw in zip(case["runs"], raws, strict=True)
                if every_run or (str(case["id"]), int(lite.get("trial") or 0)) in self._deferred]
        if rest:
            with _client() as client:
                for start in range(0, len(rest), BATCH_RUNS):
                    self._post(client, rest[start:start + BATCH_RUNS])
        return self.sent, self.failed, self.reason

    def _send_queued(self) -> None:
        with _client() as client:
            while (batch := self._queue.get()) is not _DONE:
                self._post(client, batch)

    def _post(self, client: Any, batch: list[Run]) -> None:
        """One POST of the batch's runs (their spans in one export request); counts each run."""
        import httpx

        from agent_eval.report.otel import export_request, run_spans

        if self._failed_in_a_row >= GIVE_UP_AFTER:
            self.failed += len(batch)  # the collector is down: the rest is counted, not tried
            return
        spans = [span for case_id, _, raw in batch for span in run_spans(self.head, case_id, orjson.loads(raw))]
        try:
            # Only the status is read: a collector's body (of any size, a gzip bomb even) is never needed.
            with client.stream("POST", self.url, content=orjson.dumps(export_request(self.head, spans)),
                               headers=self.headers) as response:
                status = response.status_code
            why = None if 200 <= status < 300 else f"HTTP {status}"
        except (httpx.HTTPError, ValueError, OSError) as exc:
            why = describe(exc)
        if why is None:
            self.sent += len(batch)
            self._failed_in_a_row = 0
        else:
            self.failed += len(batch)
            self.reason = self.reason or why
            self._failed_in_a_row += 1


def _client() -> Any:
    import httpx

    return httpx.Client(timeout=TIMEOUT_S)


def warning(url: str, failed: int, total: int, reason: str | None) -> str:
    """The one warning of a command whose POSTs failed."""
    return (f"warning: {failed} of {total} run trace(s) could not be sent to --otlp-endpoint {url} ({reason}); "
            "the verdict is unchanged.")
