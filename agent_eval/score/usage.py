"""The spend of a helper LLM (the judge, the user simulator), kept apart from the agent's, and what a
report says about impossible token counts (provider/tokens.py tells them)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_eval.provider.tokens import MAX_TOKENS, TOKEN_KEYS, sum_tokens

if TYPE_CHECKING:
    from agent_eval.llm import Completion

@dataclass
class LLMUsage:
    """API calls, tokens and errors of one helper LLM over a whole run."""

    calls: int = 0
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    errors: int = 0
    usage_invalid: int = 0

    def add(self, answer: Completion) -> None:
        """Count one API call's tokens (0 where the provider gave no usage; an impossible count is
        counted in usage_invalid; a sum past 2**53 - 1 becomes null)."""
        for key in TOKEN_KEYS:
            count = getattr(answer, key)
            if count is None:
                self.usage_invalid += 1
                continue
            total = getattr(self, key)
            if total is not None:
                setattr(self, key, sum_tokens((total, count)))

    def cost_usd(self, model: str | None, pricing: Mapping[str, Any] | None) -> float | None:
        """0 without tokens; null when the pricing lacks the model (as for the agent's runs), or when a
        token count was invalid or its sum too large."""
        if self.usage_invalid or self.prompt_tokens is None or self.completion_tokens is None:
            return None
        if self.prompt_tokens == 0 and self.completion_tokens == 0:
            return 0.0
        record = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "model": model}
        from agent_eval.score.metrics import price_usage  # the metrics (numpy): when a summary is priced

        return price_usage([record], dict(pricing or {}), model)

    def as_summary(self, model: str | None, pricing: Mapping[str, Any] | None) -> dict[str, Any]:
        """{calls, prompt_tokens, completion_tokens, cost_usd, errors}, plus usage_invalid when any."""
        summary = {"calls": self.calls, "prompt_tokens": self.prompt_tokens,
                   "completion_tokens": self.completion_tokens, "cost_usd": self.cost_usd(model, pricing),
                   "errors": self.errors}
        if self.usage_invalid:
            summary["usage_invalid"] = self.usage_invalid
        return summary


def add_summaries(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Key by key sums of usage summaries (a resumed run's processes); a null cost makes the sum null,
    and so does a token sum past 2**53 - 1."""
    total: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if key not in total:
                total[key] = value
            elif total[key] is None or value is None:
                total[key] = None
            else:
                total[key] = total[key] + value
    for key in TOKEN_KEYS:
        if isinstance(total.get(key), int) and total[key] > MAX_TOKENS:
            total[key] = None
    return total


def invalid_usage_of(report: Mapping[str, Any]) -> dict[str, int]:
    """{"runs", "counts", "judge", "user_sim"}: the runs with usage_invalid > 0 and their invalid counts,
    and the judge's and simulator's, read from a report (as written, or with lite runs)."""
    runs = counts = 0
    for case in report.get("cases") or []:
        for run in (case.get("runs") if isinstance(case, dict) else None) or []:
            metrics = run.get("metrics") if isinstance(run, dict) else None
            value = metrics.get("usage_invalid") if isinstance(metrics, dict) else None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                runs, counts = runs + 1, counts + value
    found = report.get("summary")
    summary: Mapping[str, Any] = found if isinstance(found, dict) else {}
    helpers = {}
    for key in ("judge", "user_sim"):
        part = summary.get(key)
        value = part.get("usage_invalid") if isinstance(part, dict) else None
        helpers[key] = value if isinstance(value, int) and not isinstance(value, bool) else 0
    return {"runs": runs, "counts": counts, **helpers}


def invalid_usage_lines(report: Mapping[str, Any]) -> list[str]:
    """Why a cost is null because of impossible token counts: one line per source, none when all are valid."""
    found = invalid_usage_of(report)
    lines = []
    if found["runs"]:
        lines.append(f"cost n/a: {found['counts']} token count(s) in {found['runs']} run(s) were not integers "
                     "between 0 and 2**53 - 1 (stored as null, counted in metrics.usage_invalid), so those "
                     "runs' cost is null")
    for key, who in (("judge", "the judge"), ("user_sim", "the user simulator")):
        if found[key]:
            lines.append(f"cost n/a: {found[key]} token count(s) from {who} were not integers between 0 and "
                         f"2**53 - 1 (summary.{key}.usage_invalid), so its cost is null")
    return lines


def usage_warning(report: Mapping[str, Any]) -> str | None:
    """The command's one warning line about impossible token counts (runs, judge, simulator), or None."""
    found = invalid_usage_of(report)
    parts = [f"{found['counts']} in {found['runs']} run(s)" if found["runs"] else "",
             f"{found['judge']} from the judge" if found["judge"] else "",
             f"{found['user_sim']} from the user simulator" if found["user_sim"] else ""]
    shown = ", ".join(p for p in parts if p)
    if not shown:
        return None
    return (f"warning: token counts that are not integers between 0 and 2**53 - 1 ({shown}) are stored as null "
            "and counted in usage_invalid; the cost they belong to is null")
