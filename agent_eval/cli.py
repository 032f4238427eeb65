"""The `agent-eval` command line: parse flags, call the app, map the outcome to an exit code."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from agent_eval.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_TERMINATED, CaseFileError, ConfigError
from agent_eval.flags import DEFAULTS, Flags
from agent_eval.report.console import SafeConsole
from agent_eval.run import collector
from agent_eval.commands.options import add_setting_options, build_options

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



def guarded(fn: Callable[[], int], starting: bool = False) -> None:
    """Run fn (main imported the plugins first); a user mistake is one short message on stderr and exit 2,
    never a traceback. Garbage collection comes back on first (run/collector.py), unless `starting` says
    that fn releases it itself when its start-up is over (`run`, before its first run)."""
    if not starting:
        collector.release()
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
    return Flags((name for name in given if _is_explicit(ctx, name)), command=ctx.command.name, **given)


# Each command writes its positional arguments; `**given` becomes the options of the setting rows that
# name it (agent_eval/flags/rows.py), in the table's order (commands/options.py).


@app.command()
def run(ctx: typer.Context, **given: Any) -> None:
    """Run the suite: every selected case k times, scored, reported, with a CI exit code."""
    # --resume compares only the flags typed on the command line with the run's stored settings.
    flags = build_flags(ctx, **given)

    def go() -> int:
        from agent_eval.commands.run import run_command

        return run_command(flags, console, err_console)

    guarded(go, starting=True)


@app.command("list")
def list_cases(ctx: typer.Context, **given: Any) -> None:
    """Print the selected cases: a table on a terminal, TSV (id, input kind, tags) when piped."""
    flags = build_flags(ctx, **given)

    def go() -> int:
        from agent_eval.commands.list_cases import list_command

        return list_command(_cases(flags), list(flags.texts("filter")), console)

    guarded(go)


@app.command()
def validate(ctx: typer.Context, **given: Any) -> None:
    """Check a case file; nothing runs."""
    flags = build_flags(ctx, **given)

    def go() -> int:
        from agent_eval.commands.validate import validate_command

        return validate_command(_cases(flags), console, err_console, flags.text("agent"))

    guarded(go)


@app.command()
def rescore(ctx: typer.Context, report: Path = typer.Argument(..., help="A JSON report written by `agent-eval run`."),
            **given: Any) -> None:
    """Re-score a report's frozen traces with the current case file; the agent is never called.

    Writes the new report, its HTML page and its history row beside the old one."""
    flags = build_flags(ctx, report=report, **given)

    def go() -> int:
        from agent_eval.commands.rescore import rescore_command

        return rescore_command(flags, console, err_console)

    guarded(go)


@app.command()
def compare(
    ctx: typer.Context,
    base_report: Path = typer.Argument(..., help="The baseline JSON report."),
    new_reports: list[Path] = typer.Argument(..., help="One or more new JSON reports (one column each)."),
    **given: Any,
) -> None:
    """Gate each NEW report against BASE; several NEW reports make one matrix. Exit 1 on a regression."""
    flags = build_flags(ctx, **given)

    def go() -> int:
        from agent_eval.commands.compare import compare_command

        return compare_command(base_report, list(new_reports), list(flags.texts("gate")), console,
                               flags.path("markdown"), flags.path("html_out"), flags.is_on("pairwise"),
                               flags.text("judge_model"), flags.count("judge_repeat"),
                               flags.path("cases") if flags.given("cases") else None)

    guarded(go)


@app.command()
def plan(ctx: typer.Context, report: Path = typer.Argument(..., help="A JSON report of the suite."),
         **given: Any) -> None:
    """How many repeats and cases the gate needs: each design's detectable drop, and the cheapest one."""
    flags = build_flags(ctx, **given)

    def go() -> int:
        from agent_eval.commands.plan import plan_command

        return plan_command(report, console, _number(flags, "detect"), _number(flags, "power"))

    guarded(go)


@app.command()
def view(ctx: typer.Context, report: Path = typer.Argument(..., help="A JSON report written by `agent-eval run`."),
         **given: Any) -> None:
    """Build the self-contained HTML page of a report."""
    flags = build_flags(ctx, **given)

    def go() -> int:
        from agent_eval.commands.view import view_command

        return view_command(report, flags.path("out"), console)

    guarded(go)


@app.command()
def history(ctx: typer.Context, **given: Any) -> None:
    """Print the recent runs of the suite, with a sparkline per metric."""
    flags = build_flags(ctx, **given)
    output_dir, case_id = flags.path("output_dir") or DEFAULTS.output_dir, flags.text("case_id")
    last = flags.count("last") or DEFAULTS.history_last

    def go() -> int:
        if case_id is not None:
            from agent_eval.commands.history import case_history_main

            return case_history_main(_cases(flags), output_dir, case_id, last, console)
        from agent_eval.commands.history import history_main

        return history_main(_cases(flags), output_dir, last, list(flags.texts("metric")), console)

    guarded(go)


_FORMAT = typer.Argument(..., metavar="FORMAT", help="otel, deepeval, inspect or openai-evals.")


@app.command("import")
def import_cases(
    ctx: typer.Context,
    fmt: str = _FORMAT,
    source: Path = typer.Argument(..., help="The file to import (JSON, JSON Lines, CSV, protobuf or an .eval log)."),
    **given: Any,
) -> None:
    """Write a case file from other tools' files: OpenTelemetry traces, deepeval, Inspect, OpenAI Evals."""
    flags = build_flags(ctx, **given)

    def go() -> int:
        from agent_eval.commands.import_cases import import_command

        return import_command(fmt, source, flags.path("out"), flags.text("tools"), console, err_console,
                              flags.path("logs"), flags.path("into"))

    guarded(go)


@app.command()
def score(ctx: typer.Context, traces: Path = typer.Argument(
        ..., help="Recorded runs: OTLP traces, an Inspect log, or an agent-eval report."), **given: Any) -> None:
    """Score recorded runs with the case file's checks, judge and scorers; no agent is called."""
    flags = build_flags(ctx, traces=traces, **given)

    def go() -> int:
        from agent_eval.commands.score import score_command

        return score_command(flags, console, err_console)

    guarded(go)


@app.command()
def label(ctx: typer.Context, report: Path = typer.Argument(..., help="A JSON report with judged runs."),
          **given: Any) -> None:
    """Label each judged run pass or fail from the terminal; each label is appended to the labels file."""
    flags = build_flags(ctx, **given)

    def go() -> int:
        from agent_eval.commands.label import label_command

        return label_command(report, console, sys.stdin, cases=flags.path("cases") if flags.given("cases") else None,
                             out=flags.path("out"))

    guarded(go)


@app.command()
def calibrate(ctx: typer.Context, report: Path = typer.Argument(..., help="A JSON report with judged runs."),
              **given: Any) -> None:
    """Measure the judge against human labels: agreement, Cohen's kappa, TPR, TNR, every disagreement."""
    flags = build_flags(ctx, **given)

    def go() -> int:
        from agent_eval.commands.calibrate import calibrate_command

        return calibrate_command(report, _path(flags, "labels"), console,
                                 cases=flags.path("cases") if flags.given("cases") else None,
                                 judge_model=flags.text("judge_model"), judge_timeout=flags.number("judge_timeout"),
                                 judge_repeat=flags.count("judge_repeat"), min_kappa=_number(flags, "min_kappa"))

    guarded(go)


bench_app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                        help="Standard benchmarks (BFCL multi-turn, tau2-bench) as suite folders: list them, "
                             "import one.")
app.add_typer(bench_app, name="bench")


@bench_app.command("list")
def bench_list() -> None:
    """Each benchmark agent-eval imports: its pinned upstream version, licence, parts and cases."""

    def go() -> int:
        from agent_eval.commands.bench import list_command

        return list_command(console)

    guarded(go)


@bench_app.command("import")
def bench_import(
    name: str = typer.Argument(..., help="The benchmark: see `agent-eval bench list`."),
    out: Path = typer.Option(..., "--out", help="The suite folder to write (new, or empty)."),
    source: Path | None = typer.Option(None, "--from", help="A local checkout of the upstream repository "
                                       "instead of the installed package."),
    category: list[str] = typer.Option([], "--category", help="bfcl: a category (repeatable; default "
                                       "multi_turn_base)."),
    domain: list[str] = typer.Option([], "--domain", help="tau2: the domain, airline or retail."),
    split: list[str] = typer.Option([], "--split", help="tau2: the task split, base (every task; the default), "
                                    "train or test."),
) -> None:
    """Write a suite folder from the installed, pinned upstream package: cases.json, its tools, NOTICE, and
    bench.lock.json."""

    def go() -> int:
        from agent_eval.commands.bench import import_command

        return import_command(name, out, source, {"category": tuple(category), "domain": tuple(domain),
                                                  "split": tuple(split)}, console)

    guarded(go)


@app.command("scripted-model")
def scripted_model(ctx: typer.Context,
                   script: Path = typer.Argument(..., help="The script: a JSON list of {match, reply} entries."),
                   **given: Any) -> None:
    """Serve a scripted OpenAI-compatible model on 127.0.0.1 until Ctrl-C; prints its base URL."""
    flags = build_flags(ctx, **given)

    def go() -> int:
        from agent_eval.commands.scripted_model import scripted_model_command

        return scripted_model_command(script, flags.count("port") or 0, console)

    guarded(go)


def _cases(flags: Flags) -> Path:
    return flags.path("cases") or DEFAULTS.cases


def _path(flags: Flags, name: str) -> Path:
    value = flags.path(name)
    assert value is not None, name  # a required option: typer refuses the command line without it
    return value


def _number(flags: Flags, name: str) -> float:
    value = flags.number(name)
    assert value is not None, name  # an option with a default
    return value


build_options(app)  # the built-in rows' options; main() adds the plugins' before it reads the command line


def format_help() -> str:
    """The names `import FORMAT` takes, from the format table (its plugins' rows included)."""
    from agent_eval.ingest.formats import import_formats

    *names, last = import_formats()
    return f"{', '.join(names)} or {last}." if names else f"{last}."


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point. As the command (no `argv`), it is the subreaper of what it starts, and
    no descendant outlives it; SIGTERM is a Ctrl-C (exit 143)."""
    if argv is None:
        collector.hold()  # until the command's work begins (run/collector.py)
        import atexit

        from agent_eval.run.interrupt import terminate_as_interrupt
        from agent_eval.suite.reaper import become_subreaper, end_descendants

        become_subreaper()
        atexit.register(end_descendants)
        terminate_as_interrupt()
    add_setting_options(app, err_console)  # a plugin's setting is a flag: plugins load before it is read
    _FORMAT.help = format_help()
    try:
        app(args=argv if argv is not None else sys.argv[1:], prog_name="agent-eval")
    finally:
        collector.release()  # a usage error ends the command before its work began


if __name__ == "__main__":
    main()
