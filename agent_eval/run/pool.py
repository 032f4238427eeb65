"""The driver side of --workers N and --ray: hand runs to workers in small batches, journal what comes back.

Where a worker lives (a local process, a Ray actor) is a host's business; the pool sees only messages
(agent_eval.run.worker). The driver keeps every worker at most as busy as its slots, so a worker has
nothing waiting: every run it holds is in flight, and after Ctrl-C or -x nothing is left to drop.
"""
from __future__ import annotations

import asyncio
import multiprocessing
import signal
from multiprocessing import resource_tracker
import threading
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from agent_eval.errors import ConfigError
from agent_eval.run.episode import empty_trace
from agent_eval.run.runner import CANCEL_GRACE_S, Runner, lite_run
from agent_eval.provider import events
from agent_eval.provider.endpoints import WindowBoard
from agent_eval.run.worker import (BATCH, CRASHED, FAILED, FINISH, LIMITS, READY, RESULT, RETRY, SPENT, STOP, USAGE,
                                   WINDOW, WorkerInit, process_main, unpack_results)
from agent_eval.score.pipeline import ScoringContext, score_run

Deliver = Callable[["Host", "bytes | None"], None]  # a worker's message, or None once it is gone
LOST = "worker lost"
FINISH_GRACE_S = 10.0  # how long idle workers get to report what they spent before they are ended


class Host(Protocol):
    """Where one worker lives; it reports through `deliver`, from any thread."""

    number: int
    slots: int

    def start(self, deliver: Deliver) -> None: ...
    def replacement(self) -> Host: ...  # a new worker in the same place, with the same slots
    def send(self, message: bytes) -> None: ...
    def loss(self) -> str: ...
    async def close(self) -> None: ...


def split_concurrency(concurrency: int, workers: int) -> list[int]:
    """Worker i of N gets c // N slots, plus one when i < c % N; workers that would get none are left out."""
    slots = [concurrency // workers + (1 if i < concurrency % workers else 0) for i in range(workers)]
    return [s for s in slots if s > 0]


class ProcessHost:
    """A worker in a local process, started with the spawn method (never a fork of this threaded process)."""

    def __init__(self, number: int, slots: int, init: WorkerInit) -> None:
        self.number, self.slots, self.init = number, slots, init
        self.process: Any = None
        self.conn: Any = None

    def start(self, deliver: Deliver) -> None:
        # Started now, not inside the first spawn below: starting it unblocks SIGINT in this process.
        resource_tracker.ensure_running()
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self.process = context.Process(target=process_main, args=(child, self.init),
                                       name=f"agent-eval-worker-{self.number}")
        # The child inherits the blocked SIGINT through exec, so a Ctrl-C sent to the process group while
        # it starts up cannot print a KeyboardInterrupt traceback; it then ignores SIGINT for good.
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self.process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        child.close()  # so that the worker's death reads as end-of-file here
        self.conn = parent
        threading.Thread(target=self._read, args=(deliver,), name=f"agent-eval-worker-{self.number}-link",
                         daemon=True).start()

    def replacement(self) -> ProcessHost:
        return ProcessHost(self.number, self.slots, self.init)

    def _read(self, deliver: Deliver) -> None:
        while True:
            try:
                message = self.conn.recv_bytes()
            except (EOFError, OSError):
                self.process.join(2.0)  # its exit code says how it died
                deliver(self, None)
                return
            deliver(self, message)

    def send(self, message: bytes) -> None:
        try:
            self.conn.send_bytes(message)
        except OSError:
            pass  # it died: its end-of-file is on the way

    def loss(self) -> str:
        code = self.process.exitcode
        if code is None:
            how = "stopped answering"
        elif code < 0:
            how = f"was killed by {signal.Signals(-code).name}" if -code in signal.valid_signals() else "was killed"
        else:
            how = f"exited with code {code}"
        return f"worker {self.number} (pid {self.process.pid}) {how}"

    async def close(self) -> None:
        process = self.process
        if process is None:
            return
        for stop in (process.terminate, process.kill):
            if process.exitcode is not None:
                break
            stop()
            await asyncio.to_thread(process.join, 1.0)
        if self.conn is not None:
            self.conn.close()


class WorkerPool:
    """Runs a Runner's pending runs on hosts; the Runner journals each record as it comes back."""

    def __init__(self, hosts: list[Any], on_close: Callable[[], None] | None = None, asked: int = 0) -> None:
        self.hosts = hosts
        self.asked = asked  # the workers asked for (Ray's CPU count when none was), hosts without a slot included
        # Each worker's summary.judge / summary.user_sim: its latest report, its final one once it ends,
        # so that a worker that dies still counts what it spent up to its last report.
        self._spent: dict[Any, dict[str, Any]] = {}
        self.on_close = on_close or (lambda: None)
        self.crashes: list[str] = []  # tracebacks of workers that crashed (a bug in agent-eval)
        self.abandoned: str | None = None  # why runs were left unplayed: no worker was left to play them
        self._ready: set[Any] = set()  # hosts whose worker loaded the suite
        self._last_loss = ""  # how the latest lost worker died
        self.board = WindowBoard()  # every worker's windows, for the progress line
        self.listeners = events.Listeners(self.board)  # the command's: told of workers' retries and windows
        self._split = 0  # how many workers each --rate-limit is split among

    @property
    def spent(self) -> list[dict[str, Any]]:
        return list(self._spent.values())

    async def run(self, runner: Runner) -> None:
        if not runner.pending:
            return  # a resumed run with nothing left: no worker to start
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[tuple[Any, bytes | None]] = asyncio.Queue()

        def deliver(host: Any, message: bytes | None) -> None:
            try:
                loop.call_soon_threadsafe(inbox.put_nowait, (host, message))
            except RuntimeError:
                pass  # the run is over and its loop closed: nothing waits for this any more

        self._deliver = deliver

        self._held: dict[Any, set[tuple[int, int]]] = {}  # live host -> the runs it has in flight
        flusher = asyncio.create_task(runner.flush_periodically())
        graceful = False
        try:
            self._split = len(self.hosts)
            for host in self.hosts:
                host.start(deliver)
                self._send_limits(host)
                self._held[host] = set()
            self._refill(runner)
            while any(self._held.values()):
                await self._handle(runner, *await inbox.get())
                while not inbox.empty():
                    await self._handle(runner, *inbox.get_nowait())
                self._refill(runner)
                self._resplit(runner)
            if runner.pending and not runner.stopping:
                self.abandoned = f"no worker was left to play {runner.pending} run(s): {self._last_loss}"
            graceful = True
        finally:
            flusher.cancel()
            await self._close(runner, inbox, graceful)

    def _send_limits(self, host: Any) -> None:
        """A worker's window ceiling (its slots) and its part of each --rate-limit."""
        host.send(LIMITS + orjson.dumps({"ceiling": host.slots, "share": 1.0 / max(1, self._split)}))

    def _resplit(self, runner: Runner) -> None:
        """Once every run is handed out, a worker with none left is done: the others share its part of the
        rate limits (and its windows leave the progress line)."""
        if runner.pending and not runner.stopping:
            return
        busy = [host for host, held in self._held.items() if held]
        for host, held in self._held.items():
            if not held:
                self.board.forget(host.number)
        if busy and len(busy) < self._split:
            self._split = len(busy)
            for host in busy:
                self._send_limits(host)

    def _refill(self, runner: Runner) -> None:
        for host, held in self._held.items():
            free = host.slots - len(held)
            if free > 0:
                pairs = runner.take(free)
                if pairs:
                    held.update(pairs)
                    host.send(BATCH + orjson.dumps(pairs))

    async def _handle(self, runner: Runner, host: Any, message: bytes | None) -> None:
        kind, payload = (message[:1], message[1:]) if message is not None else (None, b"")
        if kind is None or kind == CRASHED:
            if kind == CRASHED:
                self.crashes.append(payload.decode(errors="replace"))
            await self._lost(runner, host, host.loss() if kind is None else crash_reason(host, payload))
        elif kind == READY:
            self._ready.add(host)
        elif kind == RESULT:
            held = self._held.get(host, set())
            for result in unpack_results(payload):
                head, _, run_json = result.partition(b"\n")
                index, trial, lite, models = orjson.loads(head)
                held.discard((index, trial))
                runner.record(index, trial, run_json, lite, models)
        elif kind == USAGE:
            self._spent[host] = orjson.loads(payload)
            self._held.pop(host, None)
        elif kind == SPENT:
            self._spent[host] = orjson.loads(payload)
        elif kind == RETRY:
            self.listeners.retrying(*orjson.loads(payload))
        elif kind == WINDOW:
            self.listeners.window_changed(host.number, *orjson.loads(payload))  # the board, the progress line
        elif kind == FAILED:
            raise ConfigError(f"worker {host.number} cannot start: {payload.decode(errors='replace')}")

    async def _lost(self, runner: Runner, host: Any, reason: str) -> None:
        """A worker is gone: its runs in flight are errors, and a worker that had started is replaced.

        One that died before it loaded the suite is not: that is a start-up problem, which a replacement
        would only meet again.
        """
        held = self._held.pop(host, None)
        if held is None:
            return  # told already (a crash, then its end of file)
        self._last_loss = reason
        for index, trial in sorted(held):
            await record_lost(runner, index, trial, reason)
        await host.close()  # its pipe too: a long run may replace many workers
        self.hosts.remove(host)
        if host in self._ready and runner.pending and not runner.stopping:
            fresh = host.replacement()
            self.hosts.append(fresh)
            self._held[fresh] = set()
            fresh.start(self._deliver)
            self._send_limits(fresh)
        self.board.forget(host.number)

    async def _close(self, runner: Runner, inbox: asyncio.Queue[Any], graceful: bool) -> None:
        """Ask every live worker for what it spent and let it end; after a grace period, end it."""
        runner.stop_taking_runs()
        live = list(self._held)
        self._held = {host: set() for host in live}
        for host in live:
            host.send(FINISH if graceful else STOP)
        try:
            await asyncio.wait_for(self._drain(runner, inbox), FINISH_GRACE_S if graceful else CANCEL_GRACE_S)
        except (TimeoutError, asyncio.CancelledError):
            pass
        finally:
            await asyncio.gather(*(host.close() for host in self.hosts), return_exceptions=True)
            self.on_close()

    async def _drain(self, runner: Runner, inbox: asyncio.Queue[Any]) -> None:
        while self._held:
            host, message = await inbox.get()
            if message is None or message[:1] in (USAGE, RESULT, SPENT, CRASHED):  # runs finished before the stop stay
                await self._handle(runner, host, message)


def crash_reason(host: Host, payload: bytes) -> str:
    """How a crashed worker is named in its lost runs: the last line of its traceback."""
    lines = payload.decode(errors="replace").strip().splitlines()
    return f"worker {host.number} crashed ({lines[-1] if lines else 'no traceback'})"


async def record_lost(runner: Runner, index: int, trial: int, reason: str) -> None:
    """Journal a run whose worker died while it was in flight: status `error`, message `worker lost: ...`."""
    slot = runner.slots[index]
    trace = empty_trace()
    message = f"{LOST}: {reason.rstrip('. ')} while this run was in flight; `agent-eval run --resume` runs it again"
    context = ScoringContext(pricing=runner.scoring.pricing, model=runner.scoring.model)
    run = await score_run(slot.case, trial, trace, {}, None, message, context)
    runner.record(index, trial, orjson.dumps(run), lite_run(run, slot.case), [])
