"""`agent-eval import FORMAT SOURCE`: other tools' files as a validated case file (docs/import-and-score.md)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console

from agent_eval.errors import CaseFileError, ConfigError
from agent_eval.ingest.formats import format_row, import_formats
from agent_eval.ingest.records import TOO_DEEP, Unmappable
from agent_eval.suite.fields import id_problem, is_too_deep


def map_records(fmt: str, source: Path, logs: Path | None = None,
                ) -> tuple[list[tuple[str, dict]], list[Unmappable], list[str]]:
    """(record label, case) for every record that maps, the records that do not, and notes."""
    row = format_row(fmt, "cases", logs, f"unknown import format {fmt!r}; use one of {', '.join(import_formats())}.",
                     f"--logs {logs} joins OTLP log records to OpenTelemetry spans; it goes with "
                     f"`import otel`, not `import {fmt}`.")
    assert row.cases is not None
    return row.cases(source, logs)




def screen(cases: list[tuple[str, dict]], bad: list[Unmappable]) -> list[tuple[str, dict]]:
    """Every reader's cases pass here: one nested too deep, or whose id or a tool name holds a control
    character, is left out as unmappable, so the rest import."""
    kept = []
    for where, case in cases:
        names = [c.get("name") for c in case.get("expected_tools") or () if isinstance(c, dict)]
        problem = id_problem(case.get("id")) or next(
            (f"the tool name {n!r} holds a control character (a newline, tab or escape); remove it"
             for n in names if isinstance(n, str) and id_problem(n)), None)
        if problem is None and is_too_deep(case):
            problem = TOO_DEEP
        if problem is not None:
            bad.append(Unmappable(where, problem))
        else:
            kept.append((where, case))
    return kept


def tools_ref(tools: str, out_dir: Path) -> str:
    """The suite's `tools`: a file path relative to the written case file, or a dotted module as given."""
    path = Path(tools)
    if path.suffix == ".py" or path.exists():
        if not path.is_file():
            raise ConfigError(f"--tools {tools}: no such file; pass the tools module (a .py file) the cases use.")
        return Path(os.path.relpath(path.resolve(), out_dir.resolve())).as_posix()
    return tools


def document(cases: list[dict], tools_ref: str | None) -> bytes:
    doc: Any = {"suite": {"tools": tools_ref}, "cases": cases} if tools_ref else cases
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def _probe(cases: list[dict], tools_ref: str | None) -> bytes:
    """The document validated beside the output: without --tools it names no tools, so no code is
    loaded (a bare list would load a tools.py found in that folder)."""
    return orjson.dumps({"suite": {"tools": tools_ref or []}, "cases": cases})


def validate(cases: list[tuple[str, dict]], tools_ref: str | None, out_dir: Path,
              bad: list[Unmappable]) -> list[tuple[str, dict]]:
    """Keep the cases that validate beside the output file; the others become unmappable records."""
    from agent_eval.suite.cases import load_suite

    probe = out_dir / f".agent-eval-import-{os.getpid()}.json"
    try:
        for _ in range(2):  # a second pass only confirms the file once the invalid cases are out
            probe.write_bytes(_probe([c for _, c in cases], tools_ref))
            try:
                load_suite(probe)
                return cases
            except CaseFileError as exc:
                by_case: dict[str, list[str]] = {}
                for problem in exc.problems:
                    if problem.case_id is None:
                        raise ConfigError(f"the imported cases cannot be validated: {problem.field}: "
                                          f"{problem.message}") from None
                    field = f"{problem.field}: " if problem.field else ""
                    by_case.setdefault(problem.case_id, []).append(field + problem.message)
                kept = []
                for where, case in cases:
                    if case["id"] in by_case:
                        bad.append(Unmappable(where, f"case {case['id']!r} does not validate: "
                                              + "; ".join(by_case[case["id"]])))
                    else:
                        kept.append((where, case))
                cases = kept
                if not cases:
                    return cases
        raise ConfigError("the imported cases do not validate; this is a bug, please report it.")
    except OSError as exc:
        raise ConfigError(f"cannot write in {out_dir} ({exc.strerror or exc}); pass --out with a writable "
                          "path.") from None
    finally:
        probe.unlink(missing_ok=True)


def unique(cases: list[tuple[str, dict]], bad: list[Unmappable]) -> list[tuple[str, dict]]:
    seen: dict[str, str] = {}
    kept = []
    for where, case in cases:
        if case["id"] in seen:
            bad.append(Unmappable(where, f"duplicate case id {case['id']!r} (first at {seen[case['id']]})"))
            continue
        seen[case["id"]] = where
        kept.append((where, case))
    return kept


def print_problems(bad: list[Unmappable], notes: list[str], source: Path, err: Console) -> None:
    if bad:
        what = f"records of {source} could not be mapped and were" if len(bad) != 1 else \
            f"record of {source} could not be mapped and was"
        err.print(f"{len(bad)} {what} left out:", highlight=False, markup=False, soft_wrap=True)
        for item in bad:
            err.print(f"  - {item}", highlight=False, markup=False, soft_wrap=True)
    for note in notes:
        err.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
