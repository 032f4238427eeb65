"""Re-scoring a report's frozen traces (what `agent-eval rescore` does) with the case file as it is now.

Each run's final env is rebuilt from the case's current initial env plus the trace's
`final_env_diff`. The deterministic checks, the metrics and the judge run again; the agent never does.
With `--judge-repeat N` every run the judge is asked about gets N uncached answers, and the report
gains the judge's agreement per case and overall. A new report is written beside the old one.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any


from agent_eval.records import Case, CaseEntry, Report, RunRecord
from agent_eval.score import stats
from agent_eval.suite.cases import Suite
from agent_eval.suite.selection import has_only_judged_checks
from agent_eval.score.env_checks import is_env_check
from agent_eval.score.envdiff import apply_diff, get_path, show_json
from agent_eval.errors import ConfigError
from agent_eval.score.judge import (JUDGE_ERROR, judge_summary)
from agent_eval.score.matchers import json_equal
from agent_eval.score.metrics import case_entry, skipped_entry, summarize
from agent_eval.report.model import build_report, new_run_id, now_iso
from agent_eval.run.world import case_template, expected_of, initial_state
from agent_eval.score.pipeline import ScoringContext, score_run
from agent_eval.run.simulator import user_sim_summary

if TYPE_CHECKING:
    from agent_eval.score.custom import ScorerSet
    from agent_eval.score.judge import Judge

def validate_diff_fits(case_id: str, initial_env: Any, diff: list[dict[str, Any]], report_path: Path) -> None:
    """Exit 2 (ConfigError) when the trace's env diff no longer fits the case's current initial env."""
    for entry in diff:
        found, value = get_path(initial_env, entry["path"])
        if "old" in entry and found and json_equal(value, entry["old"]):
            continue
        if "old" not in entry and not found:
            continue
        where = ".".join(str(p) for p in entry["path"]) or "(root)"
        was = show_json(entry["old"], 80) if "old" in entry else "absent"
        now = show_json(value, 80) if found else "absent"
        raise ConfigError(f"case {case_id!r}: the trace in {report_path} no longer fits the case file: at "
                          f"{where} the run started from {was}, and the initial env is now {now}. Re-run the "
                          "case (`agent-eval run --filter ...`) instead of rescoring it.")


async def _rescore_case(suite: Suite, case: Case, runs: list[RunRecord], ctx: ScoringContext,
                        limit: asyncio.Semaphore) -> list[RunRecord]:
    template = case_template(suite, case)  # a backend is built again from the tools module as it is now
    if template.error is not None:
        raise ConfigError(f"case {case['id']!r}: {template.error}")
    initial = template.env
    expected = expected_of(case, suite.tools, template)

    async def one(run: RunRecord) -> RunRecord:
        trace = run["trace"]
        kept = None
        if trace.get("state_resource"):
            # The env came from an MCP server's state resource: its initial state is the server's, not
            # the case file's, so the env checks of the run stand as they were.
            kept, final_env = [c for c in run.get("checks") or [] if is_env_check(c)], {}
        else:
            final_env = apply_diff(initial, trace.get("final_env_diff") or [])
        # An agent-side infrastructure error cannot be undone by rescoring; a judge error can.
        error = run.get("error")
        error = error if error and not str(error).startswith(JUDGE_ERROR) else None
        async with limit:
            return await score_run(case, run["trial"], trace, final_env, expected, error, ctx, kept)

    return list(await asyncio.gather(*(one(run) for run in runs)))


def agreement_of(judge: Judge | None, case_id: str) -> float | None:
    votes = judge.agreement.get(case_id, []) if judge is not None else []
    return stats.ratio(sum(votes), len(votes))


def select_work(old: Mapping[str, Any], suite: Suite, report_path: Path,
                judge_on: bool) -> tuple[list[CaseEntry], list[Any], list[Case]]:
    """(the report's entries still in the case file, the ids of those that are not, the cases to score);
    a trace that no longer fits its case's initial env is exit 2."""
    by_id = {c["id"]: c for c in suite.cases}
    entries = [e for e in old["cases"] if e.get("id") in by_id]
    missing = [e.get("id") for e in old["cases"] if e.get("id") not in by_id]
    if not entries:
        raise ConfigError(f"none of the cases of {report_path} is in {suite.path} anymore.")
    work = []
    for entry in entries:
        case = by_id[entry["id"]]
        if entry.get("status") == "skipped" or (not judge_on and has_only_judged_checks(case)):
            continue
        for run in entry.get("runs") or []:
            if run["trace"].get("state_resource"):
                continue  # its env started from the server's state, not from the case file
            validate_diff_fits(case["id"], initial_state(suite, case), run["trace"].get("final_env_diff") or [],
                               report_path)
        work.append(case)
    return entries, missing, work


async def rescore_all(suite: Suite, entries: list[CaseEntry], by_id: dict[str, Case], judge_on: bool,
                       ctx: ScoringContext, concurrency: int, threshold: float) -> list[CaseEntry]:
    limit = asyncio.Semaphore(max(1, concurrency))
    out: list[CaseEntry] = []
    for entry in entries:
        case = by_id[entry["id"]]
        if entry.get("status") == "skipped":
            out.append(skipped_entry(case, entry.get("skip_reason")))
        elif not judge_on and has_only_judged_checks(case):
            out.append(skipped_entry(case, "judge disabled"))
        else:
            runs = await _rescore_case(suite, case, entry.get("runs") or [], ctx, limit)
            out.append(case_entry(case, runs, threshold))
    return out


def new_report(old: dict[str, Any], settings: dict[str, Any], entries: list[CaseEntry], judge: Judge | None,
               pricing: dict[str, Any],
                judge_repeat: int | None, scorers: ScorerSet | None, cases_file: str) -> Report:
    """The report of a rescore; the write keeps only the top-level keys, so provenance is in settings."""
    rows = [{"id": e["id"], "status": e["status"], "runs": e["runs"]} for e in entries]
    # The report's counts never size work: K is what its cases hold, whatever settings.repeat claims.
    held = max((len(e["runs"]) for e in entries), default=1) or 1
    stored = settings.get("repeat")
    settings["repeat"] = min(stored, held) if isinstance(stored, int) and stored >= 1 else held
    summary = summarize(rows, settings["repeat"], scorers)
    summary["judge"] = judge_summary(judge, pricing)
    # Rescoring never calls the simulator: the dialogues, and what they cost, are those of the old run.
    summary["user_sim"] = (old.get("summary") or {}).get("user_sim") or user_sim_summary(None, None)
    if judge_repeat:
        votes = [v for runs in (judge.agreement.values() if judge else ()) for v in runs]
        summary["judge"]["agreement"] = stats.ratio(sum(votes), len(votes))
        summary["judge"]["agreement_runs"] = len(votes)
    return build_report(run_id=new_run_id(), created_at=now_iso(), suite=old.get("suite"), agent=old.get("agent"),
                        model=old.get("model"), cases_file=cases_file, settings=settings, summary=summary,
                        cases=entries,
                        interrupted=bool(old.get("interrupted")))
