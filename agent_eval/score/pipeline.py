"""Score one frozen trace into a run record. Shared by `run` and `rescore`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_eval.records import Case, Check, RunRecord, RunStatus, Trace
from agent_eval.redaction import redact_secrets
from agent_eval.score.checks import check_run
from agent_eval.score.env_checks import with_env_checks
from agent_eval.score.judge import judged_fields
from agent_eval.score.metrics import price_usage, run_metrics
from agent_eval.score.safety import is_escalated

if TYPE_CHECKING:
    from agent_eval.score.custom import ScorerSet
    from agent_eval.score.judge import Judge


@dataclass
class ScoringContext:
    """What scoring needs beyond the trace: prices, the run's model, and the optional judge."""

    pricing: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    judge: Judge | None = None  # when judging is on
    judge_off: bool = False  # --no-judge: a run of a case with a rubric or expected outcome is judge_skipped
    scorers: ScorerSet | None = None  # the suite's custom scorers


async def score_run(case: Case, trial: int, trace: Trace, final_env: dict[str, Any], expected_env: Any,
                    error: str | None, ctx: ScoringContext, kept_env_checks: list[Check] | None = None,
                    ) -> RunRecord:
    """The run record: checks, judge verdict, metrics and status for one run.

    `kept_env_checks` (rescore of a run whose env came from an MCP state resource) stand in for the
    env checks, which cannot be redone without the server's initial state.
    """
    checks = check_run(case, trace, final_env, expected_env)
    if kept_env_checks is not None:
        checks = with_env_checks(checks, kept_env_checks)
    scores: dict[str, Any] = {}
    scorer_errors: dict[str, str] = {}
    if ctx.scorers:
        # Scorer checks are deterministic checks, so a False one spares the judge call below.
        scores, scorer_errors, scorer_checks = await ctx.scorers.score(case, trace, final_env)
        checks = checks + scorer_checks
    judged: dict[str, Any] = {"judge": None, "judge_expected_outcome": None}
    completed = trace["stop_reason"] == "completed"
    if error is None and completed and ctx.judge is not None and all(c["passed"] for c in checks):
        outcome = await ctx.judge.judge_run(case, trace)
        checks = checks + outcome.checks
        judged.update(outcome.records)
        error = outcome.error
    if scorer_errors:  # a scorer's exception may quote a key
        scorer_errors = {name: redact_secrets(text) for name, text in scorer_errors.items()}
    success = error is None and completed and all(c["passed"] for c in checks)
    cost = price_usage(trace["llm_calls"], ctx.pricing, ctx.model)
    status: RunStatus = "error" if error is not None else ("passed" if success else "failed")
    skipped = error is None and ctx.judge_off and bool(judged_fields(case))
    metric_errors: dict[str, str] = {}  # a plugin metric's code raised: its value is null, the message here
    metrics = run_metrics(case, trace, checks, success, cost, metric_errors)
    return {
        **({"judge_skipped": True} if skipped else {}),  # --no-judge left this case's rubric unasked
        "trial": trial,
        "status": status,
        "error": error,
        "success": success,
        "checks": checks,
        "judge": judged["judge"],
        "judge_expected_outcome": judged["judge_expected_outcome"],
        "metrics": metrics,
        "scorers": scores,
        "scorer_errors": scorer_errors,
        "escalated": is_escalated(case, trace),
        **({"metric_errors": {k: redact_secrets(v) for k, v in metric_errors.items()}} if metric_errors else {}),
        "trace": trace,
    }
