"""`agent-eval run`: the core's plan, play and assembly (commands/core.py) with a terminal: the progress line,
the report printed, the exit code."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from rich.console import Console
from rich.markup import escape

from agent_eval.flags.rows import CONCURRENCY, MAX_COST, MODEL, OTLP_ENDPOINT, OUTPUT_DIR, QUIET, RAY, WORKERS
from agent_eval.commands.conclude import finish_report, offer_runs, say
from agent_eval.commands.core import (check_journal, journal_header, open_journal, open_tape, pick_baseline,
                                      plan_run, play)
from agent_eval.commands.prepare import make_output_dir
from agent_eval.flags import Flags
from agent_eval.plugins import listeners as plugin_listeners
from agent_eval.records import Report, RunRecord
from agent_eval.provider import events
from agent_eval.provider.endpoints import WindowBoard
from agent_eval.run.config import Settings
from agent_eval.run.interrupt import Interrupts
from agent_eval.run.runner import Runner
from agent_eval.run.worker import WorkerInit, build_parts

RUNNING = "running"
SHOW_RETRY_FROM = 3  # without a progress display, an endpoint's retries are printed from this attempt on


def run_command(flags: Flags, console: Console, err: Console) -> int:
    """Run a suite and return the exit code."""
    return play_suite(flags, console, err).code


class Played(NamedTuple):
    """What `play_suite` did: the exit code, the report (None when the journal failed; its runs without their
    traces), and per case entry its runs as JSON bytes (`run_bytes()`, callable again)."""

    code: int
    report: Report | None
    run_bytes: Callable[[], Any]


def play_suite(flags: Flags, console: Console | None, err: Console, interrupts: Interrupts | None = None) -> Played:
    """Run a suite and write its report: the core's plan, play and assembly (commands/core.py). With no
    `console` (the library's `run_suite`) there is no progress display and no report on the terminal;
    `interrupts` stops it as a Ctrl-C does (the library's own, from another thread)."""
    plan = plan_run(flags, err)
    suite, cases, cfg, resumed = plan.suite, plan.cases, plan.cfg, plan.resumed
    agent, simulator, scoring = build_parts(suite, cases, cfg, plan.agent_dir)
    plan.cfg, warning = pick_baseline(cfg, agent.name, [str(c["id"]) for c in cases], plan.created_at, plan.run_id)
    cfg = plan.cfg
    if warning:  # exit 2 before anything runs when no earlier run is comparable
        say(err, warning)
    run_tape = open_tape(cfg, suite, cases)
    pool = None
    # Whatever ends the run from here on, the pool's on_close runs (a local Ray instance never outlives
    # it) and the recording's folder is let go.
    try:
        make_output_dir(cfg)
        if cfg[WORKERS] != 1 or cfg[RAY]:  # started here, so that a cluster that cannot be joined is exit 2
            pool = open_pool(cfg, WorkerInit(cfg.cases_file, plan.digest, [c["id"] for c in cases], cfg,
                                             plan.agent_dir.resolve(), run_tape is not None and run_tape.extends))
            cfg = plan.cfg = cfg.replace(workers=pool.asked)  # settings.workers: how many were asked for (Ray's CPUs)
        note = _idle_workers_note(cfg, len(pool.hosts)) if pool is not None else None
        if note:
            say(err, note)
        run_id, created_at = plan.run_id, plan.created_at
        journal = resumed.journal if resumed else open_journal(cfg, run_id, journal_header(plan), run_id)
        check_journal(journal, "--output-dir")
        # the run's events (docs/architecture.md), told to the plugins' listeners first
        listeners = journal.listeners = events.Listeners(*plugin_listeners(lambda line: say(err, line)))
        sender = offer_runs(journal, cfg[OTLP_ENDPOINT], {"run_id": run_id, "created_at": created_at,
                                                          "suite": suite.name, "model": cfg[MODEL]})
        progress = _progress(console, cfg)
        board = pool.board if pool is not None else WindowBoard()
        listeners.add(board)  # before the progress line, which shows it
        listeners.add(ProgressLine(progress, err, cfg[QUIET], board))
        runner = Runner(suite, cases, cfg, agent, scoring, journal, listeners=listeners, simulator=simulator,
                        tape=run_tape)
        runner.pool = pool
        if cfg[MAX_COST] is not None:
            runner.budget = _budget(cfg, runner, suite, journal.path if resumed else None)
        if resumed:
            resumed.restore(runner.restore)
        if progress is None and console is not None and not cfg[QUIET]:  # a log: a line every minute
            from agent_eval.commands import heartbeat as beats

            done = sum(len(slot.runs) for slot in runner.slots)
            heartbeat = beats.Heartbeat(lambda line: say(err, line), total=done + runner.pending, done=done,
                                        every_s=beats.EVERY_S)
            listeners.add(heartbeat)
            heartbeat.start()
        with interrupts or Interrupts() as interrupts:
            try:
                if progress:
                    progress.add_task(RUNNING, total=runner.pending)
                    progress.start()
                if pool is not None:
                    pool.listeners = listeners
                interrupted = play(runner, interrupts)
            finally:
                journal.close()
            if sender is not None:
                interrupts.after_run.append(sender.stop.set)
                if interrupted:  # the command must end soon: the collector gets a short wait only
                    from agent_eval.report.otlp_post import INTERRUPTED_FINISH_S

                    sender.finish_s = INTERRUPTED_FINISH_S
            if runner.stopped_at_budget and runner.budget is not None and runner.budget.unpriced:
                from agent_eval.run.budget import budget_warning

                say(err, budget_warning(runner.budget.unpriced, runner.models_used, suite.settings.get("pricing"),
                                        suite.path))
            # A Ctrl-C or SIGTERM that comes while the collector is waited for still ends the command as one
            # (130 or 143), and the report says so.
            code, report = finish_report(runner, suite, cfg, agent.name, run_id, created_at, interrupted, console,
                                         err, stop_code=interrupts.exit_code, sender=sender,
                                         settle=lambda code: interrupts.exit_code if interrupts.count else code)
            return Played(code, report, runner.run_bytes)
    finally:
        if pool is not None:
            pool.on_close()
        if run_tape is not None:
            run_tape.close()


def _budget(cfg: Settings, runner: Runner, suite: Any, resumed_journal: Path | None) -> Any:
    """The --max-cost budget: this process's judge and simulator spend (workers' included) read as runs
    finish; a resumed run's earlier processes' spend counts against it too."""
    from agent_eval.run.budget import Budget
    from agent_eval.run.journal import read_usage

    pricing = suite.settings.get("pricing")

    def helpers() -> float | None:
        from agent_eval.run.simulator import user_sim_summary
        from agent_eval.score.judge import judge_summary

        judge, simulator = runner.scoring.judge, runner.player.simulator
        if judge is None and simulator is None and runner.pool is None:
            return 0.0  # nothing but the agent spends: its runs' costs are counted as they finish
        parts = [judge_summary(judge, pricing), user_sim_summary(simulator, pricing),
                 *(worker.get(key) or {} for worker in (runner.pool.spent if runner.pool else [])
                   for key in ("judge", "user_sim"))]
        costs = [part.get("cost_usd", 0.0) for part in parts]
        return None if None in costs else float(sum(costs))

    limit = cfg[MAX_COST]
    assert limit is not None
    budget = Budget(limit, helpers)
    for usage in read_usage(resumed_journal) if resumed_journal is not None else ():
        budget.earlier_usd += sum((usage.get(key) or {}).get("cost_usd") or 0.0 for key in ("judge", "user_sim"))
    return budget


def _idle_workers_note(cfg: Settings, started: int) -> str | None:
    """One line when --concurrency leaves some of the workers settings.workers records without a slot."""
    if started >= cfg[WORKERS]:
        return None
    asked = (f"the {cfg[WORKERS]} workers" if cfg.sources.get("workers") == "flag"
             else f"the {cfg[WORKERS]} workers (one per CPU of the Ray cluster)")
    starts = "1 worker starts" if started == 1 else f"{started} workers start"
    return (f"note: --concurrency {cfg[CONCURRENCY]} gives {started} of {asked} a slot; {starts} "
            f"(settings.workers records {cfg[WORKERS]}).")


def open_pool(cfg: Settings, init: WorkerInit) -> Any:
    """The workers of --workers N (local processes) or --ray (actors); nothing starts before the run."""
    if cfg[RAY]:
        from agent_eval.run.ray_hosts import open_ray_pool

        return open_ray_pool(cfg, init, cfg[OUTPUT_DIR])
    from agent_eval.run.pool import ProcessHost, WorkerPool, split_concurrency

    slots = split_concurrency(cfg[CONCURRENCY], cfg[WORKERS])
    return WorkerPool([ProcessHost(number, n, init) for number, n in enumerate(slots)], asked=cfg[WORKERS])


class ProgressLine(events.RunListener):
    """The progress line: runs done, "retrying <endpoint> (attempt n/8)" while a request is retried, "rate
    limited: 9 of 50 in flight" while a window is below its ceiling. Without a progress display (a log), a
    few plain lines instead: an endpoint's retries from the third attempt on (a dead endpoint is not 39
    silent seconds), and the windows each time they reach a new low (never one line per 429)."""

    def __init__(self, progress: Any, err: Console, quiet: bool, board: WindowBoard) -> None:
        self.progress, self.err, self.quiet, self.board = progress, err, quiet, board
        self._shown: set[tuple[str, int]] = set()  # (endpoint, attempt) of the retries printed in a log
        self._lowest: list[int] = []  # the fewest requests in flight printed in a log

    def run_finished(self, case_id: str, run: RunRecord) -> None:
        if self.progress is not None:
            self.progress.update(self.progress.task_ids[0], description=_status(self.board), advance=1)

    def retrying(self, endpoint: str, attempt: int, most: int) -> None:
        # A rate-limited request has no cap: past the 8th attempt it is the window's business (below).
        capped = attempt <= most
        message = f"retrying {endpoint} (attempt {attempt}/{most})" if capped else (
            f"retrying {endpoint} (attempt {attempt}, rate limited)")
        if self.progress is not None:
            self.progress.update(self.progress.task_ids[0], description=escape(message))
        elif capped and not self.quiet and attempt >= SHOW_RETRY_FROM and (endpoint, attempt) not in self._shown:
            self._shown.add((endpoint, attempt))
            say(self.err, message)

    def window_changed(self, where: int | None, endpoint: str, size: int, ceiling: int) -> None:
        if self.progress is not None:  # the board has heard of the change: it listens first
            self.progress.update(self.progress.task_ids[0], description=_status(self.board))
            return
        line = self.board.line()
        in_flight = self.board.in_flight()
        if line and not self.quiet and (not self._lowest or in_flight < self._lowest[0]):
            self._lowest[:] = [in_flight]
            say(self.err, line)

    def command_finished(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _status(board: WindowBoard) -> str:
    """The progress line between retries: "running", or the windows below their ceiling."""
    line = board.line()
    return escape(line) if line else RUNNING


def _progress(console: Console | None, cfg: Settings) -> Any:
    if console is None or cfg[QUIET] or not console.is_terminal:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=True)
