"""An Inspect log's samples as cases (one per sample id) and as recorded runs (each epoch a trial)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from agent_eval.records import Case, Step, Trace
from agent_eval.ingest.inspect_logs import answer, iter_samples, recorded_calls, tool_times, user_turns
from agent_eval.ingest.inspect_samples import expect_of
from agent_eval.ingest.otel import collapse
from agent_eval.ingest.records import Unmappable, conversation
from agent_eval.provider.tokens import token_count

T = TypeVar("T")


def _sample_id(where: str, sample: dict[str, Any]) -> str:
    sample_id = sample.get("id")
    if isinstance(sample_id, bool) or not isinstance(sample_id, (str, int)) or sample_id == "":
        raise ValueError("the sample has no id")
    return str(sample_id)


def _mapped_samples(path: Path, mapping: Callable[[str, dict[str, Any]], T],
                    bad: list[Unmappable]) -> Iterator[tuple[str, dict[str, Any], T]]:
    """(label, sample, mapping(label, sample)) per sample of the log, read one at a time; a sample that
    cannot be read or that `mapping` refuses (ValueError) is appended to `bad`."""
    for item in iter_samples(path):
        if isinstance(item, Unmappable):
            bad.append(item)
            continue
        where, sample = item
        try:
            mapped = mapping(where, sample)
        except ValueError as exc:
            bad.append(Unmappable(where, str(exc)))
            continue
        yield where, sample, mapped


def log_case(where: str, sample: dict[str, Any]) -> Case:
    """One sample as a case: its user turns, and its target as the check (else its recorded calls)."""
    users = user_turns(sample)
    if not users:
        raise ValueError("no user message in input")
    case: Case = {"id": _sample_id(where, sample), **conversation(users)}
    target = sample.get("target")
    if target not in (None, "", []):
        case["expect"] = expect_of(target)
    else:  # no target: what the recorded run did is the check, its consecutive repeats collapsed
        calls = [{"name": c["name"], **({"args": c["args"]} if isinstance(c["args"], dict) else {})}
                 for c in recorded_calls(sample) if not c["invalid"]]
        case["expected_tools"] = collapse(calls)
        case["trajectory"] = "unordered" if calls else "subset"
    metadata = sample.get("metadata")
    if isinstance(metadata, dict) and metadata:
        case["metadata"] = metadata
    return case


def log_cases(path: Path) -> tuple[list[tuple[str, Case]], list[Unmappable]]:
    """(label, case) per sample id of the log (its lowest epoch), and the samples that do not map. Each
    sample is mapped as it is read and dropped: only the cases are held."""
    best: dict[str, tuple[int, str, Case]] = {}  # sample id -> (epoch, label, case)
    bad: list[Unmappable] = []
    for where, sample, case in _mapped_samples(path, log_case, bad):
        found = sample.get("epoch")
        epoch = found if isinstance(found, int) and not isinstance(found, bool) else 0
        if case["id"] not in best or epoch < best[case["id"]][0]:
            best[case["id"]] = (epoch, where, case)
    order = sorted(best.values(), key=lambda found: found[0])  # lowest epochs first, then as read
    return [(where, case) for _, where, case in order], bad


def log_trace(sample: dict[str, Any]) -> Trace:
    """The report trace of a sample's recorded run: steps from the tool calls, tokens from model_usage."""
    steps: list[Step] = []
    times = tool_times(sample)
    for i, call in enumerate(recorded_calls(sample)):
        args = call["args"] if isinstance(call["args"], dict) else {}
        start, took = times.get(str(call["id"]), (None, None))
        steps.append({"step": i, "name": call["name"], "args": args, "output": call["output"],
                      "error": call["error"], "error_traceback": None,
                      "invalid_args": "malformed JSON" if call["invalid"] else None, "latency_s": took,
                      "t_start_s": start, "executed": True})
    found = sample.get("model_usage")
    usage: dict[str, Any] = found if isinstance(found, dict) else {}
    llm_calls = [{"latency_s": None, "prompt_tokens": token_count(u.get("input_tokens")),
                  "completion_tokens": token_count(u.get("output_tokens")), "model": model}
                 for model, u in usage.items() if isinstance(u, dict)]
    users = user_turns(sample)
    final = answer(sample)
    latency = sample.get("working_time", sample.get("total_time"))
    latency = float(latency) if isinstance(latency, (int, float)) and not isinstance(latency, bool) else None
    error = sample.get("error")
    replies: list[str | None] = [*([None] * (len(users) - 1)), final] if users else []
    return {"user_messages": users, "replies": replies,
            "final_answer": final, "cards": [], "final_agent": None,
            "stop_reason": "agent_error" if error else "completed",
            "agent_error": (error.get("message") if isinstance(error, dict) else str(error)) if error else None,
            "agent_error_traceback": None, "steps": steps, "llm_calls": llm_calls, "latency_s": latency,
            "ttfa_s": _ttfa(steps, latency), "final_env_diff": [], "has_env": False}


def _ttfa(steps: list[Step], latency: float | None) -> float | None:
    """To the first tool call's `tool` event (working time); the whole run when there is no call."""
    if not steps:
        return latency
    return steps[0]["t_start_s"]


def log_recordings(path: Path) -> tuple[list[tuple[str, str, int, Trace]], list[Unmappable]]:
    """(label, sample id, trial, trace) per sample and epoch; epoch 1 is trial 0. Each sample becomes its
    trace as it is read and is dropped."""
    out = []
    bad: list[Unmappable] = []
    for _, sample, sample_id in _mapped_samples(path, _sample_id, bad):
        epoch = sample.get("epoch")
        trial = epoch - 1 if isinstance(epoch, int) and not isinstance(epoch, bool) and epoch >= 1 else 0
        out.append((f"sample {sample_id} epoch {trial + 1}", sample_id, trial, log_trace(sample)))
    return out, bad
