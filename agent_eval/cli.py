"""The `agent-eval` command line: parse flags, call the app, map the outcome to an exit code."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from agent_eval.errors import CaseFileError, ConfigError
from agent_eval.report.console import SafeConsole

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="A benchmark runner for tool-calling AI agents.")


def make_console(stderr: bool = False) -> SafeConsole:
    """A Rich console; when the output is not a terminal (a CI log, a pipe) it is COLUMNS or 160 wide."""
    console = SafeConsole(stderr=stderr)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = SafeConsole(stderr=stderr, width=PIPED_WIDTH)
    return console


PIPED_WIDTH = 160
console = make_console()
err_console = make_console(stderr=True)

CASES_HELP = "The case file (a JSON list of cases, or {\"suite\": ..., \"cases\": [...]})."
FILTER_HELP = "Keep cases whose id or a tag contains TEXT (repeatable)."
JUDGE_MODEL_HELP = "The judge's model (AGENT_EVAL_JUDGE_MODEL)."
JUDGE_TIMEOUT_HELP = "Seconds each judge or simulator request may take, retries included (default 120)."


def judge_timeout_option() -> Any:
    """The `--judge-timeout SECONDS` option, shared by run, rescore and score (None: the default, 120)."""
    return typer.Option(None, "--judge-timeout", help=JUDGE_TIMEOUT_HELP)


def guarded(fn: Callable[[], int]) -> None:
    """Run fn; a user mistake becomes one short message on stderr and exit 2, never a traceback."""
    try:
        code = fn()
    except CaseFileError as exc:
        problems = exc.problems
        err_console.print(Text.assemble(("error:", "red"), f" the case file is invalid ({len(problems)} "
                                        f"problem{'s' if len(problems) != 1 else ''}):"), highlight=False)
        for problem in problems:
            err_console.print(f"  - {problem}", highlight=False, markup=False)
        code = 2
    except ConfigError as exc:
        err_console.print(Text.assemble(("error:", "red"), " "), end="", highlight=False)
        err_console.print(str(exc), highlight=False, markup=False)
        code = 2
    except KeyboardInterrupt:  # Ctrl-C before a run started (loading, validating): nothing to save
        err_console.print("interrupted", highlight=False)
        code = 130
    raise typer.Exit(code)


def _is_explicit(ctx: typer.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)  # an enum of click's, whichever click typer ships
    return source is not None and source.name == "COMMANDLINE"


@app.command()
def run(
    ctx: typer.Context,
    cases: Path = typer.Option(Path("cases/test_cases.json"), "--cases", help=CASES_HELP),
    filter: list[str] | None = typer.Option(None, "--filter", help=FILTER_HELP),
    repeat: int | None = typer.Option(None, "--repeat", "-k", help="Runs per case (default 1)."),
    threshold: float | None = typer.Option(None, "--threshold", help="Pass rate a case needs (default 1.0)."),
    no_judge: bool = typer.Option(False, "--no-judge", help="Never call the judge; skip rubric-only cases."),
    agent: str | None = typer.Option(None, "--agent", help="openai, file.py:function or module:function."),
    model: str | None = typer.Option(None, "--model", help="The agent's model (AGENT_EVAL_MODEL)."),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (OPENAI_BASE_URL)."),
    judge_model: str | None = typer.Option(None, "--judge-model", help=JUDGE_MODEL_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help="Ask the judge again; ignore cached answers."),
    concurrency: int | None = typer.Option(None, "--concurrency", help="Runs at once (default 8)."),
    max_steps: int | None = typer.Option(None, "--max-steps", help="Model completions per user turn (default 8)."),
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds one run may take (default: none)."),
    output_dir: Path | None = typer.Option(None, "--output-dir", help="Where reports go (default reports)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar; print only the verdict line."),
    baseline: str | None = typer.Option(None, "--baseline", help="Gate against this report (or `last`)."),
    junit: Path | None = typer.Option(None, "--junit", help="Also write JUnit XML here."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Also append a Markdown summary here."),
    no_html: bool = typer.Option(False, "--no-html", help="Do not write the HTML page."),
    resume: str | None = typer.Option(None, "--resume", help="Finish run RUN_ID: run only what its journal lacks."),
    user: str | None = typer.Option(None, "--user", help="Python user simulator (file.py:function)."),
    user_model: str | None = typer.Option(None, "--user-model", help="LLM user simulator (AGENT_EVAL_USER_MODEL)."),
    judge_timeout: float | None = judge_timeout_option(),
    gate: list[str] | None = typer.Option(None, "--gate", help="METRIC[=MAX_DROP] to gate on (needs --baseline)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Every failed check of every failed run, all cases."),
    last_failed: bool = typer.Option(False, "--last-failed", "--lf",
                                     help="Run only the cases that failed or errored in the last run."),
    exitfirst: bool = typer.Option(False, "--exitfirst", "-x", help="Stop taking new runs after the first failure."),
    workers: int | None = typer.Option(None, "--workers", help="Worker processes sharing --concurrency (default 1)."),
    ray: bool = typer.Option(False, "--ray", help="Place the workers on Ray (pip install 'agent-eval[ray]')."),
    ray_address: str | None = typer.Option(None, "--ray-address", help="Join this Ray cluster (implies --ray)."),
    ray_runtime_env: str | None = typer.Option(None, "--ray-runtime-env", help="Ray's runtime_env, as JSON."),
) -> None:
    """Run the suite: every selected case k times, scored, reported, with a CI exit code."""
    flags = dict(cases=cases, filter=filter, repeat=repeat, threshold=threshold, no_judge=no_judge,
                 gate=gate, verbose=verbose, last_failed=last_failed, exitfirst=exitfirst,
                 baseline=baseline, junit=junit, markdown=markdown, no_html=no_html,
                 agent=agent, model=model, base_url=base_url, concurrency=concurrency, max_steps=max_steps,
                 timeout=timeout, output_dir=output_dir, quiet=quiet, judge_model=judge_model,
                 no_cache=no_cache, user=user, user_model=user_model, judge_timeout=judge_timeout,
                 workers=workers, ray=ray, ray_address=ray_address, ray_runtime_env=ray_runtime_env)
    # --resume compares only the flags typed on the command line with the run's stored settings.
    flags.update(resume=resume, explicit={name for name in flags if _is_explicit(ctx, name)})

    def go() -> int:
        from agent_eval.run.app import run_command

        return run_command(flags, console, err_console)

    guarded(go)


@app.command("list")
def list_cases(
    cases: Path = typer.Option(Path("cases/test_cases.json"), "--cases", help=CASES_HELP),
    filter: list[str] | None = typer.Option(None, "--filter", help=FILTER_HELP),
) -> None:
    """Print the selected cases: a table on a terminal, TSV (id, input kind, tags) when piped."""

    def go() -> int:
        from agent_eval.suite.cases import load_suite, select_cases

        suite = load_suite(cases)
        selected = select_cases(suite.cases, filter or [])
        if not selected:
            raise ConfigError(f"no case of {cases} matches --filter {' '.join(filter or [])!r}.")
        rows = [(case["id"], next(k for k in ("query", "messages", "scenario") if case.get(k) is not None),
                 ",".join(case.get("tags", []))) for case in selected]
        if not console.is_terminal:  # piped: TSV, one case a line, for cut and awk
            sys.stdout.write("".join("\t".join(row) + "\n" for row in rows))
            return 0
        from rich.table import Table
        from rich.text import Text

        table = Table("id", "input", "tags", title=f"{len(rows)} case(s) of {cases}", title_justify="left")
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        console.print(table)
        return 0

    guarded(go)


@app.command()
def validate(cases: Path = typer.Option(Path("cases/test_cases.json"), "--cases", help=CASES_HELP)) -> None:
    """Check a case file; nothing runs."""

    def go() -> int:
        from agent_eval.suite.cases import load_suite

        suite = load_suite(cases)
        _load_suite_code(suite)
        for warning in suite.warnings:
            err_console.print(warning, highlight=False, markup=False, soft_wrap=True)
        console.print(f"{cases}: {len(suite.cases)} cases, valid.", highlight=False, markup=False)
        return 0

    guarded(go)


def _load_suite_code(suite: Any) -> None:
    """Import the agent and the user simulator that the suite block names, as `run` would."""
    from agent_eval.suite.imports import load_callable

    spec = suite.settings.get("agent")
    user = suite.settings.get("user")
    named = [("agent", spec), ("user simulator", user.get("agent") if isinstance(user, dict) else None)]
    for what, ref in named:
        if isinstance(ref, str) and ref and ref != "openai" and not callable(load_callable(ref, suite.base_dir, what)):
            raise ConfigError(f"{what} {ref!r} in {suite.path} is not callable; point the SPEC at a function")


@app.command()
def rescore(
    report: Path = typer.Argument(..., help="A JSON report written by `agent-eval run`."),
    judge_repeat: int | None = typer.Option(None, "--judge-repeat", help="N uncached judge answers per run."),
    no_judge: bool = typer.Option(False, "--no-judge", help="Never call the judge; skip rubric-only cases."),
    judge_model: str | None = typer.Option(None, "--judge-model", help=JUDGE_MODEL_HELP),
    judge_timeout: float | None = judge_timeout_option(),
    quiet: bool = typer.Option(False, "--quiet", help="Print only the verdict line."),
) -> None:
    """Re-score a report's frozen traces with the current case file; the agent is never called.

    Writes the new report and its HTML page beside the old one."""

    def go() -> int:
        from agent_eval.score.judge import DEFAULT_TIMEOUT_S
        from agent_eval.score.rescore import rescore_command

        return rescore_command(report, judge_repeat, no_judge, console, judge_model=judge_model,
                               judge_timeout=DEFAULT_TIMEOUT_S if judge_timeout is None else judge_timeout,
                               quiet=quiet)

    guarded(go)


@app.command()
def compare(
    base_report: Path = typer.Argument(..., help="The baseline JSON report."),
    new_reports: list[Path] = typer.Argument(..., help="One or more new JSON reports (one column each)."),
    gate: list[str] | None = typer.Option(None, "--gate", help="METRIC[=MAX_DROP] to gate on (repeatable)."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Also append the comparison as Markdown here."),
    html_out: Path | None = typer.Option(None, "--html", help="Also write the comparison as an HTML page here."),
) -> None:
    """Gate each NEW report against BASE; several NEW reports make one matrix. Exit 1 on a regression."""

    def go() -> int:
        from agent_eval.report.compare import compare_command

        return compare_command(base_report, list(new_reports), gate or [], console, markdown, html_out)

    guarded(go)


@app.command()
def view(
    report: Path = typer.Argument(..., help="A JSON report written by `agent-eval run`."),
    out: Path | None = typer.Option(None, "--out", help="The page (default: REPORT as .html)."),
) -> None:
    """Build the self-contained HTML page of a report."""

    def go() -> int:
        from agent_eval.report.html import write_html
        from agent_eval.report.model import VIEW_SHAPE, load_report

        data = load_report(report, VIEW_SHAPE)
        path = write_html(data, out or report.with_suffix(".html"))
        console.print(f"wrote {path}", highlight=False, markup=False, soft_wrap=True)
        return 0

    guarded(go)


@app.command()
def history(
    cases: Path = typer.Option(Path("cases/test_cases.json"), "--cases", help=CASES_HELP),
    output_dir: Path = typer.Option(Path("reports"), "--output-dir", help="Where history.sqlite is."),
    last: int = typer.Option(10, "--last", min=1, max=2**31 - 1, help="How many recent runs to show."),
    metric: list[str] | None = typer.Option(None, "--metric", help="A summary metric to show (repeatable)."),
) -> None:
    """Print the recent runs of the suite, with a sparkline per metric."""

    def go() -> int:
        from agent_eval.report.history import history_main

        return history_main(cases, output_dir, last, metric or [], console)

    guarded(go)


@app.command("import")
def import_cases(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="otel, deepeval or inspect."),
    source: Path = typer.Argument(..., help="The file to import (JSON or JSON Lines)."),
    out: Path | None = typer.Option(None, "--out", help="Write the case file here (default: stdout)."),
    tools: str | None = typer.Option(None, "--tools", help="The tools module the cases are validated against."),
) -> None:
    """Write a case file from other tools' files: OpenTelemetry traces, deepeval goldens, Inspect samples."""

    def go() -> int:
        from agent_eval.ingest.importer import import_command

        return import_command(fmt, source, out, tools, console, err_console)

    guarded(go)


@app.command()
def score(
    traces: Path = typer.Argument(..., help="Recorded runs: OTLP/JSON traces, or an agent-eval report or journal."),
    cases: Path = typer.Option(Path("cases/test_cases.json"), "--cases", help=CASES_HELP),
    fmt: str | None = typer.Option(None, "--format", help="otel or agent-eval (default: detected from the file)."),
    filter: list[str] | None = typer.Option(None, "--filter", help=FILTER_HELP),
    threshold: float | None = typer.Option(None, "--threshold", help="Pass rate a case needs (default 1.0)."),
    no_judge: bool = typer.Option(False, "--no-judge", help="Never call the judge; skip rubric-only cases."),
    judge_model: str | None = typer.Option(None, "--judge-model", help=JUDGE_MODEL_HELP),
    judge_timeout: float | None = judge_timeout_option(),
    output_dir: Path | None = typer.Option(None, "--output-dir", help="Where reports go (default reports)."),
    baseline: str | None = typer.Option(None, "--baseline", help="Gate against this report (or `last`)."),
    gate: list[str] | None = typer.Option(None, "--gate", help="METRIC[=MAX_DROP] to gate on (repeatable)."),
    junit: Path | None = typer.Option(None, "--junit", help="Also write JUnit XML here."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Also append a Markdown summary here."),
    no_html: bool = typer.Option(False, "--no-html", help="Do not write the HTML page."),
    quiet: bool = typer.Option(False, "--quiet", help="Print only the verdict line."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Every failed check, and the whole case table."),
) -> None:
    """Score recorded runs with the case file's checks, judge and scorers; no agent is called."""
    flags = dict(traces=traces, cases=cases, format=fmt, filter=filter, threshold=threshold, no_judge=no_judge,
                 judge_model=judge_model, judge_timeout=judge_timeout, output_dir=output_dir, baseline=baseline,
                 gate=gate, junit=junit, markdown=markdown, no_html=no_html, quiet=quiet, verbose=verbose)

    def go() -> int:
        from agent_eval.ingest.score_traces import score_command

        return score_command(flags, console, err_console)

    guarded(go)


def main(argv: Any = None) -> None:
    """Console-script entry point."""
    app(args=argv if argv is not None else sys.argv[1:], prog_name="agent-eval")


if __name__ == "__main__":
    main()
