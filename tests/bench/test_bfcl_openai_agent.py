"""The built-in `openai` agent on an imported BFCL suite, against a loopback model that answers as the gold
does: BFCL's schemas are sent and accepted, no system prompt, a miss_func turn adds its function with
BFCL's prompt, the tool results are upstream's strings; and a recorded run replays with no key."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from agent_eval.bench import ImportRequest
from agent_eval.bench.bfcl.importer import import_suite
from tests.builders import clean_env
from tests.cli import run_cli
from tests.loopback import text, tool_calls

IDS = frozenset({"multi_turn_base_0", "multi_turn_base_13", "multi_turn_miss_func_0"})


def _suite(tmp_path: Path) -> tuple[Path, dict[str, dict[str, Any]]]:
    result = import_suite(ImportRequest(tmp_path / "suite", None,
                                        {"category": ("multi_turn_base", "multi_turn_miss_func")}, only=IDS))
    cases = orjson.loads(result.cases_file.read_bytes())["cases"]
    return result.cases_file, {case["id"]: case for case in cases}


def _offered(case: dict[str, Any], turn: int) -> list[str]:
    added = case.get("tools_added") or {}
    return case["tools"] + [name for at in sorted(added, key=int) if int(at) <= turn for name in added[at]]


def gold_model(cases: dict[str, dict[str, Any]]) -> Any:
    """A model that makes the turn's gold calls after each user message, then answers "done"."""

    def answer(body: dict[str, Any], index: int) -> Any:
        users = [m for m in body["messages"] if m["role"] == "user"]
        names = [t["function"]["name"] for t in body.get("tools", [])]
        turn = len(users) - 1
        case = next(c for c in cases.values() if c["messages"][:turn + 1] == [u["content"] for u in users]
                    and sorted(names) == sorted(_offered(c, turn)))
        calls = [(g["name"], g["args"]) for g in case["expected_tools"] if g["turn"] == turn]
        if body["messages"][-1]["role"] == "user" and calls:
            return tool_calls(calls)
        return text("done")

    return answer


def test_the_openai_agent_runs_an_imported_suite_and_a_recording_replays_without_a_key(tmp_path: Path,
                                                                                          loopback) -> None:
    cases_file, cases = _suite(tmp_path)
    srv = loopback(gold_model(cases))
    done = run_cli("run", "--cases", cases_file, "--model", "m", "--base-url", srv.base_url, "--no-judge",
                   "--no-html", "--output-dir", tmp_path / "live", "--record", tmp_path / "tape",
                   env=clean_env(OPENAI_API_KEY="sk-test-0000000000000000"))
    assert done.exit_code == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "bench: bfcl multi_turn_base multi_turn_miss_func @ bfcl-eval 2026.3.23 (3 cases)" in done.stdout
    requests = srv.requests
    assert all(m["role"] != "system" for r in requests for m in r["messages"])
    schemas = {s["function"]["name"]: s for s in orjson.loads((cases_file.parent / "functions.json").read_bytes())}
    first = next(r for r in requests if r["messages"][0]["content"].startswith("Move 'final_report.pdf'")
                 and len(r["messages"]) == 1 and "sort" in [t["function"]["name"] for t in r["tools"]])
    # BFCL's own schemas of the entry's functions, each as BFCL's conversion wrote it (in the suite's order)
    by_name = {t["function"]["name"]: t for t in first["tools"]}
    assert by_name == {name: schemas[name] for name in cases["multi_turn_base_0"]["tools"]}
    # miss_func_0 holds `sort` out until turn 3, whose user message is BFCL's own prompt
    held = [r for r in requests if "sort" not in [t["function"]["name"] for t in r["tools"]]]
    added = [r for r in requests if r["messages"][-1]["content"] == ("I have updated some more functions you can "
                                                                     "choose from. What about now?")]
    assert held and added and all("sort" in [t["function"]["name"] for t in r["tools"]] for r in added)
    # the tool results are upstream's strings: a dict return value as json.dumps writes it
    results = [m["content"] for r in requests for m in r["messages"] if m["role"] == "tool"]
    assert '{"current_working_directory": "document"}' in results  # cd(folder='document')
    live = orjson.loads(next((tmp_path / "live").glob("*.json")).read_bytes())
    assert {c["status"] for c in live["cases"]} == {"passed"} and len(live["cases"]) == 3
    served = srv.count
    replayed = run_cli("run", "--cases", cases_file, "--model", "m", "--replay", tmp_path / "tape", "--no-judge",
                       "--no-html", "--output-dir", tmp_path / "again", env=clean_env())
    assert replayed.exit_code == 0, replayed.stdout[-3000:] + replayed.stderr[-3000:]
    again = orjson.loads(next((tmp_path / "again").glob("*.json")).read_bytes())
    assert {c["id"]: c["status"] for c in again["cases"]} == {c["id"]: c["status"] for c in live["cases"]}
    assert srv.count == served  # nothing reached the model
