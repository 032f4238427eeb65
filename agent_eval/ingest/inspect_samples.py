"""Inspect AI samples (a JSON list or JSON Lines) as cases; see docs/import-and-score.md for the mapping."""
from __future__ import annotations

import re
from typing import Any

from agent_eval.records import Case
from agent_eval.ingest.records import content_text, conversation


def user_messages(value: Any, *, any_type: bool = False) -> list[str]:
    """The text of each user message of an input (a string, or a list of chat messages); `any_type` takes
    content parts of every type (OpenAI's input_text, output_text, ...), not only `text` ones."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if not isinstance(value, list):
        raise ValueError("input must be a string or a list of chat messages")
    out = []
    for i, message in enumerate(value):
        if not isinstance(message, dict):
            raise ValueError(f"input[{i}] is not a chat message object")
        if message.get("role") == "user":
            text = content_text(message.get("content"), any_type=any_type)
            if text:
                out.append(text)
    return out


def expect_of(target: Any) -> dict[str, Any]:
    """A string target as `icontains`; a list (any one of them) as a case-insensitive `regex`."""
    if isinstance(target, str) and target.strip():
        return {"icontains": target}
    if isinstance(target, list):
        targets = [t for t in target if isinstance(t, str) and t]
        if len(targets) != len(target):
            raise ValueError("target must be a string or a list of strings")
        if targets:
            return {"regex": "(?i)(" + "|".join(re.escape(t) for t in targets) + ")"}
    raise ValueError("no target, so nothing to check")


def sample_case(where: str, sample: Any) -> Case:
    """One Inspect sample as a case; ValueError says why it cannot be mapped."""
    if not isinstance(sample, dict):
        raise ValueError("a sample must be an object")
    sample_id = sample.get("id")
    if isinstance(sample_id, bool) or not isinstance(sample_id, (str, int)) or sample_id == "":
        sample_id = f"sample-{where.split()[-1]}"
    users = user_messages(sample.get("input"))
    if not users:
        raise ValueError("no user message in input")
    case: Case = {"id": str(sample_id), **conversation(users)}
    case["expect"] = expect_of(sample.get("target"))
    metadata = sample.get("metadata")
    if isinstance(metadata, dict) and metadata:
        case["metadata"] = metadata
    return case
