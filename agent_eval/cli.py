"""The `agent-eval` command line: parse flags, call the app, map the outcome to an exit code."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from agent_eval.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_TERMINATED, CaseFileError, ConfigError
from agent_eval.flags import (
    CASES_HELP, FILTER_HELP, REPEAT_HELP, THRESHOLD_HELP, CONCURRENCY_HELP, MAX_STEPS_HELP, OUTPUT_DIR_HELP,
    JUDGE_MODEL_HELP, OTEL_HELP, OTLP_HELP, LOGS_HELP, JUDGE_TIMEOUT_HELP, RATE_LIMIT_HELP,
    JUDGE_RATE_LIMIT_HELP, RETRY_BUDGET_HELP, DEFAULTS, MAX_COUNT, Flags,
)
from agent_eval.report.console import SafeConsole
from agent_eval.commands.plugin_options import add_setting_options

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False)  # help: main_options


DISTRIBUTION = "agent-eval-trials"  # the name on PyPI (`agent-eval` there is another project)


def print_version(wanted: bool) -> None:
    """`--version`: `agent-eval <version>` from the installed distribution's metadata, exit 0."""
    if wanted:
        from importlib.metadata import PackageNotFoundError, version
        try:
            number = version(DISTRIBUTION)
        except PackageNotFoundError:  # a source tree that was never installed
            number = f"unknown ({DISTRIBUTION} is not installed: pip install PATH installs it)"
        typer.echo(f"agent-eval {number}")
        raise typer.Exit(0)


@app.callback()
def main_options(version: bool = typer.Option(False, "--version", is_eager=True, callback=print_version,
                                              help="Print agent-eval's version and exit.")) -> None:
    """A benchmark runner for tool-calling AI agents."""


def make_console(stderr: bool = False) -> SafeConsole:
    """A Rich console; when the output is not a terminal (a CI log, a pipe) it is COLUMNS or 160 wide."""
    console = SafeConsole(stderr=stderr)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = SafeConsole(stderr=stderr, width=PIPED_WIDTH)
    return console


PIPED_WIDTH = 160
console = make_console()
err_console = make_console(stderr=True)



def judge_timeout_option() -> Any:
    """The `--judge-timeout SECONDS` option, shared by run, rescore and score (None: the default)."""
    return typer.Option(None, "--judge-timeout", help=JUDGE_TIMEOUT_HELP)


def guarded(fn: Callable[[], int]) -> None:
    """Run fn (main imported the plugins first); a user mistake is one short message on stderr and exit 2,
    never a traceback."""
    try:
        code = fn()
    except CaseFileError as exc:
        problems = exc.problems
        err_console.print(Text.assemble(("error:", "red"), f" the case file is invalid ({len(problems)} "
                                        f"problem{'s' if len(problems) != 1 else ''}):"), highlight=False)
        for problem in problems:
            err_console.print(f"  - {problem}", highlight=False, markup=False, soft_wrap=True)
        code = EXIT_ERROR
    except ConfigError as exc:
        err_console.print(Text.assemble(("error:", "red"), " "), end="", highlight=False)
        err_console.print(str(exc), highlight=False, markup=False, soft_wrap=True)  # a path stays whole
        code = EXIT_ERROR
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM before a run started (loading, validating)
        from agent_eval.run.interrupt import Terminated

        err_console.print("interrupted", highlight=False)
        code = EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED
    raise typer.Exit(code)


def _is_explicit(ctx: typer.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)  # an enum of click's, whichever click typer ships
    return source is not None and source.name == "COMMANDLINE"


def build_flags(ctx: typer.Context, **given: Any) -> Flags:
    """The command's flags as one frozen value, with the names of those typed on the command line."""
    extra = {k: v for k, v in (given.pop("plugin_settings", None) or {}).items() if _is_explicit(ctx, k)}
    values: dict[str, Any] = {name: tuple(value) if isinstance(value, list) else value
              for name, value in given.items() if value is not None}
    return Flags(**values, extra=extra, explicit=frozenset(n for n in given if _is_explicit(ctx, n)) | extra.keys())


@app.command()
def run(
    ctx: typer.Context,
    cases: Path = typer.Option(DEFAULTS.cases, "--cases", help=CASES_HELP),
    filter: list[str] | None = typer.Option(None, "--filter", help=FILTER_HELP),
    repeat: int | None = typer.Option(None, "--repeat", "-k", help=REPEAT_HELP),
    threshold: float | None = typer.Option(None, "--threshold", help=THRESHOLD_HELP),
    no_judge: bool = typer.Option(False, "--no-judge", help="Never call the judge; skip rubric-only cases."),
    agent: str | None = typer.Option(None, "--agent", help="openai, file.py:function, module:function or "
                                                         "\"cmd:COMMAND ARGS...\"."),
    model: str | None = typer.Option(None, "--model", help="The agent's model (AGENT_EVAL_MODEL)."),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (OPENAI_BASE_URL)."),
    judge_model: str | None = typer.Option(None, "--judge-model", help=JUDGE_MODEL_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help="Ask the judge again; ignore cached answers."),
    concurrency: int | None = typer.Option(None, "--concurrency", help=CONCURRENCY_HELP),
    max_steps: int | None = typer.Option(None, "--max-steps", help=MAX_STEPS_HELP),
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds one run may take (default: none)."),
    output_dir: Path | None = typer.Option(None, "--output-dir", help=OUTPUT_DIR_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar; print only the verdict line."),
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
    ray: bool = typer.Option(False, "--ray", help="Place the workers on Ray (pip install 'agent-eval-trials\\[ray]')."),
    ray_address: str | None = typer.Option(None, "--ray-address", help="Join this Ray cluster (implies --ray)."),
    ray_runtime_env: str | None = typer.Option(None, "--ray-runtime-env", help="Ray's runtime_env, as JSON."),
    otel: Path | None = typer.Option(None, "--otel", help=OTEL_HELP),
    otlp_endpoint: str | None = typer.Option(None, "--otlp-endpoint", help=OTLP_HELP),
    rate_limit: str | None = typer.Option(None, "--rate-limit", help=RATE_LIMIT_HELP),
    judge_rate_limit: str | None = typer.Option(None, "--judge-rate-limit", help=JUDGE_RATE_LIMIT_HELP),
    retry_budget: float | None = typer.Option(None, "--retry-budget", help=RETRY_BUDGET_HELP),
    max_cost: float | None = typer.Option(None, "--max-cost", help="Stop taking runs before the spend passes USD."),
    record: Path | None = typer.Option(None, "--record", help="Record each run's model exchanges in DIR."),
    replay: Path | None = typer.Option(None, "--replay", help="Answer model requests from DIR's recording."),
    replay_miss: str | None = typer.Option(None, "--replay-miss", help="error (default) or live: ask the provider."),
    **plugin_settings: Any,
) -> None:
    """Run the suite: every selected case k times, scored, reported, with a CI exit code."""
    # --resume compares only the flags typed on the command line with the run's stored settings.
    flags = build_flags(ctx, **{name: value for name, value in locals().items() if name != "ctx"})

    def go() -> int:
        from agent_eval.commands.run import run_command

        return run_command(flags, console, err_console)

    guarded(go)


@app.command("list")
def list_cases(
    cases: Path = typer.Option(DEFAULTS.cases, "--cases", help=CASES_HELP),
    filter: list[str] | None = typer.Option(None, "--filter", help=FILTER_HELP),
) -> None:
    """Print the selected cases: a table on a terminal, TSV (id, input kind, tags) when piped."""

    def go() -> int:
        from agent_eval.commands.list_cases import list_command

        return list_command(cases, filter or [], console)

    guarded(go)


@app.command()
def validate(cases: Path = typer.Option(DEFAULTS.cases, "--cases", help=CASES_HELP),
             agent: str | None = typer.Option(None, "--agent", help="Also load this agent, as run would.")) -> None:
    """Check a case file; nothing runs."""

    def go() -> int:
        from agent_eval.commands.validate import validate_command

        return validate_command(cases, console, err_console, agent)

    guarded(go)


@app.command()
def rescore(
    ctx: typer.Context,
    report: Path = typer.Argument(..., help="A JSON report written by `agent-eval run`."),
    cases: Path | None = typer.Option(None, "--cases", help="The case file (default: the report's cases_file)."),
    judge_repeat: int | None = typer.Option(None, "--judge-repeat", help="N uncached judge answers per run."),
    no_judge: bool = typer.Option(False, "--no-judge", help="Never call the judge; skip rubric-only cases."),
    judge_model: str | None = typer.Option(None, "--judge-model", help=JUDGE_MODEL_HELP),
    judge_timeout: float | None = judge_timeout_option(),
    junit: Path | None = typer.Option(None, "--junit", help="Also write JUnit XML here."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Also append a Markdown summary here."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the verdict line."),
    otel: Path | None = typer.Option(None, "--otel", help=OTEL_HELP),
    otlp_endpoint: str | None = typer.Option(None, "--otlp-endpoint", help=OTLP_HELP),
) -> None:
    """Re-score a report's frozen traces with the current case file; the agent is never called.

    Writes the new report, its HTML page and its history row beside the old one."""
    flags = build_flags(ctx, report=report, cases=cases, judge_repeat=judge_repeat, no_judge=no_judge,
                        judge_model=judge_model, judge_timeout=judge_timeout, junit=junit, markdown=markdown,
                        quiet=quiet, otel=otel, otlp_endpoint=otlp_endpoint)

    def go() -> int:
        from agent_eval.commands.rescore import rescore_command

        return rescore_command(flags, console, err_console)

    guarded(go)


@app.command()
def compare(
    base_report: Path = typer.Argument(..., help="The baseline JSON report."),
    new_reports: list[Path] = typer.Argument(..., help="One or more new JSON reports (one column each)."),
    gate: list[str] | None = typer.Option(None, "--gate", help="METRIC[=MAX_DROP] to gate on (repeatable)."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Also append the comparison as Markdown here."),
    html_out: Path | None = typer.Option(None, "--html", help="Also write the comparison as an HTML page here."),
    pairwise: bool = typer.Option(False, "--pairwise", help="Judge each pair of answers, both orders."),
    judge_model: str | None = typer.Option(None, "--judge-model", help=JUDGE_MODEL_HELP),
    judge_repeat: int | None = typer.Option(None, "--judge-repeat", help="N uncached answers per order (--pairwise)."),
) -> None:
    """Gate each NEW report against BASE; several NEW reports make one matrix. Exit 1 on a regression."""

    def go() -> int:
        from agent_eval.commands.compare import compare_command

        return compare_command(base_report, list(new_reports), gate or [], console, markdown, html_out, pairwise,
                               judge_model, judge_repeat)

    guarded(go)


@app.command()
def plan(report: Path = typer.Argument(..., help="A JSON report of the suite."),
         detect: float = typer.Option(0.05, "--detect", help="The drop of pass_at_1 to detect (default 0.05)."),
         power: float = typer.Option(0.8, "--power", help="The probability of detecting it (default 0.8).")) -> None:
    """How many repeats and cases the gate needs: each design's detectable drop, and the cheapest one."""
    from agent_eval.commands.plan import plan_command

    guarded(lambda: plan_command(report, console, detect, power))


@app.command()
def view(
    report: Path = typer.Argument(..., help="A JSON report written by `agent-eval run`."),
    out: Path | None = typer.Option(None, "--out", help="The page (default: REPORT as .html)."),
) -> None:
    """Build the self-contained HTML page of a report."""

    def go() -> int:
        from agent_eval.commands.view import view_command

        return view_command(report, out, console)

    guarded(go)


@app.command()
def history(
    cases: Path = typer.Option(DEFAULTS.cases, "--cases", help=CASES_HELP),
    output_dir: Path = typer.Option(DEFAULTS.output_dir, "--output-dir", help="Where history.sqlite is."),
    last: int = typer.Option(DEFAULTS.history_last, "--last", min=1, max=MAX_COUNT,
                      help="How many recent runs to show."),
    metric: list[str] | None = typer.Option(None, "--metric", help="A summary metric to show (repeatable)."),
    case_id: str | None = typer.Option(None, "--case-id", help="Show one case's pass rate over the recent runs."),
) -> None:
    """Print the recent runs of the suite, with a sparkline per metric."""

    def go() -> int:
        if case_id is not None:
            from agent_eval.commands.history import case_history_main

            return case_history_main(cases, output_dir, case_id, last, console)
        from agent_eval.commands.history import history_main

        return history_main(cases, output_dir, last, metric or [], console)

    guarded(go)


@app.command("import")
def import_cases(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="otel, deepeval, inspect or openai-evals."),
    source: Path = typer.Argument(..., help="The file to import (JSON, JSON Lines, CSV, protobuf or an .eval log)."),
    out: Path | None = typer.Option(None, "--out", help="Write the case file here (default: stdout)."),
    into: Path | None = typer.Option(None, "--into", help="Append the cases to this case file (its suite kept)."),
    tools: str | None = typer.Option(None, "--tools", help="The tools module the cases are validated against."),
    logs: Path | None = typer.Option(None, "--logs", help=LOGS_HELP),
) -> None:
    """Write a case file from other tools' files: OpenTelemetry traces, deepeval, Inspect, OpenAI Evals."""

    def go() -> int:
        from agent_eval.commands.import_cases import import_command

        return import_command(fmt, source, out, tools, console, err_console, logs, into)

    guarded(go)


@app.command()
def score(
    ctx: typer.Context,
    traces: Path = typer.Argument(..., help="Recorded runs: OTLP traces, an Inspect log, or an agent-eval report."),
    cases: Path = typer.Option(DEFAULTS.cases, "--cases", help=CASES_HELP),
    fmt: str | None = typer.Option(None, "--format", help="otel, inspect or agent-eval (default: detected)."),
    logs: Path | None = typer.Option(None, "--logs", help=LOGS_HELP),
    filter: list[str] | None = typer.Option(None, "--filter", help=FILTER_HELP),
    threshold: float | None = typer.Option(None, "--threshold", help=THRESHOLD_HELP),
    no_judge: bool = typer.Option(False, "--no-judge", help="Never call the judge; skip rubric-only cases."),
    judge_model: str | None = typer.Option(None, "--judge-model", help=JUDGE_MODEL_HELP),
    judge_timeout: float | None = judge_timeout_option(),
    output_dir: Path | None = typer.Option(None, "--output-dir", help=OUTPUT_DIR_HELP),
    baseline: str | None = typer.Option(None, "--baseline", help="Gate against this report (or `last`)."),
    gate: list[str] | None = typer.Option(None, "--gate", help="METRIC[=MAX_DROP] to gate on (repeatable)."),
    junit: Path | None = typer.Option(None, "--junit", help="Also write JUnit XML here."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Also append a Markdown summary here."),
    no_html: bool = typer.Option(False, "--no-html", help="Do not write the HTML page."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the verdict line."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Every failed check, and the whole case table."),
    otel: Path | None = typer.Option(None, "--otel", help=OTEL_HELP),
    otlp_endpoint: str | None = typer.Option(None, "--otlp-endpoint", help=OTLP_HELP),
) -> None:
    """Score recorded runs with the case file's checks, judge and scorers; no agent is called."""
    flags = build_flags(ctx, traces=traces, cases=cases, format=fmt, filter=filter, threshold=threshold,
                        no_judge=no_judge, judge_model=judge_model, judge_timeout=judge_timeout, output_dir=output_dir,
                        baseline=baseline, gate=gate, junit=junit, markdown=markdown, no_html=no_html, quiet=quiet,
                        verbose=verbose, logs=logs, otel=otel, otlp_endpoint=otlp_endpoint)

    def go() -> int:
        from agent_eval.commands.score import score_command

        return score_command(flags, console, err_console)

    guarded(go)


@app.command()
def label(
    report: Path = typer.Argument(..., help="A JSON report with judged runs."),
    cases: Path | None = typer.Option(None, "--cases", help="The case file (default: the report's cases_file)."),
    out: Path | None = typer.Option(None, "--out", help="The labels file (default: <report stem>.labels.jsonl)."),
) -> None:
    """Label each judged run pass or fail from the terminal; each label is appended to the labels file."""

    def go() -> int:
        from agent_eval.commands.label import label_command

        return label_command(report, console, sys.stdin, cases=cases, out=out)

    guarded(go)


@app.command()
def calibrate(
    report: Path = typer.Argument(..., help="A JSON report with judged runs."),
    labels: Path = typer.Option(..., "--labels", help="The labels file (JSON Lines) of that report."),
    cases: Path | None = typer.Option(None, "--cases", help="The case file (default: the report's cases_file)."),
    judge_model: str | None = typer.Option(None, "--judge-model", help=JUDGE_MODEL_HELP),
    judge_timeout: float | None = judge_timeout_option(),
    judge_repeat: int | None = typer.Option(None, "--judge-repeat", help="Compare N fresh majority verdicts."),
    min_kappa: float = typer.Option(0.6, "--min-kappa", help="Exit 1 when the overall kappa is below this."),
) -> None:
    """Measure the judge against human labels: agreement, Cohen's kappa, TPR, TNR, every disagreement."""

    def go() -> int:
        from agent_eval.commands.calibrate import calibrate_command

        return calibrate_command(report, labels, console, cases=cases, judge_model=judge_model,
                                 judge_timeout=judge_timeout, judge_repeat=judge_repeat, min_kappa=min_kappa)

    guarded(go)


def main(argv: Any = None) -> None:
    """Console-script entry point. As the command (no `argv`), it is the subreaper of what it starts, and
    no descendant outlives it; SIGTERM is a Ctrl-C (exit 143)."""
    if argv is None:
        import atexit

        from agent_eval.run.interrupt import terminate_as_interrupt
        from agent_eval.suite.reaper import become_subreaper, end_descendants

        become_subreaper()
        atexit.register(end_descendants)
        terminate_as_interrupt()
    add_setting_options(app, err_console)  # a plugin's setting is a flag: plugins load before it is read
    app(args=argv if argv is not None else sys.argv[1:], prog_name="agent-eval")


if __name__ == "__main__":
    main()
