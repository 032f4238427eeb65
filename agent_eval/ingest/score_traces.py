"""`agent-eval score TRACES`: recorded runs scored like `run` scores its own, and no agent is called.

Each recording becomes one run of the case it matches and goes through `score_run` (checks, scorers,
judge, metrics); `commands/score.py` concludes with the report, page, history row and exit code as `run` does.
"""
from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rich.console import Console

from agent_eval.ingest.formats import detect_format, format_row, score_formats
from agent_eval.ingest.recordings import Recording
from agent_eval.provider import state
from agent_eval.run.journal import Journal
from agent_eval.run.player import helper_spend
from agent_eval.run.runner import lite_run
from agent_eval.records import Case, CaseEntry, RunRecord
from agent_eval.score.metrics import case_entry, skipped_entry
from agent_eval.score.pipeline import ScoringContext, score_run
from agent_eval.errors import ConfigError
from agent_eval.suite.cases import Suite
from agent_eval.suite.selection import skip_reason

if TYPE_CHECKING:
    from agent_eval.run.pool import WorkerPool

NO_ENV = "no recorded environment"
ENV_FIELDS = ("expected_env_check", "expected_env")


class ScoredRuns:
    """The scored runs of each case, journaled; what `run`'s finish reads of a Runner."""

    def __init__(self, journal: Journal, scoring: ScoringContext, threshold: float) -> None:
        self.journal, self.scoring, self.threshold = journal, scoring, threshold
        self.simulator = None  # scoring never plays a user
        self.pool: WorkerPool | None = None  # nor uses workers
        self.stopped_early = False  # every recorded run is scored
        self.models_used: set[str] = set()  # every model whose tokens a recorded run holds (settings.prices)
        self.skipped_names: dict[str, int] = {}  # a skipped check's name -> the runs it was skipped in
        self.command = state.new_state()  # the judge's endpoints and clients
        self._entries: list[CaseEntry] = []
        self._offsets: list[list[tuple[int, int]]] = []

    def add(self, case: Case, runs: list[RunRecord], skip: str | None = None) -> None:
        written = [self.journal.append(case["id"], run["trial"], run) for run in runs]
        offsets = [p for p in written if p is not None]  # a journal that failed stops the report anyway
        self.models_used.update(m for run in runs for c in run["trace"].get("llm_calls") or ()
                                if (m := c.get("model") or self.scoring.model))
        lite = [lite_run(run, case) for run in runs]
        for run in runs:
            for check in run.get("skipped_checks") or ():
                self.skipped_names[check["name"]] = self.skipped_names.get(check["name"], 0) + 1
        self._entries.append(skipped_entry(case, skip) if skip is not None else case_entry(case, lite, self.threshold))
        self._offsets.append(offsets)

    def case_entries(self) -> list[CaseEntry]:
        return self._entries

    def spent(self, pricing: dict[str, Any] | None) -> dict[str, Any]:
        return helper_spend(self.scoring, self.simulator, pricing, self.command)

    def run_bytes(self) -> Iterator[list[bytes]]:
        for offsets in self._offsets:
            yield [self.journal.run_json(position) for position in offsets]


def env_skipped(case: Case) -> tuple[Case, list[dict[str, Any]]]:
    """The case without its env checks, and those checks as `skipped_checks` entries."""
    from agent_eval.score.env_checks import check_env_item

    skipped = [{"name": check_env_item(item, {})["name"], "reason": NO_ENV}
               for item in case.get("expected_env_check") or []]
    if case.get("expected_env") is not None:
        skipped.append({"name": "expected_env", "reason": NO_ENV})
    if not skipped:
        return case, []
    return cast(Case, {k: v for k, v in case.items() if k not in ENV_FIELDS}), skipped


Plan = tuple[Case, list[Recording], "str | None"]  # a case, its recordings, and why it is skipped (or None)


def plan_cases(work: list[tuple[Case, list[Recording]]], judge_on: bool) -> list[Plan]:
    """Each case with its recordings and its skip reason: no recorded env for its only checks, or the
    reason `run` would skip it."""
    plans: list[Plan] = []
    for case, recs in work:
        scored, skipped = env_skipped(case) if not all(r.has_env for r in recs) else (case, [])
        skip = NO_ENV if skipped and not _has_check(scored) else skip_reason(scored, os.environ, judge_on)
        plans.append((case, recs, skip))
    return plans


def _has_check(case: Case) -> bool:
    from agent_eval.score.judge import judged_fields
    from agent_eval.suite.validation import deterministic_checks

    return bool(deterministic_checks(case) or judged_fields(case))


async def _score_case(suite: Suite, case: Case, recordings: list[Recording], ctx: ScoringContext,
                      limit: asyncio.Semaphore) -> list[RunRecord]:
    from agent_eval.score.envdiff import apply_diff
    from agent_eval.score.judge import JUDGE_ERROR

    scored, skipped = env_skipped(case)
    has_env = all(r.has_env for r in recordings)
    if has_env:
        scored, skipped = case, []
    initial: dict[str, Any] = {}
    expected = None
    if has_env:
        from agent_eval.run.world import case_template, expected_of

        template = case_template(suite, case)
        if template.error is not None:
            raise ConfigError(f"case {case['id']!r}: {template.error}")
        initial, expected = template.env, expected_of(case, suite.tools, template)
    given = [r.trial for r in recordings]
    trials = [t for t in given if t is not None]
    if len(trials) != len(given) or len(set(trials)) != len(trials):
        trials = list(range(len(recordings)))

    async def one(rec: Recording, trial: int) -> RunRecord:
        final_env = apply_diff(initial, rec.trace.get("final_env_diff") or []) if has_env else {}
        error = rec.error if rec.error and not rec.error.startswith(JUDGE_ERROR) else None
        async with limit:
            run = await score_run(scored, trial, rec.trace, final_env, expected, error, ctx)
        run["skipped_checks"] = skipped
        return run

    runs = await asyncio.gather(*(one(r, t) for r, t in zip(recordings, trials, strict=True)))
    return sorted(runs, key=lambda run: run["trial"])


def load_recordings(path: Path, fmt: str | None, suite: Suite, logs: Path | None = None,
                    ) -> tuple[str, list[Recording], list[Any], dict[str, Any]]:
    fmt = fmt or detect_format(path)
    row = format_row(fmt, "runs", logs, f"--format {fmt!r} is not known; use one of {', '.join(score_formats())}.",
                     f"--logs {logs} joins OTLP log records to OpenTelemetry spans; {path} is read as "
                     f"{fmt}. Drop --logs, or pass --format otel.")
    assert row.runs is not None
    recordings, bad, head = row.runs(path, suite.tools, logs)
    return fmt, recordings, bad, head


def print_left_out(path: Path, bad: list[Any], unmatched: list[Recording], suite: Suite, err: Console) -> None:
    for warning in (b for b in bad if not b.left_out):
        err.print(f"warning: {warning}", highlight=False, markup=False, soft_wrap=True)
    bad = [b for b in bad if b.left_out]
    for line in ([f"{len(bad)} record(s) of {path} could not be read as runs and were left out:"]
                 + [f"  - {b}" for b in bad] if bad else []):
        err.print(line, highlight=False, markup=False, soft_wrap=True)
    if unmatched:
        err.print(f"{len(unmatched)} recorded run(s) of {path} match no case of {suite.path} (by "
                  "metadata.trace_id or case id) and were left out:", highlight=False, markup=False, soft_wrap=True)
        for rec in unmatched:
            err.print(f"  - {rec.label}", highlight=False, markup=False, soft_wrap=True)


async def score_all(suite: Suite, plans: list[Plan], ctx: ScoringContext,
                     concurrency: int, out: ScoredRuns) -> None:
    limit = asyncio.Semaphore(max(1, concurrency))
    with state.using(out.command):
        results = await asyncio.gather(*(_score_case(suite, case, recs, ctx, limit) for case, recs, skip in plans
                                         if skip is None))
    scored = iter(results)
    for case, _, skip in plans:
        out.add(case, [] if skip is not None else next(scored), skip)
