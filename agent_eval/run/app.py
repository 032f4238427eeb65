"""The `run` command end to end: load, configure, run, report, and decide the exit code."""
from __future__ import annotations

import hashlib
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from agent_eval import llm
from agent_eval.suite.cases import load_suite, select_cases, skip_reason
from agent_eval.run.config import DEFAULTS, RunConfig, require_llm, resolve
from agent_eval.errors import ConfigError
from agent_eval.run.interrupt import Interrupts
from agent_eval.run.journal import Journal, append_usage, read_usage
from agent_eval.score.judge import needs_judge, require_judge
from agent_eval.report.baseline import gate_against, resolve_baseline, validate_baseline
from agent_eval.report.outputs import write_extras
from agent_eval.report.files import write_json_report
from agent_eval.report.model import EXIT_INTERRUPTED, build_report, exit_code, new_run_id, now_iso
from agent_eval.run.runner import Runner
from agent_eval.score.metrics import summarize
from agent_eval.run.scenario import require_user
from agent_eval.score.prices import price_sources
from agent_eval.run.worker import WorkerInit, build_parts
from agent_eval.score.usage import add_summaries

INTERRUPTED = EXIT_INTERRUPTED
RUNNING = "running"
SHOW_RETRY_FROM = 3  # without a progress display, an endpoint's retries are printed from this attempt on


def prepare(flags: dict[str, Any], adjust: Callable[[RunConfig], None] | None = None,
            warn: Callable[[str], None] | None = None) -> tuple[Any, list[dict], RunConfig]:
    """Everything checked before a run starts; raises CaseFileError / ConfigError (exit 2).

    `adjust` amends the resolved settings before they are checked (--resume restores stored ones).
    """
    suite = load_suite(Path(flags.get("cases") or "cases/test_cases.json"))
    cfg = resolve(flags, suite)
    if adjust is not None:
        adjust(cfg)
    cases = select_cases(suite.cases, cfg.filters)
    if not cases:
        raise ConfigError(f"no case of {suite.path} matches --filter {' '.join(cfg.filters)!r}; "
                          "`agent-eval list` shows the ids and tags.")
    cases = _select_last_failed(flags, cfg, cases, warn or (lambda message: None))
    runnable = [c for c in cases if skip_reason(c, os.environ, cfg.judge) is None]
    if cfg.agent == "openai" and runnable:
        require_llm(cfg, "openai")
    judged = needs_judge(runnable) if cfg.judge else None
    if judged is not None:
        require_judge(cfg.judge_model, cfg.judge_api_key, judged, suite.path)
    require_user(cfg.user_sim, runnable, suite.path)
    baseline = flags.get("baseline")
    validate_baseline(Path(baseline) if baseline and baseline != "last" else None, cfg.gates)
    return suite, cases, cfg


def _select_last_failed(flags: dict[str, Any], cfg: RunConfig, cases: list[dict],
                        warn: Callable[[str], None]) -> list[dict]:
    """--lf: keep the cases that failed or errored in the newest earlier run of this case file."""
    ids = flags.get("last_failed_ids")  # a resumed run's stored selection
    if ids is None and flags.get("last_failed"):
        from agent_eval.report.history import HISTORY_FILE, last_failed

        db = cfg.output_dir / HISTORY_FILE
        run_id, found = last_failed(db, cfg.cases_file)
        if run_id is None:
            warn(f"--lf: {db} holds no earlier finished run of {cfg.cases_file}; running every selected case.")
        elif not found:
            warn(f"--lf: no case failed or errored in the last run ({run_id}); running every selected case.")
        else:
            ids = found
    if ids is None:
        return cases
    cfg.last_failed = list(ids)
    wanted = set(ids)
    kept = [c for c in cases if c["id"] in wanted]
    if not kept:
        raise ConfigError(f"--lf: none of the cases that failed last time ({', '.join(sorted(wanted))}) is "
                          "kept by --filter; drop --filter or --lf.")
    return kept


def run_command(flags: dict[str, Any], console: Console, err: Console) -> int:
    """Run a suite and return the exit code."""
    resumed = None
    if flags.get("resume"):
        from agent_eval.run.resume import open_resume

        resumed = open_resume(flags)
        flags = resumed.flags
    suite, cases, cfg = prepare(flags, resumed.apply if resumed else None,
                                lambda message: err.print(f"warning: {message}", highlight=False, markup=False,
                                                          soft_wrap=True))
    for warning in suite.warnings:
        err.print(warning, highlight=False, markup=False, soft_wrap=True)
    digest = hashlib.sha256(suite.path.read_bytes()).hexdigest()
    if resumed and resumed.stored.cases_sha256 not in (None, digest):
        err.print(f"warning: {suite.path} has changed since run {resumed.run_id} started; its finished runs "
                  "were scored against the old file (agent-eval rescore re-scores them all).",
                  highlight=False, markup=False)
    if suite.servers:
        from agent_eval.run.mcp_sessions import shared_state_warning

        warning = shared_state_warning(suite.servers, cfg.concurrency)
        if warning:
            err.print(warning, highlight=False, markup=False, soft_wrap=True)
    agent_dir = Path(flags["agent_dir"]) if flags.get("agent_dir") else (
        suite.base_dir if flags.get("agent") is None else Path.cwd())
    agent, simulator, scoring = build_parts(suite, cases, cfg, agent_dir)
    try:
        cfg.output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the output directory {cfg.output_dir} ({exc.strerror or exc}); "
                          "pass --output-dir with a writable folder.") from None
    pool = None
    if cfg.workers != 1 or cfg.ray:  # started here, so that a cluster that cannot be joined is exit 2
        pool = open_pool(cfg, WorkerInit(cfg.cases_file, digest, [c["id"] for c in cases], cfg,
                                         agent_dir.resolve()))
    try:  # whatever ends the run from here on, the pool's on_close runs: a local Ray instance never outlives it
        note = _idle_workers_note(cfg, len(pool.hosts)) if pool is not None else None
        if note:
            err.print(note, highlight=False, markup=False, soft_wrap=True)
        run_id = resumed.run_id if resumed else new_run_id()
        created_at = resumed.created_at if resumed else now_iso()
        journal = resumed.journal if resumed else Journal(
            cfg.output_dir / f"{run_id}.jsonl",
            {"run_id": run_id, "created_at": created_at, "settings": cfg.settings(),
             "cases_file": str(cfg.cases_file), "agent_dir": str(agent_dir.resolve()), "cases_sha256": digest},
            run_id=run_id)
        if journal.failed:
            raise ConfigError(f"cannot write the journal {journal.path} ({journal.failed}); free some space or "
                              "pass --output-dir with a writable folder.")
        progress = _progress(console, cfg)
        runner = Runner(suite, cases, cfg, agent, scoring, journal,
                        on_run_done=(lambda: progress.update(progress.task_ids[0], description=RUNNING, advance=1))
                        if progress else None)
        runner.simulator = simulator
        runner.pool = pool
        if resumed:
            resumed.restore(runner.restore)
        with Interrupts() as interrupts:
            try:
                if progress:
                    progress.add_task(RUNNING, total=runner.pending)
                    progress.start()
                llm.set_retry_listener(_retry_display(progress, err, cfg.quiet))
                interrupted = interrupts.run(runner.run())
            finally:
                llm.set_retry_listener(None)
                if progress:
                    progress.stop()
                journal.close()
            return finish(runner, suite, cfg, agent.name, run_id, created_at, interrupted, console, err)
    finally:
        if pool is not None:
            pool.on_close()


def _idle_workers_note(cfg: RunConfig, started: int) -> str | None:
    """One line when --concurrency leaves some of the workers settings.workers records without a slot."""
    if started >= cfg.workers:
        return None
    asked = (f"the {cfg.workers} workers" if cfg.sources.get("workers") == "flag"
             else f"the {cfg.workers} workers (one per CPU of the Ray cluster)")
    starts = "1 worker starts" if started == 1 else f"{started} workers start"
    return (f"note: --concurrency {cfg.concurrency} gives {started} of {asked} a slot; {starts} "
            f"(settings.workers records {cfg.workers}).")


def open_pool(cfg: RunConfig, init: WorkerInit) -> Any:
    """The workers of --workers N (local processes) or --ray (actors); nothing starts before the run."""
    if cfg.ray:
        from agent_eval.run.ray_hosts import open_ray_pool

        return open_ray_pool(cfg, init, cfg.output_dir)
    from agent_eval.run.pool import ProcessHost, WorkerPool, split_concurrency

    slots = split_concurrency(cfg.concurrency, cfg.workers)
    return WorkerPool([ProcessHost(number, n, init) for number, n in enumerate(slots)])


def finish(runner: Runner, suite: Any, cfg: RunConfig, agent_name: str, run_id: str, created_at: str,
           interrupted: bool, console: Console, err: Console) -> int:
    """Write the reports and print the verdict; a second Ctrl-C here exits at once."""
    try:
        if runner.journal.failed:
            err.print(f"error: cannot write the journal {runner.journal.path} ({runner.journal.failed}); the "
                      "run took no new runs after that, and no report was written. The runs it flushed are "
                      f"kept: once the disk has room, finish with: {resume_hint(run_id, cfg.output_dir)}",
                      highlight=False, markup=False, soft_wrap=True)
            return 2
        entries = runner.case_entries()
        rows = [{"id": e["id"], "status": e["status"], "runs": e["runs"]} for e in entries]
        report = build_report(run_id=run_id, created_at=created_at, suite=suite.name, agent=agent_name,
                              model=cfg.model, cases_file=str(cfg.cases_file), settings=cfg.settings(),
                              summary=summarize(rows, cfg.repeat, suite.scorers), cases=entries,
                              interrupted=interrupted,
                              stopped_early=runner.stopped_early and not interrupted)
        pricing = suite.settings.get("pricing")
        spent = runner.spent(pricing)
        earlier = read_usage(runner.journal.path)  # what earlier processes of a resumed run spent
        try:
            append_usage(runner.journal.path, spent)
        except OSError as exc:
            err.print(f"warning: could not record this process's judge and simulator spend beside "
                      f"{runner.journal.path}: {exc.strerror or exc}", highlight=False, markup=False)
        for key in spent:
            report["summary"][key] = add_summaries([u[key] for u in earlier if key in u] + [spent[key]])
        helpers = [(cfg.judge_model, "judge"), (cfg.user_sim.model if cfg.user_sim else None, "user_sim")]
        models = runner.models_used | {m for m, key in helpers if m and report["summary"][key].get("calls")}
        report["settings"]["prices"] = price_sources(models, pricing)
        baseline = resolve_baseline(cfg.baseline, cfg, agent_name, run_id, created_at, err)
        if baseline is not None and not interrupted:
            report["gate"] = gate_against(baseline, report, cfg.gates)
        regression = bool(report["gate"] and report["gate"].get("regression"))
        report["exit_code"] = INTERRUPTED if interrupted else exit_code(entries, regression, report["stopped_early"])
        abandoned = runner.pool.abandoned if runner.pool is not None else None
        if abandoned and report["exit_code"] == 0:
            report["exit_code"] = 2  # runs were left unplayed: the run did not complete
        path = cfg.output_dir / f"{run_id}.json"
        try:
            write_json_report(path, report, runner.run_bytes())
        except OSError as exc:
            err.print(f"error: cannot write the JSON report {path} ({exc.strerror or exc}). Every finished run "
                      f"is in the journal {runner.journal.path}; once the disk is writable, "
                      f"`{resume_hint(run_id, cfg.output_dir)}` writes the report.",
                      highlight=False, markup=False, soft_wrap=True)
            return 2
        written = write_extras(report, path, runner.run_bytes(), cfg,
                               lambda line: err.print(line, highlight=False, markup=False, soft_wrap=True))
        from agent_eval.report.terminal import render_report, verdict_text

        if not cfg.quiet or interrupted:
            render_report(report, console, verbose=cfg.verbose)
        else:
            console.print(verdict_text(report))  # --quiet still says how the run ended
        for line in [f"JSON report: {path}", *written]:
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        for crash in runner.pool.crashes if runner.pool is not None else ():
            err.print(f"warning: a worker crashed; this is a bug in agent-eval, please report it with this "
                      f"traceback:\n{crash.rstrip()}", highlight=False, markup=False, soft_wrap=True)
        if abandoned:
            err.print(f"error: {abandoned}. They are not_run in the report; play them with: "
                      f"{resume_hint(run_id, cfg.output_dir)}", highlight=False, markup=False, soft_wrap=True)
        if interrupted:
            err.print(f"Interrupted. Finished runs are saved in {runner.journal.path}; "
                      f"resume with: {resume_hint(run_id, cfg.output_dir)}", highlight=False, markup=False,
                      soft_wrap=True)
        return report["exit_code"]
    except KeyboardInterrupt:
        sys.stderr.write("interrupted again: exiting now\n")
        from agent_eval.run.interrupt import kill_servers

        kill_servers()
        os._exit(INTERRUPTED)


def resume_hint(run_id: str, output_dir: Path) -> str:
    """The command that resumes run_id (the output dir is named when it is not the default)."""
    hint = f"agent-eval run --resume {run_id}"
    if output_dir != Path(DEFAULTS["output_dir"]):
        hint += f" --output-dir {shlex.quote(str(output_dir))}"
    return hint


def _retry_display(progress: Any, err: Console, quiet: bool) -> llm.RetryListener:
    """Show "retrying <endpoint> (attempt n/8)" while the SDK retries: in the progress display, or, in a
    log, once per endpoint and attempt from the third on (a dead endpoint is not 39 silent seconds)."""
    shown: set[tuple[str, int]] = set()

    def show(endpoint: str, attempt: int, most: int) -> None:
        message = f"retrying {endpoint} (attempt {attempt}/{most})"
        if progress is not None:
            progress.update(progress.task_ids[0], description=escape(message))
        elif not quiet and attempt >= SHOW_RETRY_FROM and (endpoint, attempt) not in shown:
            shown.add((endpoint, attempt))
            err.print(message, markup=False, highlight=False, soft_wrap=True)

    return show


def _progress(console: Console, cfg: RunConfig) -> Any:
    if cfg.quiet or not console.is_terminal:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=True)
