"""OpenAI Evals datasets as cases (`import openai-evals`): an Evals JSONL (`{"input": [chat messages],
"ideal": str | [str]}`) and a stored-completions / data-source export (`{"item": {...}}` rows with
`input` or `messages`, and `ideal` or `expected`)."""
from __future__ import annotations

from typing import Any

from agent_eval.records import Case
from agent_eval.ingest.inspect_samples import expect_of, user_messages
from agent_eval.ingest.records import content_text, conversation

SYSTEM_ROLES = ("system", "developer")


def eval_case(where: str, record: Any) -> Case:
    """One Evals row as a case; ValueError says why it cannot be mapped."""
    if not isinstance(record, dict):
        raise ValueError("a row must be an object")
    item = record["item"] if isinstance(record.get("item"), dict) else record
    users = user_messages(item.get("input", item.get("messages")), any_type=True)
    if not users:
        raise ValueError("no user message in input (or messages)")
    ideal = item.get("ideal", item.get("expected"))
    if ideal in (None, "", []):
        raise ValueError("no ideal (or expected) answer, so nothing to check")
    name = item.get("id", record.get("id"))
    case_id = str(name) if isinstance(name, (str, int)) and not isinstance(name, bool) and str(name).strip() \
        else f"sample-{where.split()[-1]}"
    case: Case = {"id": case_id, **conversation(users)}
    case["expect"] = expect_of(ideal)
    system = _system(item.get("input", item.get("messages")))
    if system is not None:
        case["metadata"] = {"recorded_system_prompt": system}
    return case


def _system(value: Any) -> str | None:
    """The first system (or developer) message's text of a chat input, if any."""
    if isinstance(value, list):  # any_type: OpenAI's content parts are input_text, output_text, ...
        return next((text for m in value if isinstance(m, dict) and m.get("role") in SYSTEM_ROLES
                     and (text := content_text(m.get("content"), any_type=True))), None)
    return None
