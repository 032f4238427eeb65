"""`import inspect|deepeval|openai-evals` and `score` of an Inspect log, as subprocesses."""
from __future__ import annotations

import orjson

from tests.builders import imported_cases
from tests.cli import run_cli
from tests.e2e.test_import_score_cli import only_report
from tests.inspect_gen import eval_log, sample
from tests.recorders.agent import TURNS


def test_an_inspect_eval_log_imports_and_scores_each_epoch_as_a_trial(tmp_path):
    log = tmp_path / "refunds.eval"
    log.write_bytes(eval_log([sample(1, target=None), sample(2, target=None)]))
    imported = run_cli("import", "inspect", log, "--out", tmp_path / "cases.json", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    (case,) = imported_cases(tmp_path / "cases.json")
    assert case["messages"] == TURNS and len(case["expected_tools"]) == 3  # lookup_order(42) once, not twice
    out = tmp_path / "out"
    scored = run_cli("score", log, "--cases", tmp_path / "cases.json", "--output-dir", out, "--no-html", cwd=tmp_path)
    assert scored.returncode == 0, scored.stdout + scored.stderr
    report = only_report(out)
    assert report["settings"]["scored_from"]["format"] == "inspect"  # detected from the content
    runs = report["cases"][0]["runs"]
    assert [r["trial"] for r in runs] == [0, 1]  # epochs 1 and 2
    for run in runs:
        m = run["metrics"]
        # E = 3 (collapsed), A = 4 recorded calls: 3/3, 3/4, min(1, 3/4); 4 of 4 fields match
        assert (m["tool_recall"], m["tool_precision"], m["step_efficiency"], m["param_accuracy"]) == (1.0, 0.75,
                                                                                                     0.75, 1.0)
        assert m["has_loop"] is True and m["latency_s"] == 2.0  # the sample's working time
        assert (m["prompt_tokens"], m["completion_tokens"]) == (750, 75)  # model_usage


def test_deepeval_csv_and_openai_evals_import_from_the_cli(tmp_path):
    csv_file = tmp_path / "goldens.csv"
    csv_file.write_text('input,actual_output,expected_output,retrieval_context,context,name,comments,source_file,'
                        'tools_called,expected_tools,additional_metadata,custom_column_key_values\n'
                        'Hello,,Hi there,a|b,,greet,,,,,,\n')
    done = run_cli("import", "deepeval", csv_file, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)[0]["metadata"] == {"retrieval_context": ["a", "b"]}
    evals = tmp_path / "evals.jsonl"
    evals.write_bytes(orjson.dumps({"input": [{"role": "user", "content": "Capital of France?"}], "ideal": "Paris"}))
    done = run_cli("import", "openai-evals", evals, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout) == [{"id": "sample-1", "query": "Capital of France?",
                                          "expect": {"icontains": "Paris"}}]
    bad = run_cli("import", "deepeval", evals, "--logs", evals, cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "--logs" in bad.stderr
