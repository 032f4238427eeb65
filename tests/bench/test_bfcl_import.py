"""`agent-eval bench import bfcl`: the suite folder it writes from the installed bfcl-eval, checked against
upstream's own files read directly here."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_eval.bench import ImportRequest
from agent_eval.bench.bfcl import upstream as up
from agent_eval.bench.bfcl.importer import import_suite
from agent_eval.errors import ConfigError
from agent_eval.suite.tool_loading import load_tools
from tests.cli import run_cli

DATA = up.locate(None).package_dir / "data"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bfcl") / "suite"
    result = run_cli("bench", "import", "bfcl", "--out", folder)
    assert result.exit_code == 0, result.stderr
    assert "200 cases" in result.stdout
    return folder


def test_the_base_category_is_a_suite_folder_with_upstream_ids_counts_and_hashes(base: Path) -> None:
    assert sorted(p.name for p in base.iterdir()) == ["NOTICE", "bench.lock.json", "cases.json", "functions.json",
                                                      "tools.py"]
    entries = _lines(DATA / "BFCL_v4_multi_turn_base.json")
    gold = _lines(DATA / "possible_answer" / "BFCL_v4_multi_turn_base.json")
    document = orjson.loads((base / "cases.json").read_bytes())
    suite, cases = document["suite"], document["cases"]
    assert suite["name"] == "bfcl-multi_turn_base" and "system_prompt" not in suite and suite["max_steps"] == 21
    assert [c["id"] for c in cases] == [e["id"] for e in entries]  # multi_turn_base_0 ... verbatim, in order
    lock = orjson.loads((base / "bench.lock.json").read_bytes())
    counts = {"cases": 200, "turns": sum(len(e["question"]) for e in entries),
              "gold_calls": sum(len(turn) for g in gold for turn in g["ground_truth"])}
    assert lock["counts"] == counts and suite["bench"]["counts"] == counts
    assert lock["source"] == {"package": "bfcl-eval", "version": "2026.3.23"} and lock["left_out"] == []
    data_file = "data/BFCL_v4_multi_turn_base.json"
    assert lock["files"][data_file] == hashlib.sha256((DATA / "BFCL_v4_multi_turn_base.json").read_bytes()).hexdigest()
    assert "data/possible_answer/BFCL_v4_multi_turn_base.json" in lock["files"]
    assert "eval_checker/multi_turn_eval/func_source_code/gorilla_file_system.py" in lock["files"]
    notice = (base / "NOTICE").read_text()
    assert "Apache License" in notice and "Version 2.0" in notice and "github.com/ShishirPatil/gorilla" in notice


def test_a_case_holds_the_entry_turns_tools_environment_gold_and_upstream_metadata(base: Path) -> None:
    cases = orjson.loads((base / "cases.json").read_bytes())["cases"]
    case, entry = cases[0], _lines(DATA / "BFCL_v4_multi_turn_base.json")[0]
    assert case["messages"] == [turn[0]["content"] for turn in entry["question"]]
    assert case["tags"] == ["bfcl", "multi_turn_base"]
    assert case["metadata"]["upstream"] == {"benchmark": "bfcl", "version": "2026.3.23", "id": "multi_turn_base_0",
                                            "category": "multi_turn_base", "split": "all"}
    assert case["initial_env"] == {"involved_classes": entry["involved_classes"],
                                   "initial_config": entry["initial_config"], "long_context": False}
    docs = {name: [json.loads(line)["name"] for line in (DATA / "multi_turn_func_doc" / f"{file}.json").open()]
            for name, file in (("TwitterAPI", "posting_api"), ("GorillaFileSystem", "gorilla_file_system"))}
    assert case["tools"] == [n for cls in entry["involved_classes"] for n in docs[cls]]
    # gold: "cd(folder='document')" ... "sort('final_report.pdf')" (a positional argument, named)
    assert case["expected_tools"][:3] == [{"name": "cd", "args": {"folder": "document"}, "turn": 0},
                                          {"name": "mkdir", "args": {"dir_name": "temp"}, "turn": 0},
                                          {"name": "mv", "args": {"source": "final_report.pdf",
                                                                  "destination": "temp"}, "turn": 0}]
    assert {"name": "sort", "args": {"file_name": "final_report.pdf"}, "turn": 2} in case["expected_tools"]
    assert case["expected_env"] == "replay_per_turn" and case["expected_observations"] == "replay"


def test_the_schemas_are_bfcls_own_conversion(base: Path) -> None:
    schemas = {s["function"]["name"]: s for s in orjson.loads((base / "functions.json").read_bytes())}
    assert len(schemas) == 128  # the 8 classes' functions, no name shared
    sort = schemas["sort"]["function"]
    # BFCL's func doc says "type": "dict" and adds a Python hint; its OpenAI conversion maps dict -> object
    assert sort["parameters"]["type"] == "object"
    assert sort["description"].endswith("Note that the provided function is in Python 3 syntax.")
    assert sort["parameters"]["properties"]["file_name"]["type"] == "string"


def test_miss_func_adds_the_held_out_function_at_its_turn_with_bfcls_own_prompt(tmp_path: Path) -> None:
    result = import_suite(ImportRequest(tmp_path / "s", None, {"category": ("multi_turn_miss_func",)},
                                        only=frozenset({"multi_turn_miss_func_0"})))
    case = orjson.loads(result.cases_file.read_bytes())["cases"][0]
    entry = _lines(DATA / "BFCL_v4_multi_turn_miss_func.json")[0]
    assert entry["missed_function"] == {"3": ["sort"]} and entry["question"][3] == []
    assert case["tools_added"] == {"3": ["sort"]} and "sort" not in case["tools"]
    assert case["messages"][3] == "I have updated some more functions you can choose from. What about now?"
    assert case["tags"] == ["bfcl", "multi_turn_miss_func"]
    assert result.counts == {"cases": 1, "turns": 5, "gold_calls": len(case["expected_tools"])}


def test_a_suite_whose_lock_no_longer_matches_the_installed_package_is_refused(base: Path, tmp_path: Path) -> None:
    for name in ("tools.py", "functions.json", "cases.json", "NOTICE"):
        (tmp_path / name).write_bytes((base / name).read_bytes())
    lock = orjson.loads((base / "bench.lock.json").read_bytes())
    assert len(load_tools("tools.py", base).names) == 128  # the lock matches: the tools load
    lock["source"]["version"] = "2025.1.1"
    (tmp_path / "bench.lock.json").write_bytes(orjson.dumps(lock))
    with pytest.raises(ConfigError) as older:
        load_tools("tools.py", tmp_path)
    assert "imported from bfcl-eval 2025.1.1, but 2026.3.23 is installed" in str(older.value)
    refused = run_cli("run", "--cases", tmp_path / "cases.json", "--agent", "gold", "--user", "gold", "--no-judge",
                      "--output-dir", tmp_path / "reports")
    assert refused.exit_code == 2 and "Traceback" not in refused.stderr
    assert "no longer matches what is installed" in refused.stderr and "2025.1.1" in refused.stderr
    lock["source"]["version"] = "2026.3.23"
    lock["files"]["data/BFCL_v4_multi_turn_base.json"] = "0" * 64
    (tmp_path / "bench.lock.json").write_bytes(orjson.dumps(lock))
    with pytest.raises(ConfigError) as changed:
        load_tools("tools.py", tmp_path)
    assert "BFCL_v4_multi_turn_base.json changed since the import" in str(changed.value)


def test_the_gold_agent_passes_every_case_of_the_fresh_base_import(base: Path, tmp_path: Path) -> None:
    from tests.bench.test_bfcl_oracle import gold_run

    report = gold_run(base / "cases.json", tmp_path / "reports")
    assert len(report["cases"]) == 200
    assert {entry["status"] for entry in report["cases"]} == {"passed"}
    assert report["settings"]["bench"] == {"benchmark": "bfcl", "parts": ["multi_turn_base"], "package": "bfcl-eval",
                                           "version": "2026.3.23",
                                           "counts": {"cases": 200, "turns": 734, "gold_calls": 1142}}
