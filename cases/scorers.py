"""Custom scorers of the support-demo suite: one function, one class with its own summary."""
from __future__ import annotations

from agent_eval import Scorer


def reply_words(output: str | None) -> int:
    """Words in the agent's last reply; summarised in summary.scorers.reply_words.reply_words."""
    return len((output or "").split())


class Refunds(Scorer):
    """How many refunds a run made and how much money they moved, read from the final env."""

    name = "refunds"

    def score(self, env: dict) -> dict:
        amounts = [refund["amount"] for refund in env.get("refunds", [])]
        return {"count": len(amounts), "amount": round(sum(amounts), 2)}

    def summarize(self, rows: list[dict | None]) -> dict:
        # A suite-wide total is what finance asks about; the automatic summary would give means.
        scored = [row for row in rows if row is not None]
        return {
            "runs_with_refund": sum(1 for row in scored if row["count"]),
            "total_amount": round(sum(row["amount"] for row in scored), 2),
        }
