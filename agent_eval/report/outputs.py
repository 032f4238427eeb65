"""What a finished command writes besides its JSON report, one row of OUTPUTS each: the HTML page, the history
row, JUnit, Markdown, OTel and OTLP."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent_eval.errors import ConfigError
from agent_eval.redaction import redact_secrets, redact_url
from agent_eval.plugins import claim, owner_of
from agent_eval.plugins.calls import Raised, raised
from agent_eval.records import Report
from agent_eval.report.files import history_path_of, page_path_of, write_atomic
from agent_eval.report.html import MAX_BYTES, KEEP_TRACE_STATUSES, page_from_json
from agent_eval.tracebacks import call_user

if TYPE_CHECKING:
    from agent_eval.report.otlp_post import RunSender


class OutputSettings(Protocol):
    """What the outputs read of a command's settings (`run/config.py`'s `Settings`): a setting's value by its
    row's name, as a plugin's row reads its own (`flag`)."""

    @property
    def cases_file(self) -> Path: ...

    def get(self, name: str) -> Any: ...


def write_page(report: Report, report_path: Path, run_bytes: Any, out: Path) -> None:
    """The HTML page, embedding the report file as it is, or past 50 MB only failed/errored traces."""
    size = report_path.stat().st_size
    if size <= MAX_BYTES:
        write_atomic(out, page_from_json(report, report_path.read_bytes()))
        return
    import orjson

    left_out = 0
    cases = []
    for case, raw_runs in zip(report["cases"], run_bytes, strict=True):
        runs = []
        for lite, raw in zip(case["runs"], raw_runs, strict=True):
            if lite["status"] in KEEP_TRACE_STATUSES:
                runs.append(orjson.loads(raw))
            else:
                runs.append({**lite, "trace": None})
                left_out += 1
        cases.append({**case, "runs": runs})
    trimmed = {**report, "cases": cases}
    write_atomic(out, page_from_json(report, orjson.dumps(trimmed), left_out))


@dataclass(frozen=True)
class Output:
    """One thing a finished command writes besides its JSON report (a file, a history row, a POST)."""

    kind: str  # its name in the closing lines and in a warning ("JUnit")
    target: Callable[[OutputSettings, Path], Any]  # (settings, the report's path) -> where, or None: not asked for
    write: Callable[[OutputJob], None]
    listed: bool = True  # named in the closing lines of the terminal output
    waits: bool = False  # may wait on another host: sent before the JSON report, while a signal still counts


@dataclass(frozen=True)
class OutputJob:
    """What an output's writer gets."""

    report: Report
    report_path: Path
    target: Any  # what its row's `target` returned
    run_bytes: Callable[[], Any]  # per case entry, its runs as JSON bytes (call it only when needed)
    cfg: OutputSettings
    warn: Callable[[str], None]
    sender: RunSender | None = None  # the --otlp-endpoint sender the runs were offered to as they finished


def flag(name: str) -> Callable[[OutputSettings, Path], Any]:
    """A row's target: the value of the setting `name` (None when it has none)."""
    return lambda cfg, report_path: cfg.get(name)


def _write_html(job: OutputJob) -> None:
    write_page(job.report, job.report_path, job.run_bytes(), job.target)


def _write_history(job: OutputJob) -> None:
    from agent_eval.report.history import cases_in_file, git_commit_of, record_run_or_recover

    record_run_or_recover(job.target, job.report, git_commit_of(job.cfg.cases_file), job.warn,
                          cases_in_file(job.cfg.cases_file))


def _write_junit(job: OutputJob) -> None:
    from agent_eval.report.junit import write_junit

    write_junit(job.report, job.target)


def _write_markdown(job: OutputJob) -> None:
    from agent_eval.report.markdown import write_markdown

    write_markdown(job.report, job.target)


def _write_otel(job: OutputJob) -> None:
    from agent_eval.report.otel import write_otel

    write_otel(job.report, job.run_bytes(), job.target)


def _send_otlp(job: OutputJob) -> None:
    send_otlp(job.report, job.run_bytes(), job.target, job.warn, job.sender)


OUTPUTS: list[Output] = [
    Output("HTML", lambda cfg, report_path: page_path_of(report_path) if not cfg.get("no_html") else None, _write_html),
    Output("history", lambda cfg, report_path: history_path_of(cfg.get("output_dir")), _write_history, listed=False),
    Output("JUnit", flag("junit"), _write_junit),
    Output("Markdown", flag("markdown"), _write_markdown),
    Output("OTel", flag("otel"), _write_otel),
    Output("OTLP", flag("otlp_endpoint"), _send_otlp, listed=False, waits=True),
]
"""Every output, in the order they are written; a new one is a writer and one row."""


def write_extras(report: Report, report_path: Path, run_bytes: Callable[[], Any], cfg: OutputSettings,
                 warn: Callable[[str], None], sender: RunSender | None = None,
                 waits: bool = False) -> tuple[list[str], list[str]]:
    """Every row of OUTPUTS whose target is set and whose `waits` is `waits`: the HTML page (unless --no-html),
    the history row, and the optional JUnit, Markdown and OTel outputs; with `waits`, the OTLP sending.

    `run_bytes()` yields, per case entry, its runs as JSON bytes (each output that reads them calls it).
    `sender` is the --otlp-endpoint sender the runs were offered to as they finished, if any.

    Returns one "kind: path" line per listed file written, for the closing lines of the terminal output, and
    one line per plugin output whose writer raised (its bug: anything but a file error), naming the plugin,
    the row and the exception; the other outputs are still written. A file that cannot be written never
    changes the verdict: `warn` gets one line with its path and the reason.
    """
    written = []
    failed = []
    targets = []
    for output in [output for output in OUTPUTS if output.waits == waits]:
        target = _call(output, output.target, cfg, report_path)
        if isinstance(target, Raised):  # a plugin's `target` raised: that output is not written
            failed.append(target.message)
            continue
        targets.append((output, target))
    for output, target in targets:
        _refuse_own_files(output, target, report_path)
    for output, target in targets:
        if target is None or target == "":
            continue
        error = _write(output, OutputJob(report, report_path, target, run_bytes, cfg, warn, sender))
        if isinstance(error, Raised):
            failed.append(error.message)
            continue
        if isinstance(error, (OSError, sqlite3.Error)):
            shown = redact_url(target) if isinstance(target, str) else target  # a URL shown has no secret
            warn(f"warning: could not write the {output.kind} file {shown}: {_reason(error)}; "
                 "the verdict is unchanged.")
            continue
        if output.listed:
            written.append(f"{output.kind}: {target}")
    return written, failed


def _write(output: Output, job: OutputJob) -> OSError | sqlite3.Error | Raised | None:
    """Write one output: None, or what stopped it: a file error, or (`Raised`) anything else a plugin's
    writer raised; agent-eval's own writers raise nothing else but a bug, which goes on."""
    try:
        written = _call(output, output.write, job, passes=(OSError, sqlite3.Error))
    except (OSError, sqlite3.Error) as exc:
        return exc
    return written if isinstance(written, Raised) else None


def _call(output: Output, fn: Callable[..., Any], *args: Any,
          passes: tuple[type[BaseException], ...] = ()) -> Any:
    """`fn(*args)`; for a plugin's row through the guard, where an exception of `passes` is raised as for a
    built-in row, and anything else is `Raised`, its message naming the plugin, the row and the exception."""
    owner = owner_of("output", output.kind)
    if owner is None:
        return fn(*args)
    called = call_user(fn, *args)
    if called.error is None:
        return called.value
    if isinstance(called.error, passes):
        raise called.error
    return Raised(redact_secrets(raised("output", output.kind, owner, called.error)))


_BUILT_IN_OUTPUTS = frozenset(output.kind for output in OUTPUTS)


def register_output(output: Output) -> None:
    """Add an output, written after the built-in ones; a kind another module registered is a ConfigError."""
    claim("output", output.kind, _BUILT_IN_OUTPUTS, __name__)
    OUTPUTS[:] = [o for o in OUTPUTS if o.kind != output.kind] + [output]


def _refuse_own_files(output: Output, target: Any, report_path: Path) -> None:
    """A plugin's output may not overwrite the report, its journal or its page (exit 2 naming the plugin)."""
    if owner_of("output", output.kind) is None or not isinstance(target, (str, Path)) or not str(target):
        return
    own = {report_path: "the JSON report", report_path.with_suffix(".jsonl"): "the run's journal",
           page_path_of(report_path): "the HTML page"}
    hit = next((what for path, what in own.items() if Path(target).resolve() == path.resolve()), None)
    if hit:
        raise ConfigError(f"the output {output.kind!r} of {owner_of('output', output.kind)} would write {target}, "
                          f"which is {hit}; an output writes a file of its own. Fix the plugin's target.")


def send_otlp(report: Report, run_bytes: Any, url: str, warn: Callable[[str], None],
              sender: RunSender | None = None) -> None:
    """Finish sending the runs' traces (every run, when none was offered as it finished); failures are one
    warning with their count."""
    from agent_eval.report.otlp_post import RunSender, warning

    every_run = sender is None
    line = warning(url, (sender or RunSender(url, report)).finish(report, run_bytes, every_run=every_run))
    if line:
        warn(line)


def _reason(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) or type(exc).__name__
