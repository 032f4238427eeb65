"""Playing one run: its case slot's env template, the episode (agent, tools, user), and its scoring.

The scheduler (`run/runner.py`) and the workers (`run/worker.py`, under --workers or --ray) both play
every run through a `Player`, so a run played here or on a worker is the same code.
"""
from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_eval.flags.rows import TIMEOUT
from agent_eval.records import Case, RunRecord
from agent_eval.provider import keying, state
from agent_eval.provider.endpoints import merge_summaries
from agent_eval.provider.tape import Tape, using
from agent_eval.run import collector
from agent_eval.run.agents.base import BUILT_IN
from agent_eval.run.config import Settings, endpoint_settings
from agent_eval.run.episode import play_run
from agent_eval.run.journal import encode_run
from agent_eval.run.world import EnvTemplate, case_template, expected_of
from agent_eval.score.judge import judge_summary
from agent_eval.score.pipeline import ScoringContext, score_run
from agent_eval.score.usage import add_summaries
from agent_eval.run.simulator import user_sim_summary
from agent_eval.suite.cases import Suite

if TYPE_CHECKING:
    from agent_eval.run.agents import Agent
    from agent_eval.run.mcp_sessions import ServerPool
    from agent_eval.run.simulator import Simulator

GC_EVERY_RUNS = 256


class GcPacer:
    """Garbage collection while runs are played: automatic collection off, a young one every few runs.

    Each run's env copy allocates an object per JSON value (hundreds of thousands for a large env), and
    automatic collection would rescan the other runs' envs again and again, tripling the copy's cost.
    Envs and traces are trees that reference counting frees, so collection runs only every
    GC_EVERY_RUNS finished runs, for the few cycles (exceptions, asyncio internals) left behind. The
    suite and its envs are long-lived: they are frozen, so that no collection rescans them.
    """

    def __init__(self) -> None:
        self.finished = 0
        self._was_enabled = True

    def pause(self) -> None:
        collector.release()  # the command's start-up is over (run/collector.py)
        # The young generations only: the old one holds every imported module, where a full pass costs
        # 20-35 ms per command (bench/README.md, start-up) and finds a few dozen objects.
        gc.collect(1)
        gc.freeze()
        self._was_enabled = gc.isenabled()
        gc.disable()

    def resume(self) -> None:
        gc.unfreeze()
        if self._was_enabled:
            gc.enable()

    def run_finished(self) -> None:
        self.finished += 1
        if self.finished % GC_EVERY_RUNS == 0:
            # Generation 0 holds only what was allocated since the last collection and is alive; every
            # 8th time generation 1 too, for cycles promoted while their run was still in flight.
            gc.collect(1 if self.finished % (8 * GC_EVERY_RUNS) == 0 else 0)


@dataclass
class CaseSlot:
    """One selected case while it runs: its env template (built lazily, freed when done) and results."""

    case: Case
    trials: list[int]
    skip: str | None = None
    runs: dict[int, RunRecord] = field(default_factory=dict)  # trial -> run without trace
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)  # trial -> journal position
    template: EnvTemplate | None = None
    expected_env: Any = None
    in_flight: int = 0

    def prepare(self, suite: Suite, shared: Callable[[], EnvTemplate]) -> None:
        if self.template is None:
            own = self.case.get("initial_env") is not None
            self.template = case_template(suite, self.case) if own else shared()
            self.expected_env = expected_of(self.case, suite.tools, self.template)

    def release_if_idle(self, remaining: int) -> None:
        if self.in_flight == 0 and remaining == 0:
            self.template = None
            self.expected_env = None


class Player:
    """Plays and scores one run of a case slot; holds what every run shares (agent, tools, MCP servers)."""

    def __init__(self, suite: Suite, cfg: Settings, agent: Agent, scoring: ScoringContext,
                 simulator: Simulator | None = None, tape: Tape | None = None,
                 command: state.CommandState | None = None) -> None:
        self.suite, self.cfg, self.agent, self.scoring = suite, cfg, agent, scoring
        # The command's endpoints, listeners and clients: current in each run it plays.
        self.command = command or state.new_state(endpoint_settings(cfg))
        self.tape = tape  # --record / --replay: the command's tape, each run's cassette opened from it
        self.simulator = simulator  # plays the user of scenario cases
        self.system_prompt = suite.settings.get("system_prompt")
        self.stop_tools = frozenset(suite.settings.get("stop_tools") or ())  # validated: tool names
        self.servers: ServerPool | None = None  # when the suite has MCP servers
        if suite.servers:
            from agent_eval.run.mcp_sessions import ServerPool

            self.servers = ServerPool(suite.servers)
        # The slot whose run starts next, for its MCP servers to start early (the scheduler knows it).
        self.upcoming: Callable[[], CaseSlot | None] = lambda: None
        self.gc = GcPacer()
        self._shared_template: EnvTemplate | None = None
        self._trace_json: dict[tuple[int, int], bytes] = {}  # (slot, trial) -> the trace as play_run encoded it

    def suite_template(self) -> EnvTemplate:
        """The suite's env, serialised once for every case that adds nothing to it (it may be megabytes)."""
        if self._shared_template is None:
            self._shared_template = EnvTemplate(self.suite.initial_env, self.suite.tools.backend)
        return self._shared_template

    def prepare(self, slot: CaseSlot) -> None:
        """Build the slot's env template and expected env, if not built yet."""
        slot.prepare(self.suite, self.suite_template)

    def uses_llm(self) -> bool:
        """True when a run here calls a model through agent_eval.llm (the agent, the judge, the simulator)."""
        return (getattr(self.agent, "name", None) == BUILT_IN or self.scoring.judge is not None
                or getattr(self.simulator, "model", None) is not None)

    def _env_blob(self, slot: CaseSlot) -> bytes | None:
        """The initial env a per-run MCP server gets, where the case or the suite gives one."""
        given = slot.case.get("initial_env") is not None or self.suite.settings.get("initial_env") is not None
        return slot.template.blob if given and slot.template is not None else None

    def _prestart_next(self, servers: ServerPool) -> None:
        """Start the next run's per-run MCP servers now, so their start is off the critical path."""
        upcoming = self.upcoming()
        if upcoming is not None:
            self.prepare(upcoming)
            # One set per run taken, for the run after it: each run then finds the set started for it.
            servers.prestart(self._env_blob(upcoming))

    async def play(self, slot: CaseSlot, trial: int) -> RunRecord:
        """Play and score one run of a prepared slot: the run record, trace included."""
        simulator = self.simulator if slot.case.get("scenario") is not None else None
        blob = None
        if self.servers is not None:
            blob = self._env_blob(slot)
            self._prestart_next(self.servers)
        assert slot.template is not None, "play() runs a prepared slot"
        run_tape = self.tape.open_run(slot.case["id"], trial) if self.tape is not None else None
        with using(run_tape), keying.for_run(slot.case["id"], trial), state.using(self.command):
            played = await play_run(slot.case, trial, self.agent, self.suite.tools, slot.template,
                                    self.system_prompt, self.cfg[TIMEOUT], simulator, self.servers, blob,
                                    self.stop_tools)
            if played.trace_json is not None:  # encoded once: the journal splices it in as it is
                self._trace_json[(id(slot), trial)] = played.trace_json
            # A replay miss is the run's error (the agent asked what the recording does not hold),
            # whatever the agent made of the failed request.
            error = run_tape.miss if run_tape is not None and run_tape.miss else played.error
            run = await score_run(slot.case, trial, played.trace, played.final_env, slot.expected_env,
                                  error, self.scoring)
        if run_tape is not None:
            unwritten = run_tape.tape.close_run(run_tape)
            problem = run_tape.miss or unwritten  # a judge's or simulator's miss; a cassette not written
            if problem is not None and (run["status"] != "error" or unwritten):
                run["status"], run["error"], run["success"] = "error", problem, False
                run["metrics"]["success"] = 0
        return run

    async def play_encoded(self, slot: CaseSlot, trial: int) -> tuple[RunRecord, bytes]:
        """Prepare the slot, play and score one run, and encode it as stored: (the run, its JSON line).

        A value JSON cannot hold (a scorer's huge int, a lone surrogate) is converted, in the run too."""
        self.prepare(slot)
        slot.in_flight += 1
        try:
            run = await self.play(slot, trial)
        finally:
            slot.in_flight -= 1
        return encode_run(run, self._trace_json.pop((id(slot), trial), None))

    async def aclose(self) -> None:
        """End the MCP servers of the suite, if it has any: none outlives the run."""
        if self.servers is not None:
            await self.servers.aclose()

    def spent(self, pricing: dict[str, Any] | None, workers: list[dict[str, Any]] | tuple[Any, ...] = (),
              ) -> dict[str, Any]:
        """summary.judge and summary.user_sim of this player, plus what workers reported."""
        return helper_spend(self.scoring, self.simulator, pricing, self.command, workers, self.tape)


def helper_spend(scoring: ScoringContext, simulator: Simulator | None, pricing: dict[str, Any] | None,
                 command: state.CommandState, workers: list[dict[str, Any]] | tuple[Any, ...] = (),
                 tape: Tape | None = None) -> dict[str, Any]:
    """summary.judge, summary.user_sim and summary.provider (and summary.replay when `tape` replays): this
    process's, plus what workers reported."""
    mine = {"judge": judge_summary(scoring.judge, pricing), "user_sim": user_sim_summary(simulator, pricing)}
    if tape is not None and tape.replay:
        mine["replay"] = tape.counts.summary()
    parts = [mine, *workers]
    spent: dict[str, Any] = {key: add_summaries([p[key] for p in parts if key in p]) for key in mine}
    spent["provider"] = merge_summaries([command.endpoints.summary(), *(p.get("provider") for p in workers)])
    return spent
