"""deepeval goldens and Inspect samples as cases (docs/import-and-score.md), records left out and why."""
from __future__ import annotations

import orjson

from agent_eval.ingest.deepeval import RUBRIC
from agent_eval.ingest.importer import map_records


def write(tmp_path, name, records, jsonl=False):
    path = tmp_path / name
    if jsonl:
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    else:
        path.write_bytes(orjson.dumps(records, option=orjson.OPT_INDENT_2))
    return path


# Goldens as deepeval writes them: snake_case keys, ToolCall objects with name/input_parameters/output.
GOLDENS = [
    {"name": "refund-42", "input": "Refund order 42", "actual_output": None,
     "expected_output": "Order 42 was refunded.", "context": ["refunds take 3 days"], "retrieval_context": None,
     "additional_metadata": {"source": "ticket 9"}, "comments": "from prod", "source_file": None,
     "tools_called": [{"name": "lookup_order", "input_parameters": {"order_id": 41}, "output": "paid"}],
     "expected_tools": [{"name": "lookup_order", "description": None, "reasoning": None,
                         "input_parameters": {"order_id": 42}, "output": {"status": "paid"}},
                        {"name": "refund", "inputParameters": {"order_id": 42}}]},
    {"input": "Where is order 7?", "expected_output": None, "expected_tools": None,
     "tools_called": [{"name": "track", "input_parameters": {"order_id": 7}, "output": "in transit"}]},
    {"input": "What is your return window?", "expected_output": "30 days.", "expected_tools": None,
     "tools_called": None, "retrieval_context": ["returns: 30 days"]},
    {"input": "Hello", "expected_output": None},
    {"scenario": "A customer wants a refund for a late order", "expected_outcome": "The refund is issued",
     "user_description": "impatient, knows the order id 42"},
    "not a golden",
]


def test_deepeval_goldens_map_to_cases(tmp_path):
    cases, bad, _ = map_records("deepeval", write(tmp_path, "goldens.json", GOLDENS))
    by_id = {c["id"]: c for _, c in cases}
    assert by_id["refund-42"] == {
        "id": "refund-42", "query": "Refund order 42",
        # expected_tools wins over tools_called; input_parameters and inputParameters both give args
        "expected_tools": [{"name": "lookup_order", "args": {"order_id": 42}},
                           {"name": "refund", "args": {"order_id": 42}}],
        "trajectory": "unordered", "expected_output": "Order 42 was refunded.",
        "metadata": {"context": ["refunds take 3 days"], "comments": "from prod",
                     "additional_metadata": {"source": "ticket 9"}},
    }
    # no expected_tools: the recorded tools_called are the reference; index 1 in the list
    assert by_id["golden-1"]["expected_tools"] == [{"name": "track", "args": {"order_id": 7}}]
    assert by_id["golden-2"] == {"id": "golden-2", "query": "What is your return window?",
                                 "rubric": RUBRIC + "30 days.", "expected_output": "30 days.",
                                 "metadata": {"retrieval_context": ["returns: 30 days"]}}
    assert by_id["golden-4"] == {"id": "golden-4", "scenario": "A customer wants a refund for a late order",
                                 "expected_outcome": "The refund is issued",
                                 "user_description": "impatient, knows the order id 42"}
    assert {b.where: b.reason for b in bad} == {
        "index 3": "nothing to check: no expected_tools, tools_called or expected_output",
        "index 5": "a golden must be an object"}


def test_deepeval_jsonl_numbers_lines_and_splits_joined_context(tmp_path):
    goldens = [{"input": "Hi", "expected_output": "Hello", "context": "a|b"}, {"input": ""}]
    cases, bad, _ = map_records("deepeval", write(tmp_path, "goldens.jsonl", goldens, jsonl=True))
    assert [c["id"] for _, c in cases] == ["golden-1"]
    assert cases[0][1]["metadata"] == {"context": ["a", "b"]}
    assert [(b.where, b.reason) for b in bad] == [("line 2", "no input (the user message)")]


SAMPLES = [
    {"id": "capital", "input": "What is the capital of France?", "target": "Paris", "metadata": {"level": 1}},
    {"input": [{"role": "system", "content": "Answer briefly."},
               {"role": "user", "content": [{"type": "text", "text": "Name a primary colour"}]},
               {"role": "assistant", "content": "Which kind?"},
               {"role": "user", "content": "Paint."}],
     "target": ["red", "blue", "yellow (RYB)"]},
    {"id": 7, "input": "No target here"},
]


def test_inspect_samples_map_to_cases(tmp_path):
    cases, bad, _ = map_records("inspect", write(tmp_path, "samples.json", SAMPLES))
    assert [c for _, c in cases] == [
        {"id": "capital", "query": "What is the capital of France?", "expect": {"icontains": "Paris"},
         "metadata": {"level": 1}},
        {"id": "sample-1", "messages": ["Name a primary colour", "Paint."],
         # any one of the targets, case-insensitive, each escaped
         "expect": {"regex": r"(?i)(red|blue|yellow\ \(RYB\))"}},
    ]
    assert [(b.where, b.reason) for b in bad] == [("index 2", "no target, so nothing to check")]


def test_inspect_regex_target_matches_any_one(tmp_path):
    import re

    cases, _, _ = map_records("inspect", write(tmp_path, "s.jsonl", SAMPLES[1:2], jsonl=True))
    pattern = cases[0][1]["expect"]["regex"]
    assert re.search(pattern, "I'd say BLUE.") and re.search(pattern, "yellow (ryb)")
    assert not re.search(pattern, "green")
    assert cases[0][1]["id"] == "sample-1"  # line 1 of the JSONL
