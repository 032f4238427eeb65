"""`compare BASE NEW --pairwise`: the judge asked which of each pair of runs answered better.

The pairs are every common case (present in both reports, neither skipped, errored nor not run in
either) and every trial index both reports ran without error. The rubrics come from the NEW report's
case file (or --cases; named before it is loaded), and the judge is resolved as `run` resolves it, never from a report.
"""
from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from rich.console import Console

from agent_eval.records import UNCOMPARED, RunRecord, Trace
from agent_eval.flags import DEFAULTS

CONCURRENT_ASKS = 8


def pairs_of(base: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, int, RunRecord, RunRecord]]:
    """(case id, trial, base run, new run) of every pair to judge, in the new report's case order."""
    def counted(report: Mapping[str, Any]) -> dict[str, dict[int, RunRecord]]:
        out = {}
        for case in report.get("cases") or []:
            if case.get("status") in UNCOMPARED:
                continue
            out[str(case.get("id"))] = {r["trial"]: r for r in case.get("runs") or []
                                        if r.get("status") != "error" and isinstance(r.get("trial"), int)}
        return out

    b, n = counted(base), counted(new)
    return [(case_id, trial, b[case_id][trial], runs[trial])
            for case_id, runs in n.items() if case_id in b
            for trial in sorted(runs) if trial in b[case_id]]


def run_pairwise(base: Mapping[str, Any], new: Mapping[str, Any], new_path: Path, console: Console, *,
                 judge_model: str | None, judge_repeat: int | None, level: float | None,
                 environ: Mapping[str, str] | None = None, cases: Path | None = None) -> dict[str, Any]:
    """Judge every pair in both orders; the `pairwise` figures (report/pairwise.py) with the judge's spend."""
    from agent_eval.commands.judging import resolve_judge
    from agent_eval.errors import ConfigError
    from agent_eval.report.pairwise import summarize_pairs
    from agent_eval.score.judge import default_cache_dir
    from agent_eval.score.pairwise import PairVerdict, PairwiseJudge, pair_cache

    if judge_repeat is not None and judge_repeat < 1:
        raise ConfigError(f"--judge-repeat must be at least 1 (got {judge_repeat}).")
    env = os.environ if environ is None else environ
    # compare runs no code of a report's: the case file the NEW report names is read for its rubrics only
    suite, (model, base_url, api_key) = resolve_judge(new, new_path, cases, judge_model, None, console, env,
                                                      code=False)
    cache = None if judge_repeat else pair_cache(default_cache_dir(env))
    judge = PairwiseJudge(model, base_url, api_key, cache, judge_repeat, DEFAULTS.judge_timeout)
    rubrics = {str(c["id"]): c.get("rubric") for c in suite.cases}
    pairs = pairs_of(base, new)

    async def ask_all() -> list[PairVerdict]:
        limit = asyncio.Semaphore(CONCURRENT_ASKS)

        async def one(case_id: str, trial: int, b: RunRecord, n: RunRecord) -> PairVerdict:
            async with limit:
                return await judge.judge_pair(case_id, trial, b.get("trace") or cast(Trace, {}),
                                              n.get("trace") or cast(Trace, {}),
                                              rubrics.get(case_id))
        return list(await asyncio.gather(*(one(*pair) for pair in pairs)))  # clients close with the loop

    verdicts = asyncio.run(ask_all()) if pairs else []
    figures = summarize_pairs(verdicts, level)
    figures["judge_model"] = model
    figures["judge"] = judge.usage.as_summary(model, suite.settings.get("pricing"))
    figures["judge"]["deduplicated"] = judge.usage.deduplicated  # the same prompt asked twice: one answer
    return figures
