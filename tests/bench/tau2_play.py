"""Play tau2 trajectories through `agent-eval run`: one case per trajectory (the imported case, its id suffixed,
the trajectory in `metadata.replay`, the scripted user's lines as its scenario), tau2_replay.py's agent and
user, and each case's verdict compared with the one tau2's own evaluator gave (tau2_parity.json)."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson

from agent_eval.bench.tau2.grading import user_text

HERE = Path(__file__).resolve().parent
PARITY_SET = HERE / "tau2_parity.json"


def parity_entries() -> list[dict[str, Any]]:
    return list(orjson.loads(PARITY_SET.read_bytes())["entries"])


def case_id(number: int, entry: dict[str, Any]) -> str:
    return f"{entry['task']}~{number}-{entry['kind']}"


def parity_cases(entries: list[dict[str, Any]], cases_file: Path, out: Path) -> Path:
    """A case file beside `cases_file` (an imported suite) holding one case per entry of its domain."""
    document = orjson.loads(cases_file.read_bytes())
    by_id = {case["id"]: case for case in document["cases"]}
    cases = []
    for number, entry in enumerate(entries):
        case = copy.deepcopy(by_id[entry["task"]])
        case["id"] = case_id(number, entry)
        case["scenario"] = orjson.dumps([user_text(i) for i in range(len(entry["turns"]))]).decode()
        case["metadata"]["replay"] = entry["turns"]
        cases.append(case)
    document["suite"]["agent"] = f"{HERE / 'tau2_replay.py'}:agent"
    # the scripted user replaces the LLM simulator, whose prompt and stop tokens it has no use for
    document["suite"]["user"] = {"agent": f"{HERE / 'tau2_replay.py'}:user"}
    document["cases"] = cases
    out.write_bytes(orjson.dumps(document))
    return out


def disagreements(entries: list[dict[str, Any]], report: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries whose agent-eval verdict (the case passed) differs from tau2's (reward 1.0)."""
    passed = {row["id"]: row["status"] == "passed" for row in report["cases"]}
    found = []
    for number, entry in enumerate(entries):
        key = case_id(number, entry)
        if passed.get(key) != (entry["upstream"]["reward"] == 1.0):
            found.append({"case": key, "agent_eval": passed.get(key), "upstream": entry["upstream"]})
    return found
