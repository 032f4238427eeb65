"""`agent-eval score TRACES`: recorded runs scored like `run` scores its own; no agent is called."""
from __future__ import annotations

import asyncio
from pathlib import Path

from rich.console import Console

from agent_eval.flags.rows import AGENT, CONCURRENCY, MODEL, NO_JUDGE, OTLP_ENDPOINT, THRESHOLD
from agent_eval.commands.conclude import finish_report, offer_runs, say
from agent_eval.commands.core import open_journal, pick_baseline
from agent_eval.commands.prepare import check_baseline, check_judge, prepare
from agent_eval.errors import ConfigError
from agent_eval.flags import Flags
from agent_eval.ingest.recordings import match
from agent_eval.ingest.score_traces import ScoredRuns, load_recordings, plan_cases, print_left_out, score_all
from agent_eval.report.model import new_run_id, now_iso


def score_command(flags: Flags, console: Console, err: Console) -> int:
    """Score the recorded runs in flags.traces against the case file; the exit code of `run`."""
    from agent_eval.run.worker import scoring_of

    path = Path(str(flags.path("traces")))
    prepared = prepare(flags)
    suite, cfg, selected = prepared.suite, prepared.cfg, prepared.cases
    fmt, recordings, bad, head = load_recordings(path, flags.text("format"), suite, flags.path("logs"))
    matched, unmatched = match(recordings, suite.cases)
    print_left_out(path, bad, unmatched, suite, err)
    work = [(c, matched[c["id"]]) for c in selected if c["id"] in matched]
    without = len(selected) - len(work)
    if not work:
        raise ConfigError(f"none of the {len(recordings)} recorded run(s) in {path} matches a selected case of "
                          f"{suite.path} (by metadata.trace_id or case id); import the traces first "
                          f"(agent-eval import otel {path} --out FILE) or pass --cases with the right file.")
    # What the recordings say wins over the flags: the agent and model that made them, and their count.
    cfg = cfg.replace({"agent": "traces", "repeat": "traces", **({"model": "traces"} if head.get("model") else {})},
                      agent=str(head.get("agent") or fmt), model=head.get("model") or cfg[MODEL],
                      repeat=max(len(recs) for _, recs in work), source={"traces": str(path), "format": fmt})
    check_baseline(cfg)
    plans = plan_cases(work, not cfg[NO_JUDGE])
    runnable = [c for c, _, skip in plans if skip is None]
    check_judge(cfg, runnable, suite)
    run_id, created_at = new_run_id(), now_iso()
    cfg, warning = pick_baseline(cfg, cfg[AGENT], [str(c["id"]) for c, _ in work], created_at)
    if warning:  # as run: exit 2 before anything is written when no earlier run is comparable
        say(err, warning)
    journal = open_journal(cfg, run_id, {"run_id": run_id, "created_at": created_at, "settings": cfg.settings(),
                                         "cases_file": str(cfg.cases_file)}, run_id)
    sender = offer_runs(journal, cfg[OTLP_ENDPOINT], {"run_id": run_id, "created_at": created_at,
                                                      "suite": suite.name, "model": cfg[MODEL]})
    ctx = scoring_of(suite, runnable, cfg)
    scored_runs = ScoredRuns(journal, ctx, cfg[THRESHOLD])
    try:
        asyncio.run(score_all(suite, plans, ctx, cfg[CONCURRENCY], scored_runs))
    finally:
        journal.close()
    code, _ = finish_report(scored_runs, suite, cfg, cfg[AGENT], run_id, created_at, False, console, err, sender=sender)
    if scored_runs.skipped_names:
        shown = ", ".join(f"{name} ({n} run{'s' if n != 1 else ''})" for name, n in scored_runs.skipped_names.items())
        say(console, f"Skipped for want of a recorded environment: {shown}")
    if without:
        console.print(f"{without} case{'s' if without != 1 else ''} had no trace", highlight=False)
    return code
