"""Inspect AI logs (`.eval` zips with zstd members, and JSON logs) as cases and recorded runs."""
from __future__ import annotations

import orjson

from agent_eval.ingest.inspect_logs import MEMBER_CAP, is_inspect_log
from agent_eval.ingest.inspect_runs import log_cases, log_recordings
from tests.inspect_gen import eval_log, eval_log_json, eval_zip, sample
from tests.recorders.agent import TURNS

EXPECTED = [{"name": "lookup_order", "args": {"order_id": 42}},
            {"name": "refund", "args": {"order_id": 42, "amount": 9.5}},
            {"name": "lookup_order", "args": {"order_id": 7}}]


def test_eval_zip_with_zstd_members_and_json_logs_give_the_same_cases(tmp_path):
    for name, data in (("log.eval", eval_log([sample(1), sample(2)])),
                       ("deflate.eval", eval_log([sample(1), sample(2)], zstd=False)),
                       ("log.json", eval_log_json([sample(1), sample(2)]))):
        path = tmp_path / name
        path.write_bytes(data)
        assert is_inspect_log(data)
        cases, bad = log_cases(path)
        assert not bad
        # one case per sample id, whatever its epochs; only the user turns (the attachment resolved)
        assert [c for _, c in cases] == [{"id": "refund-42", "messages": TURNS, "expect": {"icontains": "transit"},
                                          "metadata": {"shop": "demo"}}]


def test_a_sample_without_target_is_checked_by_its_recorded_calls_collapsed(tmp_path):
    path = tmp_path / "log.eval"
    path.write_bytes(eval_log([sample(1, target=None)]))
    ((_, case),), _ = log_cases(path)
    assert case["expected_tools"] == EXPECTED and case["trajectory"] == "unordered"


def test_each_epoch_is_a_recorded_run(tmp_path):
    path = tmp_path / "log.eval"
    path.write_bytes(eval_log([sample(1), sample(2)]))
    runs, bad = log_recordings(path)
    assert not bad and [(label, sid, trial) for label, sid, trial, _ in runs] == [
        ("sample refund-42 epoch 1", "refund-42", 0), ("sample refund-42 epoch 2", "refund-42", 1)]
    trace = runs[0][3]
    assert [s["name"] for s in trace["steps"]] == ["lookup_order", "lookup_order", "refund", "lookup_order"]
    assert trace["steps"][2]["args"] == {"order_id": 42, "amount": 9.5} and trace["steps"][2]["output"] == "ok"
    assert trace["final_answer"] == "Order 7 is in transit." and trace["latency_s"] == 2.0  # working_time
    assert trace["llm_calls"] == [{"latency_s": None, "prompt_tokens": 750, "completion_tokens": 75,
                                   "model": "openai/gpt-test"}]


def test_a_member_over_the_cap_or_broken_is_named_and_the_rest_read(tmp_path, monkeypatch):
    import agent_eval.ingest.inspect_logs as logs

    members = {"samples/a_epoch_1.json": orjson.dumps(sample(1, sample_id="a")),
               "samples/b_epoch_1.json": b"x" * 2000, "samples/c_epoch_1.json": b"[1]"}
    path = tmp_path / "log.eval"
    path.write_bytes(eval_zip(members))
    monkeypatch.setattr(logs, "MEMBER_CAP", 1000)  # a member of 2000 bytes stands for one past 256 MiB
    cases, bad = log_cases(path)
    assert [c["id"] for _, c in cases] == []  # "a" is past the small cap too
    assert sum("over the 256 MiB cap" in b.reason for b in bad) == 2  # "a" and "b"; "c" is not a sample
    monkeypatch.setattr(logs, "MEMBER_CAP", MEMBER_CAP)
    cases, bad = log_cases(path)
    assert [c["id"] for _, c in cases] == ["a"]
    reasons = {b.where: b.reason for b in bad}
    assert reasons["member samples/b_epoch_1.json"].startswith("not JSON")
    assert reasons["member samples/c_epoch_1.json"] == "a sample must be an object"


def test_an_archive_past_the_total_budget_is_exit_2_naming_the_file_and_the_budget(tmp_path, monkeypatch):
    # Twelve members each under the per-member cap, 2.4x the budget together: the budget is across members.
    # (The real budget is 1 GiB; scaled down here, the same code holds it.)
    import agent_eval.ingest.inspect_logs as logs
    from tests.builders import run_cli

    assert logs.TOTAL_BUDGET == 2**30
    monkeypatch.setattr(logs, "TOTAL_BUDGET", 1_000_000)
    padding = "p" * 200_000
    members = {f"samples/s{n}_epoch_1.json": orjson.dumps({**sample(1, sample_id=f"s{n}"), "pad": padding})
               for n in range(12)}
    path = tmp_path / "big.eval"
    path.write_bytes(eval_zip(members))
    done = run_cli("import", "inspect", path, "--out", tmp_path / "cases.json", cwd=tmp_path)
    assert done.returncode == 2
    assert str(path) in done.stderr and "1,000,000 bytes" in done.stderr and "budget" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "cases.json").exists()
    cases = tmp_path / "suite.json"
    cases.write_bytes(orjson.dumps({"suite": {}, "cases": [{"id": "s0", "query": "q", "expect": {"contains": "x"}}]}))
    done = run_cli("score", path, "--cases", cases, "--output-dir", tmp_path / "out", "--no-html", cwd=tmp_path)
    assert done.returncode == 2 and str(path) in done.stderr and "budget" in done.stderr
    monkeypatch.setattr(logs, "TOTAL_BUDGET", 5_000_000)  # within the budget: every sample imports
    done = run_cli("import", "inspect", path, "--out", tmp_path / "cases.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_samples_are_read_one_member_at_a_time() -> None:
    import inspect

    import agent_eval.ingest.inspect_logs as logs

    assert inspect.isgeneratorfunction(logs.iter_samples)  # each sample is mapped before the next is read
