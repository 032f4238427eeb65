"""The run header's price line: where the prices of the models a run used came from."""
from __future__ import annotations

from agent_eval.records import Report


def pricing_line(report: Report) -> str | None:
    """Where the prices came from: `pricing: suite`, `pricing: genai-prices 0.0.40`, `pricing: none for MODEL`,
    or per model when they differ; None when no model used tokens."""
    settings = report.get("settings") or {}
    prices = settings.get("prices")
    if not isinstance(prices, dict) or not prices:
        return None
    version = settings.get("genai_prices_version")
    names = {"suite": "suite", "genai-prices": f"genai-prices {version}" if version else "genai-prices"}
    by_source: dict[str, list[str]] = {}
    for model, source in prices.items():
        by_source.setdefault(names.get(source, str(source)) if source else "", []).append(str(model))
    unpriced = by_source.pop("", [])
    if len(by_source) == 1 and not unpriced:
        parts = list(by_source)
    else:
        parts = [f"{name} ({', '.join(models)})" for name, models in by_source.items()]
    if unpriced:
        parts.append(f"none for {', '.join(unpriced)}")
    return "pricing: " + "; ".join(parts)
