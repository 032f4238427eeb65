"""Recordings made by real libraries too heavy to be dev dependencies, committed under
tests/fixtures/recordings/ (tests/recorders/regenerate.py makes them again; each folder's versions.json
names the library, its version and the options), imported and scored by the CLI as a subprocess.

- The plain agent (tests/recorders/agent.py) under OpenLLMetry and logfire's `instrument_openai`
  (version 1 and 2): two user turns; lookup_order(42), lookup_order(42) again, refund(42, 9.5), then
  lookup_order(7); six model calls.
- An Agents SDK agent (tests/recorders/agents_sdk.py) under OpenInference and logfire: the same calls,
  plus a handoff from Support to Refunds (`transfer_to_refunds`, the framework's own tool); seven calls.
- An Inspect AI eval (tests/recorders/inspect_log.py) and deepeval's own files (deepeval_files.py).
"""
from __future__ import annotations

import shutil
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from agent_eval.ingest.otel import otel_cases
from tests.builders import imported_cases
from tests.e2e.test_import_score_cli import ROOT, cli, only_report
from tests.recorders import agent, agents_sdk

RECORDINGS = ROOT / "tests" / "fixtures" / "recordings"
# The recorded calls with the consecutive duplicate collapsed: the imported case does not require the mistake.
EXPECTED = [{"name": "lookup_order", "args": {"order_id": 42}},
            {"name": "refund", "args": {"order_id": 42, "amount": 9.5}},
            {"name": "lookup_order", "args": {"order_id": 7}}]
PLAIN = (agent.PROMPT_TOKENS, agent.COMPLETION_TOKENS)  # 750, 75
SDK = (agents_sdk.PROMPT_TOKENS, agents_sdk.COMPLETION_TOKENS)  # 865, 80
# folder: (tokens, the framework's own calls)
SETUPS = {
    "openllmetry": (PLAIN, []),
    "openllmetry-root-tool-spans": (PLAIN, []),
    "logfire-v1": (PLAIN, []),
    "logfire-v2": (PLAIN, []),
    "logfire-v2-root": (PLAIN, []),
    "agents-sdk-openinference": (SDK, ["transfer_to_refunds"]),
    "agents-sdk-logfire": (SDK, ["transfer_to_refunds"]),
    "agents-sdk-openinference-per-turn": (SDK, ["transfer_to_refunds"]),  # a trace per Runner.run, stitched
    "agents-sdk-logfire-per-turn": (SDK, ["transfer_to_refunds"]),
    "agents-sdk-openinference-responses": (SDK, ["transfer_to_refunds"]),  # the SDK's default model
    "agents-sdk-logfire-responses": (SDK, ["transfer_to_refunds"]),
}


def import_and_score(tmp_path: Path, traces: Path) -> tuple[dict, dict]:
    """`import otel` then `score` of one recording: (the one case, the one scored run)."""
    imported = cli("import", "otel", traces, "--out", tmp_path / "cases.json", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "Traceback" not in imported.stderr and "could not be" not in imported.stderr
    (case,) = imported_cases(tmp_path / "cases.json")
    out = tmp_path / "out"
    scored = cli("score", traces, "--cases", tmp_path / "cases.json", "--output-dir", out, "--no-html", cwd=tmp_path)
    assert scored.returncode == 0, scored.stdout + scored.stderr
    (run,) = only_report(out)["cases"][0]["runs"]
    return case, run


@pytest.mark.parametrize("name", list(SETUPS))
def test_a_committed_recording_imports_and_scores_as_what_the_agent_did(tmp_path, name):
    (prompt, completion), framework = SETUPS[name]
    folder = RECORDINGS / name
    assert orjson.loads((folder / "versions.json").read_bytes())["versions"]  # what made it is said
    case, run = import_and_score(tmp_path, folder / "traces.jsonl")
    assert case["messages"] == agent.TURNS == agents_sdk.TURNS  # both user turns, system messages dropped
    assert case["expected_tools"] == EXPECTED and case["trajectory"] == "unordered"
    assert [c["name"] for c in case["metadata"]["recorded_calls"]] == ["lookup_order"] * 2 + ["refund", "lookup_order"]
    assert all(c.get("executed") is not False for c in case["metadata"]["recorded_calls"])
    assert [c["name"] for c in case["metadata"].get("framework_calls", [])] == framework
    assert case["metadata"]["recorded_replies"] == ["Refunded 9.50.", "Order 7 is in transit."]
    assert case["metadata"]["recorded_usage"] == {"prompt_tokens": prompt, "completion_tokens": completion}
    for binary in ("traces.pb", "traces.pbd"):  # the protobuf exports of the same spans give the same case
        if (folder / binary).exists():
            cases, bad, _ = otel_cases(folder / binary)
            assert not bad and [c["expected_tools"] for c in cases] == [EXPECTED]

    m = run["metrics"]
    # E = {lookup_order(42), refund(42, 9.5), lookup_order(7)}; A = the four calls the agent made (the
    # handoff is the framework's, not a step): |E ∩ A| = 3
    assert m["tool_recall"] == 1.0  # 3/3
    assert m["tool_precision"] == 0.75  # 3/4
    assert m["step_efficiency"] == 0.75  # min(1, 3/4)
    assert m["param_accuracy"] == 1.0  # order_id; order_id + amount; order_id: 4 of 4 fields
    assert m["has_loop"] is True  # lookup_order({"order_id": 42}) twice in a row
    assert (m["tool_errors"], m["invalid_calls"]) == (0, 0)
    assert (m["prompt_tokens"], m["completion_tokens"]) == (prompt, completion)
    trace = run["trace"]
    assert [(s["name"], s["executed"]) for s in trace["steps"]] == [
        ("lookup_order", True), ("lookup_order", True), ("refund", True), ("lookup_order", True)]
    assert [c["name"] for c in trace.get("framework_calls") or []] == framework
    assert trace["replies"] == ["Refunded 9.50.", "Order 7 is in transit."]
    assert 0 < m["ttfa_s"] < m["latency_s"]


@pytest.mark.parametrize("log", ["shop.eval", "shop.json"])
def test_an_inspect_log_written_by_inspect_imports_and_scores_as_what_the_model_did(tmp_path, log):
    """tests/recorders/inspect_log.py: two samples, two epochs each, played by Inspect's own tool loop."""
    path = RECORDINGS / "inspect" / log
    imported = cli("import", "inspect", path, "--out", tmp_path / "imported.json", cwd=tmp_path)
    assert imported.returncode == 0 and "Traceback" not in imported.stderr, imported.stderr
    refund, where = imported_cases(tmp_path / "imported.json")
    assert (refund["id"], refund["query"], refund["expect"]) == ("refund-42", "Refund order 42", {"icontains": "9.50"})
    # no target: the recorded calls are what is expected (one call, nothing to collapse)
    assert (where["id"], where["query"]) == ("where-7", "Where is order 7?")
    assert where["expected_tools"] == [{"name": "lookup_order", "args": {"order_id": 7}}]

    # refund-42's trajectory, written by hand, so that score has calls to compare with
    refund["expected_tools"] = [{"name": "lookup_order", "args": {"order_id": 42}},
                                {"name": "refund", "args": {"order_id": 42, "amount": 9.5}}]
    refund["trajectory"] = "unordered"
    cases = tmp_path / "cases.json"
    cases.write_bytes(orjson.dumps({"suite": {"name": "shop"}, "cases": [refund, where]}))
    out = tmp_path / "out"
    scored = cli("score", path, "--cases", cases, "--output-dir", out, "--no-html", cwd=tmp_path)
    assert scored.returncode == 0, scored.stdout + scored.stderr
    report = only_report(out)
    runs = {c["id"]: c["runs"] for c in report["cases"]}
    assert [r["trial"] for r in runs["refund-42"]] == [0, 1]  # each epoch a trial
    for run in runs["refund-42"]:
        m = run["metrics"]
        assert [s["name"] for s in run["trace"]["steps"]] == ["lookup_order", "lookup_order", "refund"]
        # E = {lookup_order(42), refund(42, 9.5)}; A = lookup_order(42) x2, refund: |E ∩ A| = 2
        assert m["tool_recall"] == 1.0  # 2/2
        assert m["tool_precision"] == pytest.approx(2 / 3)  # 2/3
        assert m["step_efficiency"] == pytest.approx(2 / 3)  # min(1, 2/3)
        assert m["param_accuracy"] == 1.0  # order_id; order_id + amount: 3 of 3 fields
        assert m["has_loop"] is True  # lookup_order(42) twice in a row
        assert (m["prompt_tokens"], m["completion_tokens"]) == (460, 46)  # 100+110+120+130, 10+11+12+13
        assert run["status"] == "passed"  # "Refunded 9.50." contains the target
        steps = run["trace"]["steps"]  # timed by Inspect's tool events, in the sample's working time
        assert 0 < steps[0]["t_start_s"] < steps[1]["t_start_s"] < steps[2]["t_start_s"] < m["latency_s"]
        assert m["ttfa_s"] == steps[0]["t_start_s"] and all(s["latency_s"] > 0 for s in steps)
    for run in runs["where-7"]:
        m = run["metrics"]
        # E = A = {lookup_order(7)}: 1/1 each; no repeat
        trajectory = (m["tool_recall"], m["tool_precision"], m["step_efficiency"], m["param_accuracy"])
        assert trajectory == (1.0, 1.0, 1.0, 1.0)
        assert m["has_loop"] is False
        assert (m["prompt_tokens"], m["completion_tokens"]) == (290, 29)  # 140+150, 14+15


GOLDEN_REFUND = {"id": "refund-42", "query": "Refund order 42", "trajectory": "unordered",
                 "expected_tools": [{"name": "lookup_order", "args": {"order_id": 42}},
                                    {"name": "refund", "args": {"order_id": 42, "amount": 9.5}}]}


@pytest.mark.parametrize("name", ["goldens.json", "goldens.jsonl", "goldens.csv"])
def test_deepeval_goldens_saved_by_deepeval_import(tmp_path, name):
    """tests/recorders/deepeval_files.py: EvaluationDataset.save_as of three goldens."""
    done = cli("import", "deepeval", RECORDINGS / "deepeval" / name, "--out", tmp_path / "cases.json", cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    refund, where, hours = imported_cases(tmp_path / "cases.json")
    assert {k: refund[k] for k in GOLDEN_REFUND} == GOLDEN_REFUND
    assert refund["metadata"]["context"] == ["Order 42 cost 9.50", "Refunds are instant"]
    # tools_called (what the app did: lookup_order(7) twice) collapsed, the recorded mistake not required
    assert where["expected_tools"] == [{"name": "lookup_order", "args": {"order_id": 7}}]
    assert where["metadata"]["comments"] == "the agent looked it up twice"
    assert hours["id"].startswith("golden-") and hours["query"] == "What are your opening hours?"
    assert hours["rubric"].endswith("We are open 9 to 5.") and "expected_tools" not in hours
    assert hours["metadata"]["retrieval_context"] == ["Opening hours: 9 to 5"]


def test_a_deepeval_conversational_golden_and_test_run_import(tmp_path):
    folder = RECORDINGS / "deepeval"
    done = cli("import", "deepeval", folder / "conversational.json", "--out", tmp_path / "talk.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (talk,) = imported_cases(tmp_path / "talk.json")
    assert talk["messages"] == ["Refund order 42", "And order 7?"]  # the user turns
    # the assistant turns' tools_called, lookup_order(42) x2 collapsed
    lookup_7 = {"name": "lookup_order", "args": {"order_id": 7}}
    assert talk["expected_tools"] == [*GOLDEN_REFUND["expected_tools"], lookup_7]
    assert talk["metadata"]["scenario"].startswith("A customer wants order 42 refunded")
    assert talk["expected_outcome"].startswith("Order 42 is refunded")

    done = cli("import", "deepeval", folder / "test_run.json", "--out", tmp_path / "run.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (case,) = imported_cases(tmp_path / "run.json")
    assert {k: case[k] for k in GOLDEN_REFUND} == GOLDEN_REFUND  # expectedTools, not what was called


def _append_lines(source: str, lines: bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / Path(source).name
        path.write_bytes((RECORDINGS / source).read_bytes() + lines)
        return path
    return make


def _pbd_with_garbage(folder: Path) -> Path:
    path = folder / "traces.pbd"
    path.write_bytes((RECORDINGS / "openllmetry" / "traces.pbd").read_bytes() + struct.pack(">I", 5) + b"\xff" * 5)
    return path


def _json_list_with(extra: list) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "goldens.json"
        path.write_bytes(orjson.dumps([*orjson.loads((RECORDINGS / "deepeval" / "goldens.json").read_bytes()), *extra]))
        return path
    return make


def _inspect_json_without_input(folder: Path) -> Path:
    log = orjson.loads((RECORDINGS / "inspect" / "shop.json").read_bytes())
    broken = {k: v for k, v in log["samples"][0].items() if k != "input"}
    log["samples"].append({**broken, "id": "broken"})
    path = folder / "shop.json"
    path.write_bytes(orjson.dumps(log))
    return path


def _eval_with_garbage_member(folder: Path) -> Path:
    path = folder / "shop.eval"
    shutil.copy(RECORDINGS / "inspect" / "shop.eval", path)
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("samples/broken_epoch_1.json", b"{not json")
    return path


SPAN_ZZ = (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "01", "name": "x", '
           b'"startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]}\n')
# format, how to break a real recording, cases that still import, what names each record left out
BROKEN = {
    "otel JSON lines": ("otel", _append_lines("openllmetry/traces.jsonl", b"not json\n" + SPAN_ZZ), 1,
                        ["line 2: not JSON", "line 3: span 'x': traceId 'zz' is neither"]),
    "otel protobuf": ("otel", _pbd_with_garbage, 1, ["request 3: not an OTLP traces export request"]),
    "deepeval JSONL": ("deepeval", _append_lines("deepeval/goldens.jsonl", b'{"input": 5}\nnot json\n'), 3,
                       ["line 4: no input", "line 5: not JSON"]),
    "deepeval CSV": ("deepeval", _append_lines("deepeval/goldens.csv", b'Broken,,x,,,broken,,,"[{bad",,,,,,,\n'), 3,
                     ["row 5: column tools_called is not JSON"]),
    "deepeval JSON": ("deepeval", _json_list_with(["a string", {"name": "x"}]), 3,
                      ["index 3: a golden must be an object", "index 4: no input"]),
    "inspect .json": ("inspect", _inspect_json_without_input, 2, ["sample index 4: no user message in input"]),
    "inspect .eval": ("inspect", _eval_with_garbage_member, 2, ["member samples/broken_epoch_1.json: not JSON"]),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_an_unreadable_record_beside_real_ones_is_named_and_the_rest_import(tmp_path, name):
    fmt, make, kept, named = BROKEN[name]
    done = cli("import", fmt, make(tmp_path), "--out", tmp_path / "cases.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert len(imported_cases(tmp_path / "cases.json")) == kept
    left_out = [line.strip() for line in done.stderr.splitlines() if line.startswith("  - ")]
    assert len(left_out) == len(named) and all(any(line.startswith(f"- {n}") for line in left_out) for n in named)
    if name in ("otel JSON lines", "otel protobuf", "inspect .eval"):  # score reads the same file as runs
        path = next(p for p in tmp_path.iterdir() if p.name != "cases.json")
        scored = cli("score", path, "--cases", tmp_path / "cases.json", "--output-dir", tmp_path / "out", "--no-html",
                     cwd=tmp_path)
        assert scored.returncode == 0 and "Traceback" not in scored.stderr, scored.stdout + scored.stderr
        assert all(f"- {n}" in scored.stderr for n in named)
