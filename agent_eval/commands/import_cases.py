"""`agent-eval import FORMAT SOURCE`: other tools' files as a validated case file (docs/import-and-score.md)."""
from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console

from agent_eval.errors import ConfigError
from agent_eval.ingest.importer import (Target, document, empty_env_warning, map_records, print_problems, screen,
                                        suite_block, tools_ref, unique, validate)


def import_command(fmt: str, source: Path, out: Path | None, tools: str | None, console: Console,
                   err: Console, logs: Path | None = None, into: Path | None = None) -> int:
    """Map SOURCE to cases, validate them, write them to OUT (or stdout) or append them to INTO; 2 when no
    record maps."""
    if into is not None and (out is not None or tools is not None):
        raise ConfigError(f"--into {into} appends to that case file and keeps its suite block (its tools "
                          "included); it takes neither --out nor --tools.")
    target = Target(into) if into is not None else None
    mapped, bad, notes = map_records(fmt, source, logs)
    mapped = unique(screen(mapped, bad), bad)
    out_dir = into.parent if into is not None else out.parent if out is not None else Path.cwd()
    ref = tools_ref(tools, out_dir) if tools else None
    suite = None
    if mapped and target is not None:
        mapped, suite = validate(target.renumber(mapped), target.block, out_dir, bad)
    elif mapped:
        out_dir.mkdir(parents=True, exist_ok=True)
        mapped, suite = validate(mapped, {"tools": ref} if ref else None, out_dir, bad)
    print_problems(bad, notes, source, err)
    if not mapped:
        raise ConfigError(f"no record of {source} could be mapped to a case as {fmt} "
                          f"({len(bad)} left out, listed above); check the format and the file.")
    cases = [c for _, c in mapped]
    count = f"{len(cases)} case{'s' if len(cases) != 1 else ''}"
    left_out = f"; {len(bad)} record{'s' if len(bad) != 1 else ''} left out" if bad else ""
    if target is not None:
        backup = target.write(cases)
        err.print(f"appended {count} from {source} to {into} (the original is kept as {backup}){left_out}",
                  highlight=False, markup=False, soft_wrap=True)
        return 0
    data = document(cases, suite_block(cases, ref))
    if out is None:
        console.file.write(data.decode())
        console.file.flush()
    else:
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, out)
    err.print(f"imported {count} from {source} to {'stdout' if out is None else out}{left_out}",
              highlight=False, markup=False, soft_wrap=True)
    warning = empty_env_warning(suite, "the imported file") if suite is not None else None
    if warning:
        err.print(warning, highlight=False, markup=False, soft_wrap=True)
    return 0
