"""`agent-eval rescore REPORT`: a report's frozen traces re-scored with the case file as it is now.

The new report, its page and its history row (marked `rescored_from`) go beside REPORT; JUnit and
Markdown are written as `run` writes them. The agent is never called.
"""
from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path

import orjson
from rich.console import Console

from agent_eval.commands.conclude import conclude, say
from agent_eval.errors import ConfigError
from agent_eval.flags import DEFAULTS, Flags
from agent_eval.flags.rows import JUDGE_REPEAT, JUDGE_TIMEOUT, NO_JUDGE, QUIET
from agent_eval.llm import redact_url
from agent_eval.report.model import load_report
from agent_eval.report.shapes import RESCORE_SHAPE
from agent_eval.run.config import first, resolve
from agent_eval.score.judge import build_judge, needs_judge, require_judge, runs_to_judge
from agent_eval.score.pipeline import ScoringContext
from agent_eval.commands.report_judge import judge_for_report, report_cases_file
from agent_eval.commands.rescoring import agreement_of, new_report, rescore_all, select_work
from agent_eval.suite.cases import load_suite


def rescore_command(flags: Flags, console: Console, err: Console, environ: Mapping[str, str] | None = None) -> int:
    """Re-score flags.report's traces, write the new report and every extra output beside it, print it
    (only the verdict line with --quiet), and return the exit code."""
    env = os.environ if environ is None else environ
    for row in (JUDGE_TIMEOUT, JUDGE_REPEAT):  # a flag out of its range is named before the report is read
        row.checked(flags.value(row.name))
    if flags.count("judge_repeat") is not None and flags.is_on("no_judge"):
        raise ConfigError("--judge-repeat asks the judge again, and --no-judge forbids it; pass one of them.")
    report_path = Path(str(flags.path("report")))
    old = load_report(report_path, RESCORE_SHAPE)
    cases_file = report_cases_file(old, report_path, flags.path("cases") if flags.given("cases") else None,
                                   lambda line: say(err, line))
    suite = load_suite(cases_file)
    # Resolved as `run` resolves its settings; the outputs go beside REPORT.
    cfg = resolve(flags, suite, env, command="rescore").replace(output_dir=report_path.parent)
    judge_repeat, judge_on, judge_timeout = cfg[JUDGE_REPEAT], not cfg[NO_JUDGE], cfg[JUDGE_TIMEOUT]
    settings = dict(old.get("settings") or {})
    entries, missing, work = select_work(old, suite, report_path, judge_on)
    judged = needs_judge(work) if judge_on else None
    model, base_url, api_key = judge_for_report(old, suite, flags.text("judge_model"), judged is not None, env)
    if judged is not None:
        require_judge(model, api_key, judged, suite.path)
    judge = build_judge(judge_on, model, base_url, api_key, False, work, judge_repeat, judge_timeout)
    pricing = suite.settings.get("pricing") or {}
    # The suite's current scorers run on the old traces too.
    ctx = ScoringContext(pricing=pricing, model=old.get("model"), judge=judge, scorers=suite.scorers,
                         judge_off=not judge_on)
    by_id = {c["id"]: c for c in suite.cases}
    new_entries = asyncio.run(rescore_all(suite, entries, by_id, judge_on, ctx,
                                          min(int(settings.get("concurrency") or DEFAULTS.concurrency),
                                              DEFAULTS.concurrency * 8),
                                          float(first(settings.get("threshold"), DEFAULTS.threshold))))
    if judge_repeat:
        for entry in new_entries:
            entry["judge_agreement"] = agreement_of(judge, entry["id"])
    settings.update(judge=judge_on, judge_model=model if judge_on else None,
                    judge_base_url=redact_url(base_url) if judge_on else None, no_cache=bool(judge_repeat),
                    judge_timeout=judge_timeout,
                    judge_repeat=judge_repeat, rescored_from=old.get("run_id"), cases_not_in_file=missing)
    report = new_report(dict(old), settings, new_entries, judge, pricing, judge_repeat, suite.scorers, str(cases_file))
    if judge_on:  # the terminal says how many runs were judged, also when none was
        report["summary"]["runs_to_judge"] = runs_to_judge(suite.cases, list(new_entries))
    notes = [f"Not in {suite.path} anymore, so not rescored: {', '.join(map(str, missing))}"] if missing else []
    return conclude(report, lambda: ([orjson.dumps(r) for r in e["runs"]] for e in new_entries), cfg,
                    console, err, quiet=cfg[QUIET], label="Rescored report", notes=notes)
