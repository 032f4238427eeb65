"""The spend of a helper LLM (the judge, the user simulator), kept apart from the agent's."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_eval.llm import Completion
from agent_eval.score.metrics import price_usage


@dataclass
class LLMUsage:
    """API calls, tokens and errors of one helper LLM over a whole run."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: int = 0

    def add(self, answer: Completion) -> None:
        """Count one API call's tokens (0 where the provider gave no usage)."""
        self.prompt_tokens += answer.prompt_tokens
        self.completion_tokens += answer.completion_tokens

    def cost_usd(self, model: str | None, pricing: Mapping[str, Any] | None) -> float | None:
        """0 without tokens; null when the pricing lacks the model, as for the agent's runs."""
        if self.prompt_tokens == 0 and self.completion_tokens == 0:
            return 0.0
        record = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "model": model}
        return price_usage([record], dict(pricing or {}), model)

    def as_summary(self, model: str | None, pricing: Mapping[str, Any] | None) -> dict[str, Any]:
        """{calls, prompt_tokens, completion_tokens, cost_usd, errors}."""
        return {"calls": self.calls, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost_usd": self.cost_usd(model, pricing),
                "errors": self.errors}


def add_summaries(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Key by key sums of usage summaries (a resumed run's processes); a null cost makes the sum null."""
    total: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if key not in total:
                total[key] = value
            elif total[key] is None or value is None:
                total[key] = None
            else:
                total[key] = total[key] + value
    return total
