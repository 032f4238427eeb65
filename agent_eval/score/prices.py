"""What a model's tokens cost: the suite's `pricing` first, then the genai-prices database.

genai-prices is a maintained price list of the major providers, looked up by the model name alone
(whatever the base URL). Each model is looked up once per process; a flat price becomes two floats,
so pricing a run stays a multiply-add.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from functools import cache
from typing import Any

SUITE = "suite"
GENAI_PRICES = "genai-prices"

TokenPrice = Callable[[int, int], float]  # (prompt_tokens, completion_tokens) -> USD


@cache
def _genai_price(model: str) -> TokenPrice | None:
    """The genai-prices price of model, or None when the database does not know it."""
    try:
        from genai_prices import Usage, calc_price

        model_price = calc_price(Usage(input_tokens=0, output_tokens=0), model_ref=model).model_price
    except Exception:  # noqa: BLE001 - LookupError for an unknown model; any failure of the database means "no price"
        return None
    per_in, per_out = model_price.input_mtok, model_price.output_mtok
    if isinstance(per_in, (Decimal, type(None))) and isinstance(per_out, (Decimal, type(None))):
        rate_in, rate_out = float(per_in or 0), float(per_out or 0)
        return lambda prompt, completion: (prompt * rate_in + completion * rate_out) / 1e6

    def tiered(prompt: int, completion: int) -> float:  # prices that change with the context length
        usage = Usage(input_tokens=prompt, output_tokens=completion)
        return float(model_price.calc_price(usage)["total_price"])

    return tiered


def price_source(model: str | None, pricing: Mapping[str, Any] | None) -> str | None:
    """`suite`, `genai-prices`, or None when neither prices the model."""
    if model is not None and model in (pricing or {}):
        return SUITE
    if model and _genai_price(model) is not None:
        return GENAI_PRICES
    return None


def token_cost(model: str | None, prompt: int, completion: int, pricing: Mapping[str, Any] | None) -> float | None:
    """The USD cost of one usage record; None when the model has no price."""
    price = (pricing or {}).get(model) if model is not None else None
    if price is not None:
        return prompt * price["input_per_mtok"] / 1e6 + completion * price["output_per_mtok"] / 1e6
    found = _genai_price(model) if model else None
    return None if found is None else found(prompt, completion)


def price_sources(models: Iterable[str | None], pricing: Mapping[str, Any] | None) -> dict[str, str | None]:
    """The report's settings.prices: {model: source or None}, for every model that used tokens."""
    return {m: price_source(m, pricing) for m in sorted({m for m in models if m})}


def genai_prices_version() -> str | None:
    """The installed genai-prices' version (the header's `pricing: genai-prices <version>`)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("genai-prices")
    except PackageNotFoundError:
        return None


def price_hint(model: str) -> str:
    """How to price a model that has no price: the suite block to add."""
    return (f"no price for model {model!r}: add it to the suite block's pricing, e.g. \"pricing\": "
            f"{{\"{model}\": {{\"input_per_mtok\": 0.15, \"output_per_mtok\": 0.6}}}} (USD per million tokens)")
