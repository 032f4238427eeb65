"""Play BFCL trajectories through `agent-eval run`: the entries imported with `agent-eval bench import bfcl`,
one case per trajectory (the imported case, its id suffixed, the trajectory in `metadata.replay`), the
Python agent of bfcl_replay_agent.py, and each case's verdict compared with upstream's."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson

from agent_eval.bench import ImportRequest
from agent_eval.bench.bfcl.importer import import_suite

HERE = Path(__file__).resolve().parent


def parity_suite(trajectories: list[dict[str, Any]], folder: Path) -> Path:
    """The case file of `trajectories`, in a fresh import of their entries in `folder`."""
    categories = tuple(dict.fromkeys(t["category"] for t in trajectories))
    result = import_suite(ImportRequest(folder, None, {"category": categories},
                                        only=frozenset(t["id"] for t in trajectories)))
    document = orjson.loads(result.cases_file.read_bytes())
    by_id = {case["id"]: case for case in document["cases"]}
    cases = []
    for number, item in enumerate(trajectories):
        case = copy.deepcopy(by_id[item["id"]])
        case["id"] = f"{item['id']}~{number}-{item['perturbation']}"
        case["metadata"]["replay"] = item["turns"]
        cases.append(case)
    document["suite"]["agent"] = f"{HERE / 'bfcl_replay_agent.py'}:agent"
    document["cases"] = cases
    path = folder / "parity_cases.json"
    path.write_bytes(orjson.dumps(document))
    return path


def disagreements(trajectories: list[dict[str, Any]], report: dict[str, Any]) -> list[dict[str, Any]]:
    """The trajectories whose agent-eval verdict (the case passed) differs from upstream's."""
    passed = {entry["id"]: entry["status"] == "passed" for entry in report["cases"]}
    found = []
    for number, item in enumerate(trajectories):
        case_id = f"{item['id']}~{number}-{item['perturbation']}"
        if passed.get(case_id) != item["upstream"]["valid"]:
            found.append({"case": case_id, "agent_eval": passed.get(case_id), "upstream": item["upstream"]})
    return found


def play_trajectories(trajectories: list[dict[str, Any]], folder: Path) -> list[dict[str, Any]]:
    """Import, play with `agent-eval run --no-judge`, and return the disagreements."""
    from tests.cli import run_cli

    cases = parity_suite(trajectories, folder / "suite")
    run_cli("run", "--cases", cases, "--no-judge", "--quiet", "--output-dir", folder / "reports", "--no-html")
    report = orjson.loads(next((folder / "reports").glob("*.json")).read_bytes())
    return disagreements(trajectories, report)
