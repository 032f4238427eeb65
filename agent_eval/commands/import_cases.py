"""`agent-eval import FORMAT SOURCE`: other tools' files as a validated case file (docs/import-and-score.md)."""
from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console

from agent_eval.errors import ConfigError
from agent_eval.ingest.importer import document, map_records, print_problems, screen, tools_ref, unique, validate


def import_command(fmt: str, source: Path, out: Path | None, tools: str | None, console: Console,
                   err: Console, logs: Path | None = None) -> int:
    """Map SOURCE to cases, validate them, write them to OUT (or stdout); 2 when no record maps."""
    mapped, bad, notes = map_records(fmt, source, logs)
    mapped = unique(screen(mapped, bad), bad)
    out_dir = out.parent if out is not None else Path.cwd()
    ref = tools_ref(tools, out_dir) if tools else None
    if mapped:
        mapped = validate(mapped, ref, out_dir, bad)
    print_problems(bad, notes, source, err)
    if not mapped:
        raise ConfigError(f"no record of {source} could be mapped to a case as {fmt} "
                          f"({len(bad)} left out, listed above); check the format and the file.")
    data = document([c for _, c in mapped], ref)
    if out is None:
        console.file.write(data.decode())
        console.file.flush()
    else:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, out)
    where = "stdout" if out is None else str(out)
    err.print(f"imported {len(mapped)} case{'s' if len(mapped) != 1 else ''} from {source} to {where}"
              + (f"; {len(bad)} record{'s' if len(bad) != 1 else ''} left out" if bad else ""),
              highlight=False, markup=False, soft_wrap=True)
    return 0
