"""The conclusion every command that scores cases shares: the report, its files, the terminal, the exit code.

`finish_report` builds the report of played (`run`) or recorded (`score`) runs; `conclude` takes any report
(`rescore` builds its own) and does the rest the same way for all three: the gate against a baseline,
the exit code, the JSON report, every extra output (HTML, history, JUnit, Markdown), the terminal.
"""
from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Console

from agent_eval.flags.rows import (
    BASELINE, GATE, JUDGE_MODEL, MAX_COST, MODEL, NO_JUDGE, OUTPUT_DIR, QUIET, RECORD, REPEAT, REPLAY, VERBOSE,
)
from agent_eval.flags import DEFAULTS
from agent_eval.records import CaseEntry, Report
from agent_eval.report.otlp_post import RunSender
from agent_eval.errors import EXIT_ERROR, EXIT_INTERRUPTED
from agent_eval.report.model import build_report, exit_code
from agent_eval.run.config import Settings
from agent_eval.suite.cases import Suite
from agent_eval.run.journal import Journal as JournalFile

if TYPE_CHECKING:
    from agent_eval.run.pool import WorkerPool

RunBytes = Callable[[], Iterable[list[bytes]]]  # per case entry, its runs as JSON bytes; callable again


class Journal(Protocol):
    """The journal's part in the conclusion: where it is, why it stopped taking runs (if it did), and
    whether the file was changed under the command."""

    @property
    def path(self) -> Path: ...

    @property
    def failed(self) -> str | None: ...

    def changed(self) -> str | None: ...


class Results(Protocol):
    """What `finish_report` reads of the runs a command played or scored (the run scheduler, `score`'s runs)."""

    pool: WorkerPool | None  # under --workers or --ray
    stopped_early: bool
    models_used: set[str]

    @property
    def journal(self) -> Journal: ...

    def case_entries(self) -> list[CaseEntry]: ...

    def spent(self, pricing: dict[str, Any] | None) -> dict[str, Any]: ...

    def run_bytes(self) -> Iterable[list[bytes]]: ...


def offer_runs(journal: JournalFile, url: str | None, head: dict[str, Any]) -> RunSender | None:
    """With --otlp-endpoint, a sender that each run journaled from here on is offered to as it finishes."""
    if not url:
        return None
    sender = RunSender(url, head)
    journal.listeners.add(sender)
    return sender


def say(console: Console, line: str) -> None:
    """One line of plain text: no markup, no highlighting, never wrapped."""
    console.print(line, highlight=False, markup=False, soft_wrap=True)


def finish_report(results: Results, suite: Suite, cfg: Settings, agent_name: str, run_id: str, created_at: str,
                  interrupted: bool, console: Console | None, err: Console, stop_code: int = EXIT_INTERRUPTED,
                  sender: RunSender | None = None,
                  settle: Callable[[int], int] = lambda code: code) -> tuple[int, Report | None]:
    """Build the report of `results`, write it with every extra output, print it; (the exit code, the report:
    None when the journal failed). With no `console` nothing is printed but the warnings, which go to `err`;
    a second Ctrl-C here exits at once. `sender` is the --otlp-endpoint sender the runs were offered to."""
    from agent_eval.bench import bench_settings
    from agent_eval.run.journal import append_usage, read_usage
    from agent_eval.score.metrics import summarize
    from agent_eval.score.prices import GENAI_PRICES, genai_prices_version, price_sources
    from agent_eval.provider.endpoints import merge_summaries
    from agent_eval.score.usage import add_summaries

    try:
        if results.journal.failed:
            say(err, f"error: cannot write the journal {results.journal.path} ({results.journal.failed}); the "
                     "run took no new runs after that, and no report was written. The runs it flushed are "
                     f"kept: once the disk has room, finish with: {resume_hint(run_id, cfg[OUTPUT_DIR])}")
            return EXIT_ERROR, None
        entries = results.case_entries()
        rows = [{"id": e["id"], "status": e["status"], "runs": e["runs"]} for e in entries]
        report = build_report(run_id=run_id, created_at=created_at, suite=suite.name, agent=agent_name,
                              model=cfg[MODEL], cases_file=str(cfg.cases_file),
                              settings={**cfg.settings(), **bench_settings(suite.settings)},
                              summary=summarize(rows, cfg[REPEAT], suite.scorers),
                              cases=entries,
                              interrupted=interrupted,
                              stopped_early=results.stopped_early and not interrupted,
                              stopped_at_budget=getattr(results, "stopped_at_budget", False) and not interrupted)
        pricing = suite.settings.get("pricing")
        spent = results.spent(pricing)
        earlier = read_usage(results.journal.path)  # what earlier processes of a resumed run spent
        try:
            append_usage(results.journal.path, spent)
        except OSError as exc:
            err.print(f"warning: could not record this process's judge and simulator spend beside "
                      f"{results.journal.path}: {exc.strerror or exc}", highlight=False, markup=False)
        for key in spent:
            if key == "provider":  # a list per endpoint (docs/resilience.md): the processes ran one after the other
                report["summary"][key] = merge_summaries([*(u.get(key) for u in earlier), spent[key]],
                                                         concurrent=False)
            else:
                report["summary"][key] = add_summaries([u[key] for u in earlier if key in u] + [spent[key]])
        for line in replay_notes(report["summary"].get("replay"), cfg):
            say(err, line)
        if not cfg[NO_JUDGE]:
            from agent_eval.score.judge import runs_to_judge

            report["summary"]["runs_to_judge"] = runs_to_judge(suite.cases, entries)
        helpers = [(cfg[JUDGE_MODEL], "judge"), (cfg.user_sim.model if cfg.user_sim else None, "user_sim")]
        models = results.models_used | {m for m, key in helpers if m and report["summary"][key].get("calls")}
        report["settings"]["prices"] = price_sources(models, pricing)
        if GENAI_PRICES in report["settings"]["prices"].values():
            report["settings"]["genai_prices_version"] = genai_prices_version()
        if cfg[MAX_COST] is not None:
            from agent_eval.run.budget import report_spend

            report["summary"]["budget"] = {"limit_usd": cfg[MAX_COST], "spent_usd": report_spend(report)}
        baseline = Path(given) if (given := cfg[BASELINE]) else None  # `last` was resolved before anything ran
        pool = results.pool
        code = conclude(report, results.run_bytes, cfg, console, err, interrupted=interrupted, stop_code=stop_code,
                        baseline=baseline,
                        gates=cfg[GATE], verbose=cfg[VERBOSE], quiet=cfg[QUIET],
                        abandoned=bool(pool is not None and pool.abandoned), journal=results.journal.path,
                        sender=sender, settle=settle)
        changed = results.journal.changed()  # the report came from the runs held, whatever happened to it
        if changed:
            say(err, changed)
        for crash in pool.crashes if pool is not None else ():
            say(err, f"warning: a worker crashed; this is a bug in agent-eval, please report it with this "
                     f"traceback:\n{crash.rstrip()}")
        if pool is not None and pool.abandoned:
            say(err, f"error: {pool.abandoned}. They are not_run in the report; play them with: "
                     f"{resume_hint(run_id, cfg[OUTPUT_DIR])}")
        if interrupted:
            say(err, f"Interrupted. Finished runs are saved in {results.journal.path}; "
                     f"resume with: {resume_hint(run_id, cfg[OUTPUT_DIR])}")
        return code, report
    except KeyboardInterrupt:
        sys.stderr.write("interrupted again: exiting now\n")
        from agent_eval.run.interrupt import kill_servers

        kill_servers()
        os._exit(stop_code)


def replay_notes(counts: Any, cfg: Settings) -> list[str]:
    """--replay: the runs it could not cover, and what to do about replay misses (docs/ci-without-a-key.md)."""
    if not isinstance(counts, dict):
        return []
    lines = []
    silent = counts.get("no_request_runs") or 0
    if silent:
        lines.append(f"warning: {silent} run{'s' if silent != 1 else ''} made no model request through agent-eval; "
                     "--replay cannot cover direct calls")
    live, filled = counts.get("live") or 0, counts.get("live_cassettes")
    if live and isinstance(filled, list):
        named = ", ".join(map(str, filled[:10])) + (f" and {len(filled) - 10} more" if len(filled) > 10 else "")
        lines.append(f"note: {live} request{'s' if live != 1 else ''} the recording lacked went live (--replay-miss "
                     f"live) and {'were' if live != 1 else 'was'} appended to {cfg[REPLAY] or cfg[RECORD]}: {named}")
    missed = (counts.get("misses") or 0) - live
    if missed:
        lines.append(f"error: {missed} request{'s' if missed != 1 else ''} had no recorded answer in {cfg[REPLAY]} "
                     "(replay miss: the agent now asks what the recording does not hold); record again with "
                     f"--record {cfg[REPLAY]}, or pass --replay-miss live to fill the gaps from the provider.")
    return lines


def conclude(report: Report, run_bytes: RunBytes, outputs: Settings, console: Console | None, err: Console, *,
             interrupted: bool = False, stop_code: int = EXIT_INTERRUPTED, baseline: Path | None = None,
             gates: Sequence[str] = (),
             verbose: bool = False, quiet: bool = False, abandoned: bool = False,
             label: str = "JSON report", notes: Sequence[str] = (), journal: Path | None = None,
             sender: RunSender | None = None, settle: Callable[[int], int] = lambda code: code) -> int:
    """Gate, decide the exit code once, write the JSON report and every extra output, print; the exit code.

    `outputs` are the command's settings; `notes` are printed after the report, before the files.
    An output that fails is a warning, never another exit code. `settle(code)` is the final code once the
    outputs that wait on another host are sent (a signal that came meanwhile); the JSON report and the
    history row carry it. With no `console` (the library's `run_suite`) nothing is printed but the warnings,
    which go to `err`."""
    from agent_eval.report.baseline import gate_against
    from agent_eval.report.files import report_path_of, write_json_report
    from agent_eval.report.outputs import write_extras
    from agent_eval.report.terminal import render_report, verdict_text

    if baseline is not None and not interrupted:
        report["gate"] = gate_against(baseline, report, list(gates))
    regression = bool(report.get("gate") and (report.get("gate") or {}).get("regression"))
    code = stop_code if interrupted else exit_code(report["cases"], regression,
                                                          bool(report.get("stopped_early")),
                                                          bool(report.get("stopped_at_budget")))
    if abandoned and code == 0:
        code = EXIT_ERROR  # runs were left unplayed: the run did not complete
    empty = (report.get("gate") or {}).get("nothing_to_gate") if not interrupted else None
    if empty:
        say(err, f"error: --baseline {baseline}: nothing to gate: {empty}. No verdict is possible.")
        if code == 0:
            code = EXIT_ERROR  # a gate that compares nothing is never "no regression"
    path = report_path_of(outputs[OUTPUT_DIR], report["run_id"])
    warn = lambda line: say(err, line)
    _, failed = write_extras(report, path, run_bytes, outputs, warn, sender, waits=True)
    report["exit_code"] = code = settle(code)
    try:
        write_json_report(path, report, run_bytes())
    except OSError as exc:
        problem = f"error: cannot write the JSON report {path} ({exc.strerror or exc})."
        say(err, problem if journal is None else
            f"{problem} Every finished run is in the journal {journal}; once the disk is writable, "
            f"`{resume_hint(report['run_id'], outputs[OUTPUT_DIR])}` writes the report.")
        return EXIT_ERROR
    written, failed_after = write_extras(report, path, run_bytes, outputs, warn, sender)
    if console is not None:
        if not quiet or interrupted:
            render_report(report, console, verbose=verbose)
        else:
            console.print(verdict_text(report))  # --quiet still says how the run ended
        for line in [*notes, f"{label}: {path}", *written]:
            say(console, line)
    from agent_eval.score.usage import usage_warning

    warning = usage_warning(report)
    if warning:
        say(err, warning)
    for line in [*failed, *failed_after]:  # a plugin's output raised: its bug, never the run's verdict
        say(err, f"warning: {line}; the JSON report and the other outputs are written, the verdict is unchanged.")
    return code


def resume_hint(run_id: str, output_dir: Path) -> str:
    """The command that resumes run_id (the output dir is named when it is not the default)."""
    hint = f"agent-eval run --resume {run_id}"
    if Path(output_dir) != DEFAULTS.output_dir:
        hint += f" --output-dir {shlex.quote(str(output_dir))}"
    return hint
