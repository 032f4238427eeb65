"""The scheduler: trials x cases under a concurrency limit, -x, the journal and the case entries.

Each run is played by a `Player` (run/player.py); under --workers or --ray the worker pool plays them
and this object journals what comes back, so the rest of the run does not know where runs were played.
"""
from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import agent_eval.llm as llm
from agent_eval.flags.rows import CONCURRENCY, EXITFIRST, MODEL, NO_JUDGE, REPEAT, THRESHOLD
from agent_eval.provider import events, state
from agent_eval.suite.cases import Suite
from agent_eval.suite.selection import skip_reason
from agent_eval.run.budget import UNLIMITED, Budget
from agent_eval.run.config import Settings, endpoint_settings
from agent_eval.report.dialogue import compact_dialogue
from agent_eval.report.reasons import LITE_KEY, raised_tool_calls
from agent_eval.run.journal import FLUSH_EVERY_S, Journal
from agent_eval.run.player import CaseSlot, Player
from agent_eval.records import Case, CaseEntry, RunRecord, Trace
from agent_eval.score.metrics import case_entry, skipped_entry
from agent_eval.score.pipeline import ScoringContext

if TYPE_CHECKING:
    from agent_eval.run.agents import Agent
    from agent_eval.provider.tape import Tape
    from agent_eval.run.pool import WorkerPool
    from agent_eval.run.simulator import Simulator

__all__ = ["CANCEL_GRACE_S", "CaseSlot", "Runner", "lite_run", "run_models"]

CANCEL_GRACE_S = 3.0


def run_models(trace: Trace, default: str | None) -> set[str]:
    """Every model whose tokens a run's trace recorded (a call without one used `default`)."""
    return {m for m in (call.get("model") or default for call in trace.get("llm_calls") or ()) if m}


def lite_run(run: RunRecord, case: Case) -> RunRecord:
    """A run record of `case` without its trace, kept in memory for the summary and the terminal report."""
    trace = run["trace"]
    lite = cast(RunRecord, {k: v for k, v in run.items() if k != "trace"})
    kept: dict[str, Any] = {"stop_reason": trace["stop_reason"], "agent_error": trace["agent_error"],
                     "agent_error_traceback": trace.get("agent_error_traceback")}
    if run["status"] != "passed":  # the terminal names the tool calls that raised (report/reasons.py)
        kept[LITE_KEY] = raised_tool_calls(trace)
    if run["status"] != "passed" and case.get("scenario") is not None:
        kept.update(compact_dialogue(trace))  # the terminal shows a failed scenario's dialogue
    lite["trace"] = cast(Trace, kept)
    return lite


def slot_entry(slot: CaseSlot, threshold: float) -> CaseEntry:
    """A case's entry (its runs lacking their traces); `not_run` with no finished run: Ctrl-C or -x came first
    (an errored run is finished)."""
    if slot.skip is not None:
        return skipped_entry(slot.case, slot.skip)
    return case_entry(slot.case, [slot.runs[t] for t in sorted(slot.runs)], threshold, "not_run")


def slot_bytes(slot: CaseSlot, journal: Journal) -> list[bytes]:
    """A case's runs' JSON as the journal wrote them (held in memory, never read back), in trial order."""
    return [journal.run_json(slot.offsets[t]) for t in sorted(slot.offsets)]


class Runner:
    """Runs the selected cases of a suite and keeps only small per-run rows in memory."""

    def __init__(self, suite: Suite, cases: list[Case], cfg: Settings, agent: Agent, scoring: ScoringContext,
                 journal: Journal, environ: Mapping[str, str] | None = None,
                 listeners: events.Listeners | None = None, simulator: Simulator | None = None,
                 tape: Tape | None = None) -> None:
        self.suite, self.cfg, self.scoring, self.journal = suite, cfg, scoring, journal
        env: Mapping[str, str] = os.environ if environ is None else environ
        self.slots = [CaseSlot(c, list(range(cfg[REPEAT])), skip_reason(c, env, not cfg[NO_JUDGE])) for c in cases]
        self.listeners = listeners or events.Listeners()  # the command's: told as each run finishes
        self.player = Player(suite, cfg, agent, scoring, simulator, tape,  # tape: --record / --replay
                             state.new_state(endpoint_settings(cfg), self.listeners))
        self.player.upcoming = lambda: None if self._stopping else self._next_slot()
        self._by_id: dict[str, CaseSlot] | None = None
        self._cursor = 0
        self._indexed: Iterator[tuple[int, int]] | None = None
        self.pool: WorkerPool | None = None  # under --workers N or --ray
        self._stopping = False
        self.stopped_early = False  # -x saw a failed run and took no new runs after it
        self.budget: Budget | None = None  # --max-cost
        self.stopped_at_budget = False  # the budget left no room for one more run
        self._started = 0  # runs taken by this process (played here or handed to workers)
        self._finished_here = 0
        self._run_ended: asyncio.Event | None = None  # set as each run finishes (the budget's probe waits)
        self.models_used: set[str] = set()  # every model whose tokens a run recorded (settings.prices)

    def restore(self, case_id: str, trial: int, run: RunRecord, position: tuple[int, int]) -> None:
        """Take a journaled run as done (--resume); a trial's latest record wins; errored runs run again."""
        if self._by_id is None:
            self._by_id = {slot.case["id"]: slot for slot in self.slots}
        slot = self._by_id.get(case_id)
        if slot is None or not 0 <= trial < self.cfg[REPEAT]:
            return  # no longer selected: the journal keeps it, the report does not
        if run["status"] == "error":
            slot.runs.pop(trial, None)
            slot.offsets.pop(trial, None)
            if trial not in slot.trials:
                slot.trials.append(trial)
                slot.trials.sort()
            return
        if trial in slot.trials:
            slot.trials.remove(trial)
        if self.budget is not None and trial not in slot.runs:
            self.budget.add_run(run.get("metrics") or {})
        self.models_used.update(run_models(run["trace"], self.cfg[MODEL]))
        slot.runs[trial] = lite_run(run, slot.case)
        slot.offsets[trial] = position
        self.journal.hold(position)

    @property
    def pending(self) -> int:
        return sum(len(s.trials) for s in self.slots if s.skip is None)

    def _work(self) -> Iterator[tuple[int, int]]:
        """Every pending (slot index, trial) in case order, here or handed to workers, until stopped."""
        for index, slot in enumerate(self.slots):
            self._cursor = index
            if slot.skip is None:
                while slot.trials and not self._stopping:
                    yield index, slot.trials.pop(0)

    def _next_slot(self) -> CaseSlot | None:
        """The slot of the run that will start next, if any (the work is taken in slot order)."""
        for slot in self.slots[self._cursor:]:
            if slot.skip is None and slot.trials:
                return slot
        return None

    def _room(self) -> int | None:
        """How many more runs the budget lets start now (None: wait for the probe run); stops at 0."""
        if self.budget is None:
            return None if self._stopping else UNLIMITED
        room = self.budget.room(self._started - self._finished_here)
        if room == 0 and not self._stopping and self.pending:
            self._stopping = self.stopped_at_budget = True  # as -x does: runs in flight finish
        return room

    def take(self, n: int) -> list[tuple[int, int]]:
        """Up to n pending (slot index, trial) pairs in case order; fewer when no more will come, or when
        the budget waits for its first run to finish."""
        if self._indexed is None:
            self._indexed = self._work()
        room = self._room()
        if not room:
            return []
        n = min(n, room)
        pairs = []
        for pair in self._indexed:
            self._start(*pair)
            pairs.append(pair)
            if len(pairs) == n:
                break
        return pairs

    @property
    def stopping(self) -> bool:
        """Ctrl-C, -x or a journal that cannot be written: no new run starts."""
        return self._stopping

    def stop_taking_runs(self) -> None:
        """No run starts after this (Ctrl-C, -x); runs in flight finish."""
        self._stopping = True

    async def run(self) -> None:
        """Run every pending (case, trial); cancellation (Ctrl-C) leaves finished runs journaled.

        Here, or on the worker processes or Ray actors of `self.pool` (--workers N, --ray): either way
        this process alone journals, so the rest of the run does not know where the runs were played.
        """
        if self.pool is None and self.player.uses_llm():
            llm.preload()  # not inside the first run's time
        self.player.gc.pause()
        try:
            if self.pool is not None:
                await self.pool.run(self)
            else:
                await self._run_here()
        finally:
            self._stopping = True
            await self.player.aclose()  # no MCP server outlives the run, Ctrl-C included
            self.journal.flush()
            self.player.gc.resume()

    async def _run_here(self) -> None:
        self._run_ended = asyncio.Event()
        work = self._work()
        workers = [asyncio.create_task(self._worker(work)) for _ in range(min(self.cfg[CONCURRENCY],
                                                                              max(1, self.pending)))]
        flusher = asyncio.create_task(self.flush_periodically())
        try:
            # Not gather: a cancelled gather waits for every child, and Ctrl-C must not wait for a stuck one.
            done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()  # a bug in a worker crashes loudly
        finally:
            self._stopping = True  # a worker whose cancellation got lost must still take no new run
            for task in (*workers, flusher):
                task.cancel()
            # An agent that swallows cancellation must not hold Ctrl-C hostage: wait a moment, then go on.
            await asyncio.wait((*workers, flusher), timeout=CANCEL_GRACE_S)

    async def flush_periodically(self) -> None:
        """Runs that finish just after a flush would otherwise wait for the next append to reach the disk."""
        while True:
            await asyncio.sleep(FLUSH_EVERY_S)
            self.journal.flush_if_pending()

    async def _worker(self, work: Iterator[tuple[int, int]]) -> None:
        while True:
            if self.budget is not None:
                while (room := self._room()) is None and not self._stopping:  # the probe run is in flight
                    assert self._run_ended is not None
                    self._run_ended.clear()
                    await self._run_ended.wait()
                if not room or self._stopping:
                    return
            pair = next(work, None)
            if pair is None:
                return
            index, trial = pair
            self._start(index, trial)
            slot = self.slots[index]
            # As stored: a value JSON cannot hold is converted, in the kept row too (as a worker sends it).
            run, run_json = await self.player.play_encoded(slot, trial)
            position = self.journal.append_json(slot.case["id"], trial, run_json)
            if position is None:  # the journal cannot be written: take no new run (the caller exits 2)
                self._stopping = True
                if self._run_ended is not None:
                    self._run_ended.set()  # workers waiting for the budget's probe run stop too
                return
            slot.offsets[trial] = position
            self.models_used.update(run_models(run["trace"], self.cfg[MODEL]))
            slot.release_if_idle(len(slot.trials))
            self._finished_run(slot, trial, lite_run(run, slot.case))

    def record(self, index: int, trial: int, run_json: bytes, lite: RunRecord, models: list[str]) -> None:
        """Journal a run played elsewhere (its JSON as the worker encoded it) and keep its lite row."""
        slot = self.slots[index]
        position = self.journal.append_json(slot.case["id"], trial, run_json)
        if position is None:  # the journal cannot be written: take no new run (the caller exits 2)
            self._stopping = True
            return
        slot.offsets[trial] = position
        self.models_used.update(models)
        self._finished_run(slot, trial, lite)

    def _start(self, index: int, trial: int) -> None:
        """Every run taken passes here, played here or handed to a worker."""
        self._started += 1
        self.listeners.run_started(str(self.slots[index].case["id"]), trial)

    def _finished_run(self, slot: CaseSlot, trial: int, lite: RunRecord) -> None:
        """Every journaled run passes here, wherever it was played."""
        slot.runs[trial] = lite
        self._finished_here += 1
        if self.budget is not None:
            self.budget.add_run(lite.get("metrics") or {})
            if self._run_ended is not None:
                self._run_ended.set()
        if lite["status"] == "failed" and self.cfg[EXITFIRST] and not self._stopping:
            self._stopping = self.stopped_early = True  # -x: runs in flight finish, no new one starts
        self.player.gc.run_finished()
        self.listeners.run_finished(str(slot.case["id"]), lite)

    def spent(self, pricing: dict[str, Any] | None) -> dict[str, Any]:
        """summary.judge and summary.user_sim of this process, plus every worker's."""
        return self.player.spent(pricing, self.pool.spent if self.pool else [])

    def case_entries(self) -> list[CaseEntry]:
        """The `cases` entries, with runs lacking their traces (they stay in the journal)."""
        return [slot_entry(slot, self.cfg[THRESHOLD]) for slot in self.slots]

    def run_bytes(self) -> Iterator[list[bytes]]:
        """Per case, its runs' JSON as the journal wrote them (held in memory, never read back), in trial order."""
        for slot in self.slots:
            yield slot_bytes(slot, self.journal)
