"""`agent-eval list`: the selected cases, a table on a terminal and TSV when piped."""
from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from agent_eval.errors import ConfigError


def list_command(cases: Path, filters: Sequence[str], console: Console) -> int:
    """Print id, input kind and tags of each selected case; no case selected is exit 2."""
    from agent_eval.suite.cases import load_suite
    from agent_eval.suite.selection import select_cases

    suite = load_suite(cases)
    selected = select_cases(suite.cases, list(filters))
    if not selected:
        raise ConfigError(f"no case of {cases} matches --filter {' '.join(filters)!r}.")
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
