"""`agent-eval bench list` and `agent-eval bench import NAME`: the standard benchmarks as suite folders."""
from __future__ import annotations

import importlib
from pathlib import Path

from rich.console import Console

from agent_eval.bench import BENCHMARKS, ImportRequest, find_benchmark
from agent_eval.errors import EXIT_PASSED


def list_command(console: Console) -> int:
    """Each benchmark: its pinned upstream version, licence, parts and cases."""
    from rich.table import Table

    table = Table("benchmark", "upstream", "licence", "parts", "cases", box=None, pad_edge=False)
    for bench in BENCHMARKS:
        parts = "\n".join(f"{name} ({count})" for name, count in bench.parts)
        table.add_row(bench.name, f"{bench.package}=={bench.version}", bench.licence,
                      f"{bench.part}: {parts}" if len(bench.parts) == 1 else f"{bench.part}:\n{parts}",
                      str(sum(count for _, count in bench.parts)))
    console.print(table)
    return EXIT_PASSED


def import_command(name: str, out: Path, source: Path | None, options: dict[str, tuple[str, ...]],
                   console: Console) -> int:
    """Write the suite folder of benchmark `name` and say what it holds."""
    bench = find_benchmark(name)
    result = importlib.import_module(bench.module).import_suite(ImportRequest(out, source, options))
    counts = ", ".join(f"{value} {key.replace('_', ' ')}" for key, value in result.counts.items())
    console.print(f"wrote {result.folder} ({counts})", highlight=False, markup=False, soft_wrap=True)
    if result.left_out:
        console.print(f"left out {len(result.left_out)} entr{'y' if len(result.left_out) == 1 else 'ies'} whose gold "
                      f"the upstream grader rejects (listed in bench.lock.json): {', '.join(result.left_out)}",
                      highlight=False, markup=False, soft_wrap=True)
    console.print(f"run it: agent-eval run --cases {result.cases_file}", highlight=False, markup=False, soft_wrap=True)
    return EXIT_PASSED
