"""The core of every command that plays or scores a suite, in three phases its callers compose.

plan (`plan_run`): the suite, the resolved settings, the selected cases and every pre-run check, as a
`Plan`; play (`play`): a plan's cases through the run scheduler, with its pool, budget, tape and listeners;
assemble (`conclude.finish_report`): the report, built once, its files and the one exit code.
`run` and `run_suite` compose all three (`commands/run.py`'s `play_suite`); the pytest plugin plans each
case file once (`prepare`), then plays its cases batch by batch (`parts_of`, `play`) into one journal
(`open_journal`), and assembles once at the end of the session; `score` plans and assembles, its results
the recorded runs it scored. Nothing here is a module global: what a phase needs is handed to it.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from agent_eval.flags.rows import (
    AGENT, BASELINE, CONCURRENCY, JUDGE_MODEL, MAX_COST, MODEL, NO_JUDGE, OUTPUT_DIR, RECORD, REPEAT, REPLAY,
    REPLAY_MISS, TIMEOUT,
)
from agent_eval.commands.conclude import say
from agent_eval.commands.prepare import check_baseline, check_models, make_output_dir, prepare
from agent_eval.errors import ConfigError
from agent_eval.flags import Flags
from agent_eval.provider import cassette, tape
from agent_eval.records import Case
from agent_eval.report.files import history_path_of, journal_path_of
from agent_eval.report.model import new_run_id, now_iso
from agent_eval.run.config import Settings
from agent_eval.run.interrupt import Interrupts
from agent_eval.run.journal import Journal
from agent_eval.run.worker import build_parts, tape_of
from agent_eval.suite.cases import Suite
from agent_eval.suite.selection import skip_reason

if TYPE_CHECKING:
    from agent_eval.run.agents import Agent
    from agent_eval.run.resume import Resume
    from agent_eval.run.runner import Runner
    from agent_eval.run.simulator import Simulator
    from agent_eval.score.pipeline import ScoringContext


@dataclass
class Plan:
    """What a run will play: the suite, its resolved settings, the cases selected, where a relative agent
    SPEC starts, the run's id and start, and (with --resume) the run it resumes."""

    suite: Suite
    cfg: Settings
    cases: list[Case]
    agent_dir: Path
    digest: str  # the case file's sha256, as the journal records it
    run_id: str
    created_at: str
    resumed: Resume | None = None


def plan_run(flags: Flags, err: Console) -> Plan:
    """The plan of `run`: --resume's stored settings, the shared preparation, --lf, every check of what the
    runs will call, the baseline (`last` resolved), and the warnings a run prints before it plays."""
    resumed = None
    if flags.text("resume"):
        from agent_eval.run.resume import open_resume

        resumed = open_resume(flags)
        flags = resumed.flags
    prepared = prepare(flags, resumed.apply if resumed else None)
    suite, cfg = prepared.suite, prepared.cfg
    cases, last_failed = _select_last_failed(flags, cfg, prepared.cases,
                                             lambda message: say(err, f"warning: {message}"))
    cfg = cfg.replace(last_failed=last_failed)
    check_runs(cfg, cases, suite, baseline=True)
    for warning in suite.warnings:
        say(err, warning)
    digest = hashlib.sha256(suite.path.read_bytes()).hexdigest()
    if resumed and resumed.stored.cases_sha256 not in (None, digest):
        err.print(f"warning: {suite.path} has changed since run {resumed.run_id} started; its finished runs "
                  "were scored against the old file (agent-eval rescore re-scores them all).",
                  highlight=False, markup=False)
    if suite.servers:
        from agent_eval.run.mcp_sessions import shared_state_warning

        shared = shared_state_warning(suite.servers, cfg[CONCURRENCY])
        if shared:
            say(err, shared)
    agent_dir = flags.path("agent_dir") or (suite.base_dir if flags.text("agent") is None else Path.cwd())
    return Plan(suite, cfg, cases, agent_dir, digest, resumed.run_id if resumed else new_run_id(),
                resumed.created_at if resumed else now_iso(), resumed)


def check_runs(cfg: Settings, cases: list[Case], suite: Suite, baseline: bool = False) -> None:
    """Every check of what the runs of `cases` will call (exit 2 before anything plays): the agent's, the
    judge's and the simulator's models, --agent gold's calls, (`baseline`) the --baseline report and the
    gates, and with --max-cost their prices."""
    runnable = [c for c in cases if skip_reason(c, os.environ, not cfg[NO_JUDGE]) is None]
    check_models(cfg, runnable, suite)
    if baseline:
        check_baseline(cfg)
    if cfg[MAX_COST] is not None and runnable:
        from agent_eval.run.budget import require_prices
        from agent_eval.score.judge import needs_judge

        judged = not cfg[NO_JUDGE] and needs_judge(runnable) is not None
        simulated = any(c.get("scenario") is not None for c in runnable)
        require_prices([("agent", cfg[MODEL]), ("judge", cfg[JUDGE_MODEL] if judged else None),
                        ("user simulator", cfg.user_sim.model if simulated else None)],
                       suite.settings.get("pricing"), suite.path)


def _select_last_failed(flags: Flags, cfg: Settings, cases: list[Case],
                        warn: Callable[[str], None]) -> tuple[list[Case], list[str] | None]:
    """--lf: keep the cases that failed or errored in the newest earlier run of this case file; (the cases,
    their ids when they are fewer than the cases selected)."""
    ids = flags.texts("last_failed_ids") or None  # a resumed run's stored selection
    if ids is None and flags.is_on("last_failed"):
        from agent_eval.report.history import last_failed

        db = history_path_of(cfg[OUTPUT_DIR])
        run_id, found = last_failed(db, cfg.cases_file)
        if run_id is None:
            warn(f"--lf: {db} holds no earlier finished run of {cfg.cases_file}; running every selected case.")
        elif not found:
            warn(f"--lf: no case failed or errored in the last run ({run_id}); running every selected case.")
        else:
            ids = tuple(found)
    if ids is None:
        return cases, None
    wanted = set(ids)
    kept = [c for c in cases if c["id"] in wanted]
    if not kept:
        raise ConfigError(f"--lf: none of the cases that failed last time ({', '.join(sorted(wanted))}) is "
                          "kept by --filter; drop --filter or --lf.")
    if len(kept) < len(cases):
        return kept, list(ids)
    if not flags.texts("last_failed_ids"):  # every selected case failed or errored last time: a full run
        warn("--lf: every selected case failed or errored in the last run; running every selected case.")
    return kept, None


def pick_baseline(cfg: Settings, agent_name: str, ids: list[str], created_at: str,
                  run_id: str | None = None) -> tuple[Settings, str | None]:
    """--baseline last: (the settings with the newest earlier report that can be gated against as their
    baseline, None), or (the settings with none, the warning) when there is no earlier run (then nothing is
    gated). A ConfigError when none qualifies."""
    if cfg[BASELINE] != "last":
        return cfg, None
    from agent_eval.report.baseline import NoEarlierRun, pick_last

    try:
        return cfg.replace(baseline=str(pick_last(cfg[OUTPUT_DIR], cfg.cases_file, agent_name, ids, created_at,
                                                  run_id))), None
    except NoEarlierRun as exc:
        return cfg.replace(baseline=None), f"warning: {exc}"


def parts_of(plan: Plan, cases: list[Case]) -> tuple[Agent, Simulator | None, ScoringContext]:
    """The checks of what the runs of `cases` will call, then the agent, the simulator and the scoring."""
    check_runs(plan.cfg, cases, plan.suite)
    return build_parts(plan.suite, cases, plan.cfg, plan.agent_dir)


def journal_header(plan: Plan) -> dict[str, Any]:
    """What a run's journal records first: enough for --resume to play the rest."""
    return {"run_id": plan.run_id, "created_at": plan.created_at, "settings": plan.cfg.settings(),
            "cases_file": str(plan.cfg.cases_file), "agent_dir": str(plan.agent_dir.resolve()),
            "cases_sha256": plan.digest}


def open_journal(cfg: Settings, name: str, header: dict[str, Any], run_id: str) -> Journal:
    """The journal `name` in the output folder (made here: one that cannot be made is exit 2)."""
    make_output_dir(cfg)
    return Journal(journal_path_of(cfg[OUTPUT_DIR], name), header, run_id=run_id)


def check_journal(journal: Journal, flag: str) -> None:
    """Exit 2 before anything plays when the journal cannot be written, naming the flag that moves it."""
    if journal.failed:
        raise ConfigError(f"cannot write the journal {journal.path} ({journal.failed}); free some space or "
                          f"pass {flag} with a writable folder.")


def play(runner: Runner, interrupts: Interrupts) -> bool:
    """Play the runner's runs until they are done or a Ctrl-C stops them; True when one did. Its listeners
    are told the command finished, however it ended."""
    try:
        return interrupts.run(runner.run())
    finally:
        runner.listeners.command_finished()


def open_tape(cfg: Settings, suite: Suite, cases: list[Case]) -> tape.Tape | None:
    """This command's tape (docs/ci-without-a-key.md), or None: --replay: every run to play has a cassette
    of this suite (else exit 2), each read when its run starts; --record: the folder locked, and refused
    when it holds another recording (unless --replay-miss live extends it), its cassette.json written."""
    replay, record = cfg[REPLAY], cfg[RECORD]
    if replay is None and record is None:
        return None
    label = cassette.suite_label(suite.name, cfg.cases_file)
    runs = [(c["id"], trial) for c in cases if skip_reason(c, os.environ, not cfg[NO_JUDGE]) is None
            for trial in range(cfg[REPEAT])]
    if replay is not None:
        cassette.check_recorded(replay, cfg.recorded or {}, label, runs)
        return tape_of(cfg)
    from agent_eval.provider.recording import open_recording
    from importlib.metadata import PackageNotFoundError, version

    from agent_eval.redaction import redact_secrets, redact_urls

    try:
        ours = version("agent-eval-trials")
    except PackageNotFoundError:  # a source tree that was never installed
        ours = "unknown"

    assert record is not None
    header = {"suite": label, "cases_file": os.path.relpath(cfg.cases_file.resolve(), record.resolve()),
              "agent": redact_secrets(redact_urls(cfg[AGENT]) or ""), "model": cfg[MODEL],
              "judge_model": cfg[JUDGE_MODEL] if not cfg[NO_JUDGE] else None,
              "user_model": cfg.user_sim.model if cfg.user_sim else None, "repeat": cfg[REPEAT],
              "agent_eval_version": ours, "created_at": now_iso()}
    recording = open_recording(record, header, runs, extend=cfg[REPLAY_MISS] == "live")
    recording.timeout = cfg[TIMEOUT]
    return recording
