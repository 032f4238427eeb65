"""deepeval CSV, test-run files and conversational turns, and OpenAI Evals rows, as cases.

deepeval is not installed here: the files follow its writers exactly (deepeval/dataset/dataset.py
`save_as` for CSV and JSON, deepeval/test_run/api.py LLMApiTestCase for test runs, and
deepeval/dataset/utils.py `format_turns` for turns; a ToolCall dumps `by_alias`, as inputParameters).
"""
from __future__ import annotations

import csv
import json

import orjson

from agent_eval.ingest.deepeval import golden_case
from agent_eval.ingest.deepeval_files import read_goldens
from agent_eval.ingest.importer import map_records

LOOKUP_42 = {"name": "lookup_order", "type": "function", "inputParameters": {"order_id": 42}}
REFUND = {"name": "refund", "type": "function", "inputParameters": {"order_id": 42, "amount": 9.5}}
COLLAPSED = [{"name": "lookup_order", "args": {"order_id": 42}},
             {"name": "refund", "args": {"order_id": 42, "amount": 9.5}}]
HEADER = ["input", "actual_output", "expected_output", "retrieval_context", "context", "name", "comments",
          "source_file", "tools_called", "expected_tools", "additional_metadata", "custom_column_key_values"]


def test_deepeval_csv_with_joined_lists_and_json_tool_columns(tmp_path):
    path = tmp_path / "goldens.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        # the recorded trajectory looked order 42 up twice in a row: the case asks for it once
        writer.writerow(["Refund order 42", "Refunded.", None, "policy a|policy b", "ctx", "refund", None, None,
                         json.dumps([LOOKUP_42, LOOKUP_42, REFUND]), None, json.dumps({"shop": "demo"}), None])
        writer.writerow(["Hello", None, "Hi there", None, None, None, None, None, None, None, None, None])
        writer.writerow(["broken", None, None, None, None, "bad", None, None, "[{not json", None, None, None])
    cases, bad, _ = map_records("deepeval", path)
    assert [c for _, c in cases] == [
        {"id": "refund", "query": "Refund order 42", "expected_tools": COLLAPSED, "trajectory": "unordered",
         "metadata": {"context": ["ctx"], "retrieval_context": ["policy a", "policy b"],
                      "additional_metadata": {"shop": "demo"}}},
        {"id": "golden-3", "query": "Hello", "rubric": "The answer conveys the same facts as this reference: Hi there",
         "expected_output": "Hi there"},
    ]
    assert [b.where for b in bad] == ["row 4"] and bad[0].reason.startswith("column tools_called is not JSON")


def test_deepeval_test_run_file_camel_case_and_under_test_run_data(tmp_path):
    case = {"name": "test_case_0", "input": "Refund order 42", "actualOutput": "Refunded.",
            "expectedTools": [LOOKUP_42, REFUND], "toolsCalled": [LOOKUP_42], "success": True,
            "metricsData": [], "runDuration": 1.2, "order": 0, "metadata": {"shop": "demo"}}
    for doc in ({"testFile": "test_x.py", "testCases": [case], "metricsScores": []},
                {"testRunData": {"testCases": [case], "conversationalTestCases": []}, "testRunLink": None}):
        path = tmp_path / ".latest_test_run.json"
        path.write_bytes(orjson.dumps(doc))
        (where, golden), = read_goldens(path)[0]
        assert where == "testCases[0]"
        assert golden_case(where, golden) == {"id": "test_case_0", "query": "Refund order 42",
                                              "expected_tools": COLLAPSED, "trajectory": "unordered",
                                              "metadata": {"additional_metadata": {"shop": "demo"}}}


def test_conversational_golden_turns_keep_every_user_turn_and_the_tools_called(tmp_path):
    turns = [{"role": "user", "content": "Refund order 42", "user_id": None, "retrieval_context": None,
              "tools_called": None, "mcp_tools_called": None, "mcp_resources_called": None,
              "mcp_prompts_called": None, "additional_metadata": None},
             {"role": "assistant", "content": "Refunded.", "tools_called": [LOOKUP_42, LOOKUP_42, REFUND]},
             {"role": "user", "content": "Thanks, that is all"},
             {"role": "assistant", "content": "Bye.", "tools_called": None}]
    golden = {"scenario": "A customer wants a refund", "turns": turns, "expected_outcome": "The order is refunded",
              "user_description": None, "persona": None, "context": None, "name": "convo", "comments": None,
              "additional_metadata": None, "custom_column_key_values": None}
    path = tmp_path / "convo.json"
    path.write_bytes(orjson.dumps([golden]))
    ((_, case),), bad, _ = map_records("deepeval", path)
    assert not bad
    assert case == {"id": "convo", "messages": ["Refund order 42", "Thanks, that is all"],
                    "expected_tools": COLLAPSED, "trajectory": "unordered",
                    "expected_outcome": "The order is refunded", "metadata": {"scenario": "A customer wants a refund"}}
    # the CSV writer puts the same turns in a JSON column
    csv_path = tmp_path / "convo.csv"
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["scenario", "turns", "expected_outcome", "user_description", "context", "name", "comments",
                         "additional_metadata", "custom_column_key_values"])
        writer.writerow([golden["scenario"], json.dumps(turns), golden["expected_outcome"], None, None, "convo", None,
                         None, None])
    ((_, again),), _, _ = map_records("deepeval", csv_path)
    assert again == case


def test_openai_evals_rows_and_item_exports(tmp_path):
    path = tmp_path / "evals.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in [
        {"input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}],
         "ideal": "Paris"},
        {"item": {"messages": [{"role": "user", "content": "2+2?"}], "expected": ["4", "four"]}},
        {"input": [{"role": "user", "content": "no answer"}]},
    ]))
    cases, bad, _ = map_records("openai-evals", path)
    assert [c for _, c in cases] == [
        {"id": "sample-1", "query": "Capital of France?", "expect": {"icontains": "Paris"},
         "metadata": {"recorded_system_prompt": "Be brief."}},  # import lifts it into the suite block
        {"id": "sample-2", "query": "2+2?", "expect": {"regex": "(?i)(4|four)"}},
    ]
    assert [str(b) for b in bad] == ["line 3: no ideal (or expected) answer, so nothing to check"]
