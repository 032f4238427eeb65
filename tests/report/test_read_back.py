"""A report read back with a null or wrongly typed element anywhere a command reads is exit 2 naming the
key path (never a traceback, never exit 1, which CI reads as a regression): compare (either side), plan,
label, calibrate and view."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.builders import ROOT
from tests.cli import run_cli

SAMPLE = orjson.loads((ROOT / "tests" / "fixtures" / "sample_report.json").read_bytes())
SAMPLE["cases"] += [{**copy.deepcopy(c), "id": f"{c['id']}-2"} for c in SAMPLE["cases"]]  # plan needs 5 rates


def put(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(doc)
    here = doc
    for key in path[:-1]:
        here = here[key]
    if value is KeyError:
        del here[path[-1]]
    else:
        here[path[-1]] = value
    return doc


# (where, what is put there, the key path the message names)
DAMAGE = [
    (("cases", 0, "runs", 0), None, "cases[0].runs[0] must be an object, found null"),
    (("cases", 2, "runs", 1), "run", "cases[2].runs[1] must be an object, found a string"),
    (("cases", 1), None, "cases[1] must be an object, found null"),
    (("cases", 3, "runs", 0, "metrics", "latency_s"), "2.5", "cases[3].runs[0].metrics.latency_s must be"),
    (("cases", 0, "runs", 2, "metrics", "tool_recall"), [1.0], "cases[0].runs[2].metrics.tool_recall must be"),
    (("cases", 0, "runs", 1, "metrics", "cost_usd"), {"usd": 1}, "cases[0].runs[1].metrics.cost_usd must be"),
    (("cases", 2, "runs", 0, "metrics"), [], "cases[2].runs[0].metrics must be an object, found a list"),
    (("cases", 0, "runs", 0, "metrics", "tool_recall"), -1e308,  # its sums overflowed (OverflowError in fsum)
     "cases[0].runs[0].metrics.tool_recall must be true or false or a number from -2**53 to 2**53"),
    (("cases", 0, "runs", 0, "trial"), "0", "cases[0].runs[0].trial must be a whole number, found a string"),
    (("cases", 0, "runs", 0, "trial"), True, "cases[0].runs[0].trial must be a whole number, found true/false"),
    (("cases", 0, "runs"), {"0": {}}, "cases[0].runs must be a list, found an object"),
    (("cases", 1, "id"), KeyError, "cases[1].id is missing"),
    (("cases", 1, "id"), [1], "cases[1].id must be"),
]
# compare and plan do not read a run's trial (a run is paired by its case), label and calibrate do not
# read its metrics.
READS = {"compare": {"trial"}, "plan": {"trial"}, "label": {"metrics"}, "calibrate": {"metrics"},
         "view": {"trial", "latency_s", "tool_recall", "cost_usd", "id"}}  # the page shows any metric value as text


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    good = tmp_path / "good.json"
    good.write_bytes(orjson.dumps(SAMPLE))
    cases = tmp_path / "cases.json"
    cases.write_bytes(orjson.dumps([{"id": c["id"], "query": "q", "rubric": "r"} for c in SAMPLE["cases"]]))
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(orjson.dumps({"run_id": SAMPLE["run_id"], "case_id": "refund_damaged_order", "trial": 0,
                                     "label": "pass"}) + b"\n")
    return {"good": good, "cases": cases, "labels": labels, "out": tmp_path / "out"}


def commands(bad: Path, files: dict[str, Path]) -> dict[str, list[tuple[Any, ...]]]:
    return {"compare": [("compare", files["good"], bad), ("compare", bad, files["good"])], "plan": [("plan", bad)],
            "label": [("label", bad, "--cases", files["cases"], "--out", files["out"] / "l.jsonl")],
            "calibrate": [("calibrate", bad, "--labels", files["labels"], "--cases", files["cases"])],
            "view": [("view", bad, "--out", files["out"] / "v.html")]}


@pytest.mark.parametrize(("where", "value", "named"), DAMAGE, ids=[d[2].split(" ")[0] for d in DAMAGE])
def test_a_damaged_report_is_exit_2_naming_the_key_path(tmp_path: Path, files, where, value, named) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(orjson.dumps(put(SAMPLE, where, value)))
    for command, calls in commands(bad, files).items():
        if READS[command] & set(map(str, where)):
            continue
        for args in calls:
            done = run_cli(*args, input="p\nq\n")
            assert done.exit_code == 2, (args, done.stdout + done.stderr)
            assert named in done.stderr and "bad.json" in done.stderr, (args, done.stderr)
            assert "Traceback" not in done.stderr


def test_a_whole_report_still_reads(files) -> None:
    for calls in commands(files["good"], files).values():
        for args in calls:
            done = run_cli(*args, input="q\n")
            undefined = args[0] == "calibrate" and "kappa is undefined" in done.stdout  # one label: one class
            assert done.exit_code in (0, 1) or undefined, (args, done.stdout + done.stderr)
            assert "Traceback" not in done.stderr
