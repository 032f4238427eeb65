"""The formats `import FORMAT` and `score --format` read: one table serving both commands.

A row names a reader of cases (for `import`) and a reader of recorded runs (for `score`); a format
that only one command reads leaves the other None. Adding a format is one reader module and one row.
`score` without --format reads a file as the first row whose `detect` recognises it, else as otel.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval.records import Case
from agent_eval.errors import ConfigError
from agent_eval.plugins import claim, owner_of
from agent_eval.plugins.calls import named, optional

if TYPE_CHECKING:
    from agent_eval.ingest.records import Unmappable
    from agent_eval.ingest.recordings import Recording
    from agent_eval.suite.tools import ToolSet

Mapped = tuple[list[tuple[str, Case]], list["Unmappable"], list[str]]  # (label, case), left out, notes
Loaded = tuple[list["Recording"], list["Unmappable"], dict[str, Any]]  # recordings, left out, {"agent", "model"}


@dataclass(frozen=True)
class Format:
    """One format: how `import` reads its cases and how `score` reads its recorded runs."""

    cases: Callable[[Path, Path | None], Mapped] | None = None
    runs: Callable[[Path, ToolSet | None, Path | None], Loaded] | None = None
    takes_logs: bool = False  # --logs joins OTLP log records to this format's spans
    detect: Callable[[bytes], bool] | None = None  # recognises a file of this format (score without --format)


def _otel_cases(source: Path, logs: Path | None) -> Mapped:
    from agent_eval.ingest.otel import otel_cases

    cases, bad, notes = otel_cases(source, logs)
    return [(f"trace {c['metadata']['trace_id']}", c) for c in cases], bad, notes


def _per_record(to_case: Callable[[str, Any], Case], read: Callable[[Path], Any]) -> Callable[..., Mapped]:
    def cases(source: Path, logs: Path | None) -> Mapped:
        from agent_eval.ingest.records import map_each_record

        records, bad = read(source)
        mapped, bad = map_each_record(records, to_case, bad)
        return mapped, bad, []
    return cases


def _deepeval_cases(source: Path, logs: Path | None) -> Mapped:
    from agent_eval.ingest.deepeval import golden_case
    from agent_eval.ingest.deepeval_files import read_goldens

    return _per_record(golden_case, read_goldens)(source, logs)


def _inspect_cases(source: Path, logs: Path | None) -> Mapped:
    from agent_eval.ingest.inspect_logs import is_inspect_log
    from agent_eval.ingest.records import read_bytes, read_records

    if is_inspect_log(read_bytes(source)):
        from agent_eval.ingest.inspect_runs import log_cases

        cases, bad = log_cases(source)
        return cases, bad, []
    from agent_eval.ingest.inspect_samples import sample_case

    return _per_record(sample_case, read_records)(source, logs)


def _evals_cases(source: Path, logs: Path | None) -> Mapped:
    from agent_eval.ingest.openai_evals import eval_case
    from agent_eval.ingest.records import read_records

    return _per_record(eval_case, read_records)(source, logs)


def _otel_runs(path: Path, tools: ToolSet | None, logs: Path | None) -> Loaded:
    from agent_eval.ingest.recordings import otel_recordings

    recordings, bad, model = otel_recordings(path, tools, logs)
    return recordings, bad, {"agent": "otel", "model": model}


def _inspect_runs(path: Path, tools: ToolSet | None, logs: Path | None) -> Loaded:
    from agent_eval.ingest.recordings import inspect_recordings

    recordings, bad, model = inspect_recordings(path)
    return recordings, bad, {"agent": "inspect", "model": model}


def _agent_eval_runs(path: Path, tools: ToolSet | None, logs: Path | None) -> Loaded:
    from agent_eval.ingest.recordings import agent_eval_recordings

    return agent_eval_recordings(path)


def _is_inspect(data: bytes) -> bool:
    from agent_eval.ingest.inspect_logs import is_inspect_log

    return is_inspect_log(data)


def _is_agent_eval(data: bytes) -> bool:
    from agent_eval.ingest.recordings import is_agent_eval_file

    return is_agent_eval_file(data)


FORMATS: dict[str, Format] = {
    "otel": Format(cases=_otel_cases, runs=_otel_runs, takes_logs=True),
    "deepeval": Format(cases=_deepeval_cases),
    "inspect": Format(cases=_inspect_cases, runs=_inspect_runs, detect=_is_inspect),
    "openai-evals": Format(cases=_evals_cases),
    "agent-eval": Format(runs=_agent_eval_runs, detect=_is_agent_eval),
}


def format_row(fmt: str, reads: str, logs: Path | None, unknown: str, no_logs: str) -> Format:
    """The row of `fmt` that reads `reads` ("cases" or "runs"); ConfigError `unknown` when there is none,
    and `no_logs` when --logs was given to a format that has no spans to join them to."""
    row = FORMATS.get(fmt)
    if row is None or getattr(row, reads) is None:
        raise ConfigError(unknown)
    if logs is not None and not row.takes_logs:
        raise ConfigError(no_logs)
    owner = owner_of("format", fmt)
    if owner is not None and reads == "cases" and row.cases is not None:
        return replace(row, cases=_checked(row.cases, fmt, owner, reads, _is_mapped))
    if owner is not None and reads == "runs" and row.runs is not None:
        return replace(row, runs=_checked(row.runs, fmt, owner, reads, _is_loaded))
    return row


_BUILT_IN_FORMATS = frozenset(FORMATS)


def register_format(name: str, row: Format) -> None:
    """Add the format `name` (import and/or score); a name another module registered is a ConfigError. Its
    readers and `detect` go through the guard: what they raise is exit 2 naming the plugin and the row."""
    owner = claim("format", name, _BUILT_IN_FORMATS, __name__)
    FORMATS[name] = replace(row, cases=optional("format", name, owner, row.cases),
                            runs=optional("format", name, owner, row.runs),
                            detect=optional("format", name, owner, row.detect))


def _checked(read: Callable[..., Any], fmt: str, owner: str, reads: str, fits: Callable[[Any], bool],
             ) -> Callable[..., Any]:
    """A plugin's reader whose answer is checked: the wrong shape is exit 2 naming the plugin and the row."""
    def checked(*args: Any) -> Any:
        result = read(*args)
        if not fits(result):
            shape = "(cases, left_out, notes)" if reads == "cases" else "(recordings, left_out, info)"
            raise ConfigError(f"the format {fmt!r} of {named(owner)} returned {type(result).__name__}, "
                              f"not the {shape} its `{reads}` reader must return; fix the plugin.")
        return result
    return checked


def _is_mapped(result: Any) -> bool:
    return (isinstance(result, tuple) and len(result) == 3 and isinstance(result[0], list)
            and all(isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], dict) for x in result[0])
            and isinstance(result[1], list) and isinstance(result[2], list))


def _is_loaded(result: Any) -> bool:
    from agent_eval.ingest.recordings import Recording

    return (isinstance(result, tuple) and len(result) == 3 and isinstance(result[0], list)
            and all(isinstance(x, Recording) for x in result[0]) and isinstance(result[1], list)
            and isinstance(result[2], dict))


UNDETECTED = "otel"  # what `score` reads a file as when no row's `detect` recognises it


def import_formats() -> tuple[str, ...]:
    """The names `import FORMAT` takes."""
    return tuple(name for name, row in FORMATS.items() if row.cases is not None)


def score_formats() -> tuple[str, ...]:
    """The names `score --format` takes."""
    return tuple(name for name, row in FORMATS.items() if row.runs is not None)


def detect_format(path: Path) -> str:
    """The format of a recorded file: the first row whose `detect` recognises it, else UNDETECTED."""
    from agent_eval.ingest.records import read_bytes

    data = read_bytes(path)
    return next((name for name, row in FORMATS.items() if row.detect is not None and row.detect(data)), UNDETECTED)
