"""The worker side of --workers N and --ray: load the suite once, play the runs it is sent, send records back.

A worker never journals and never reports: it returns each finished run to the driver, which does both
(docs/scale.md). The same `WorkerCore` serves a local worker process and a Ray actor.
"""
from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

import agent_eval.llm as llm
from agent_eval.flags.rows import (
    AGENT, BASE_URL, JUDGE_MODEL, JUDGE_TIMEOUT, MAX_STEPS, MODEL, NO_CACHE, NO_JUDGE, RECORD, REPLAY, REPLAY_MISS,
    TIMEOUT,
)
from agent_eval.records import Case
from agent_eval.provider import events, tape
from agent_eval.errors import CaseFileError, ConfigError
from agent_eval.redaction import remember_secret
from agent_eval.suite.jsonsafe import dumps_safe
from agent_eval.run.agents import Agent, load_agent
from agent_eval.run.config import Settings
from agent_eval.run.player import CaseSlot, Player
from agent_eval.run.runner import lite_run, run_models
from agent_eval.run.simulator import Simulator, build_simulator
from agent_eval.run.threads import describe_user_error
from agent_eval.score.judge import build_judge
from agent_eval.score.pipeline import ScoringContext
from agent_eval.suite.cases import Suite, load_suite
from agent_eval.suite.imports import load_plugins
from agent_eval.tracebacks import call_user

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

# Messages between the driver and a worker process: one kind byte, then the payload.
BATCH, FINISH, STOP = b"B", b"F", b"S"  # driver -> worker: runs to play; end when idle; cancel and end
RESULT, USAGE = b"R", b"U"  # worker -> driver: finished runs (pack_results); what the worker spent, at the end
SPENT, RETRY = b"P", b"T"  # worker -> driver: what it has spent so far; a model request being retried
FAILED, CRASHED = b"E", b"X"  # worker -> driver: it cannot start (a message); a bug (a traceback)
READY = b"Y"  # worker -> driver: the suite, agent and scorers loaded; a worker lost after this is replaced
LIMITS = b"L"  # driver -> worker: {"ceiling": its slots, "share": its part of each --rate-limit}
WINDOW = b"W"  # worker -> driver: an endpoint's window changed size ([endpoint, size, ceiling])


def pack_results(results: list[bytes]) -> bytes:
    """One RESULT payload for several finished runs: each is its 4-byte length, then its bytes."""
    return b"".join(len(result).to_bytes(4, "big") + result for result in results)


def unpack_results(payload: bytes) -> list[bytes]:
    """The finished runs of a RESULT payload, as `WorkerCore.play` returned them."""
    results, at, view = [], 0, memoryview(payload)
    while at < len(payload):
        size = int.from_bytes(view[at:at + 4], "big")
        results.append(bytes(view[at + 4:at + 4 + size]))
        at += 4 + size
    return results


@dataclass
class WorkerInit:
    """What a worker needs to rebuild the driver's run: the same files, the same settings, the same cases."""

    cases_file: Path
    cases_sha256: str
    case_ids: list[str]
    cfg: Settings  # holds API keys: it travels over a pipe or Ray's object store, never to disk
    agent_dir: Path
    extends: bool = False  # --record DIR --replay-miss live on a recording: replay it, record what it lacks


def build_parts(suite: Suite, cases: list[Case], cfg: Settings, agent_dir: Path,
                ) -> tuple[Agent, Simulator | None, ScoringContext]:
    """The agent, the user simulator and the scoring context of a run (in the driver and in each worker)."""
    remember_secret(cfg.api_key, cfg.judge_api_key, cfg.user_sim.api_key if cfg.user_sim is not None else None)
    agent = load_agent(cfg[AGENT], agent_dir, {"model": cfg[MODEL], "base_url": cfg[BASE_URL],
                                              "api_key": cfg.api_key, "max_steps": cfg[MAX_STEPS],
                                              "cases_dir": str(Path(cfg.cases_file).resolve().parent)})
    return agent, build_simulator(cfg.user_sim), scoring_of(suite, cases, cfg)


def scoring_of(suite: Suite, cases: list[Case], cfg: Settings) -> ScoringContext:
    """How the runs of `cases` are scored (played here, or recorded ones `score` reads): the suite's prices and
    scorers, and the judge."""
    judge = build_judge(not cfg[NO_JUDGE], cfg[JUDGE_MODEL], cfg.judge_base_url, cfg.judge_api_key, cfg[NO_CACHE],
                        cases, timeout_s=cfg[JUDGE_TIMEOUT])
    return ScoringContext(pricing=suite.settings.get("pricing") or {}, model=cfg[MODEL], judge=judge,
                          scorers=suite.scorers, judge_off=cfg[NO_JUDGE])


def tape_of(cfg: Settings, extends: bool = False) -> tape.Tape | None:
    """A fresh tape for these settings (--record / --replay), or None; `extends`: the driver found a
    recording to extend (--record DIR --replay-miss live)."""
    if (replay := cfg[REPLAY]) is not None:
        return tape.Tape(replay, True, cfg[REPLAY_MISS] == "live", timeout=cfg[TIMEOUT])
    if (record := cfg[RECORD]) is not None:
        return tape.Tape(record, extends, extends, extends=extends, timeout=cfg[TIMEOUT])
    return None


class WorkerCore:
    """One worker's copy of the run: the suite loaded from the same path, played by the same Player code."""

    def __init__(self, init: WorkerInit) -> None:
        load_plugins(os.environ)  # the driver's rows (agent kinds, check families) exist here too
        if hashlib.sha256(init.cases_file.read_bytes()).hexdigest() != init.cases_sha256:
            raise ConfigError(f"{init.cases_file} changed after the run started; run again once it is saved.")
        suite = load_suite(init.cases_file)
        by_id = {case["id"]: case for case in suite.cases}
        missing = [case_id for case_id in init.case_ids if case_id not in by_id]
        if missing:
            raise ConfigError(f"{init.cases_file} has no case {missing[0]!r} on this worker.")
        cases = [by_id[case_id] for case_id in init.case_ids]
        agent, simulator, scoring = build_parts(suite, cases, init.cfg, init.agent_dir)
        # --record / --replay: this worker's own tape, each run's cassette read here
        self.player = Player(suite, init.cfg, agent, scoring, simulator, tape_of(init.cfg, init.extends))
        # The driver hands out the trials; none is this worker's to take.
        self.slots = [CaseSlot(case, []) for case in cases]
        self._newest = -1  # runs come in case order: a case before this one will not come again
        if self.player.uses_llm():
            llm.preload()  # not inside the first run's time
        self.player.gc.pause()  # the same collection regime as a run played in one process
        self.spent_changed = False  # a run since the last report called the judge or the simulator

    async def play(self, index: int, trial: int) -> bytes:
        """Play one run; the RESULT payload: `[index, trial, lite run, models]`, a newline, the run's JSON."""
        self._newest = max(self._newest, index)
        slot = self.slots[index]
        run, run_json = await self.player.play_encoded(slot, trial)
        # A case's env template is freed once no run of it is in flight and a later case has come.
        slot.release_if_idle(1 if index == self._newest else 0)
        self.player.gc.run_finished()
        if run.get("judge") is not None or slot.case.get("scenario") is not None:
            self.spent_changed = True
        head = [index, trial, lite_run(run, slot.case), sorted(run_models(run["trace"], self.player.cfg[MODEL]))]
        return dumps_safe(head)[1] + b"\n" + run_json  # a bad head must not crash the worker either

    async def close(self) -> None:
        """End this worker's MCP servers, if the suite has any."""
        await self.player.aclose()
        self.player.gc.resume()

    def spent(self) -> dict[str, Any]:
        """summary.judge, summary.user_sim and summary.provider of this worker alone."""
        return {**self.player.spent(self.player.suite.settings.get("pricing")),
                "provider": self.player.command.endpoints.summary()}


def load_core(init: WorkerInit) -> tuple[WorkerCore | None, str | None]:
    """The worker's core, or the one-paragraph reason it cannot start."""
    called = call_user(WorkerCore, init)  # user code runs at import (SIGINT never reaches a worker)
    exc = called.error
    if exc is None:
        return called.value, None
    if isinstance(exc, CaseFileError):  # each problem names its file
        return None, "; ".join(map(str, exc.problems))
    if isinstance(exc, ConfigError):
        return None, str(exc)
    return None, f"loading {init.cases_file} raised {describe_user_error(exc)}"


def process_main(conn: Connection, init: WorkerInit) -> None:
    """Entry point of a worker process (spawned with SIGINT blocked, so a Ctrl-C never reaches it here)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver alone answers Ctrl-C, also one sent to the group
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        asyncio.run(_serve(conn, init))
    except BaseException:  # noqa: BLE001 - boundary: a worker process's top level; the driver shows the bug
        _send(conn, CRASHED + traceback.format_exc().encode())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # a stuck agent thread must not keep the worker alive


_SENDING = threading.Lock()  # a Connection is not safe for two threads sending at once


def _send(conn: Connection, message: bytes) -> None:
    try:
        with _SENDING:
            conn.send_bytes(message)
    except OSError:
        pass  # the driver is gone: nobody is left to tell


class DriverRelay(events.RunListener):
    """The driver shows this worker's retries and windows in its progress line, as for a run played there."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def retrying(self, endpoint: str, attempt: int, most: int) -> None:
        _send(self.conn, RETRY + orjson.dumps([endpoint, attempt, most]))

    def window_changed(self, where: int | None, endpoint: str, size: int, ceiling: int) -> None:
        _send(self.conn, WINDOW + orjson.dumps([endpoint, size, ceiling]))


async def _serve(conn: Connection, init: WorkerInit) -> None:
    core, problem = load_core(init)
    if core is None:
        _send(conn, FAILED + (problem or "").encode())
        return
    _send(conn, READY)
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[bytes] = asyncio.Queue()

    def read() -> None:
        while True:
            try:
                message = conn.recv_bytes()
            except (EOFError, OSError):
                os._exit(0)  # the driver is gone (killed, or it exited at once on a second Ctrl-C)
            loop.call_soon_threadsafe(inbox.put_nowait, message)

    threading.Thread(target=read, name="agent-eval-driver-link", daemon=True).start()
    tasks: set[asyncio.Task[Any]] = set()
    finished: list[bytes] = []  # sent together once the loop has run every callback that was ready

    def send_finished() -> None:
        _send(conn, RESULT + pack_results(finished))
        finished.clear()
        if core.spent_changed:  # right behind the runs that spent it: a worker that dies later loses none
            core.spent_changed = False
            _send(conn, SPENT + orjson.dumps(core.spent()))

    async def play(index: int, trial: int) -> None:
        result = await core.play(index, trial)
        if not finished:
            loop.call_soon(send_finished)
        finished.append(result)

    def done(task: asyncio.Task[Any]) -> None:
        tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            _send(conn, CRASHED + "".join(traceback.format_exception(exc)).encode())
            os._exit(1)

    core.player.command.listeners.add(DriverRelay(conn))
    while True:  # until the driver says FINISH or STOP
        message = await inbox.get()
        kind, payload = message[:1], message[1:]
        if kind == BATCH:
            for index, trial in orjson.loads(payload):
                task = asyncio.create_task(play(index, trial))
                tasks.add(task)
                task.add_done_callback(done)
        elif kind == LIMITS:
            limits = orjson.loads(payload)
            core.player.command.endpoints.set_limits(limits["ceiling"], limits["share"])
        elif kind in (FINISH, STOP):
            if kind == STOP:
                for task in tasks:
                    task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=None if kind == FINISH else 1.0)
            await asyncio.sleep(0)  # the last runs' send_finished
            await core.close()
            _send(conn, USAGE + orjson.dumps(core.spent()))
            return

