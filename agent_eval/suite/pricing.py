"""The suite block's `pricing`: one model's price, USD per million tokens, both required, each a finite
number of at least 0 (a negative price made a negative cost, a missing one a traceback)."""
from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictFloat

Price = Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)]  # an int is a float here; true is not


class ModelPrice(BaseModel):
    """One model's entry in `pricing`; another key is an error (a misspelled price must not read as 0)."""

    model_config = ConfigDict(extra="forbid")
    input_per_mtok: Price
    output_per_mtok: Price
