"""The CLI end to end (in-process): exit codes 0/1/2, messages, the JSON report and the journal."""
from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from tests.loopback import status

from tests.builders import LOOKUP_TOOLS
from tests.cli import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
TOOLS = LOOKUP_TOOLS

AGENT = '''
def agent(task):
    value = task.call_tool("lookup", key="a")
    return "ok " + value if task.input == "pass" else "no"
'''

REPORT_KEYS = {"schema_version", "run_id", "created_at", "suite", "agent", "model", "cases_file", "settings",
               "summary", "cases", "gate", "interrupted", "exit_code"}
SETTINGS_KEYS = {"repeat", "threshold", "filter", "judge", "judge_model", "judge_base_url", "no_cache",
                 "concurrency", "max_steps", "timeout", "base_url", "user"}
CASE_KEYS = {"id", "tags", "status", "pass_rate", "skip_reason", "runs"}
RUN_KEYS = {"trial", "status", "error", "success", "checks", "judge", "judge_expected_outcome", "metrics",
            "scorers", "scorer_errors", "escalated", "trace"}
TRACE_KEYS = {"user_messages", "replies", "final_answer", "cards", "final_agent", "stop_reason",
              "agent_error",
              "steps", "llm_calls", "latency_s", "ttfa_s", "final_env_diff"}
STEP_KEYS = {"step", "name", "args", "output", "error", "invalid_args", "latency_s", "t_start_s"}
RUN_METRIC_KEYS = {"success", "tool_recall", "tool_precision", "param_accuracy", "step_efficiency",
                   "has_loop",
                   "tool_errors", "recovered", "invalid_calls", "progress", "latency_s", "ttfa_s",
                   "prompt_tokens", "completion_tokens", "cost_usd", "turns"}


def good(case_id="good", **extra):
    return {"id": case_id, "query": "pass", "tags": ["smoke"], "expect": {"contains": "ok"},
            "expected_tools": [{"name": "lookup", "args": {"key": "a"}}], **extra}


def bad(case_id="bad"):
    return {"id": case_id, "query": "fail", "tags": ["smoke"], "expect": {"contains": "ok"}}


@pytest.fixture
def suite(tmp_path):
    """A tiny suite folder; returns a function writing cases.json (block merged over the defaults)."""
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "tools.py").write_text(TOOLS)
    (folder / "agent.py").write_text(AGENT)

    def write(cases, name="cases.json", **block):
        block = {"name": "tiny", "tools": "tools.py", "agent": "agent.py:agent",
                 "initial_env": {"data": {"a": "alpha"}}, **block}
        path = folder / name
        path.write_bytes(orjson.dumps({"suite": block, "cases": cases}))
        return path

    return write


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(COLUMNS="400", NO_COLOR="1", **extra)
    return env


def cli(*args, cwd=None, env=None, tmp=None) -> CliResult:
    env = env or clean_env()
    if tmp is not None:
        env.setdefault("XDG_CACHE_HOME", str(tmp / "cache"))
    return run_cli(*args, cwd=cwd or ROOT, env=env, timeout=120)


def flat(text: str) -> str:
    return " ".join(text.split())


def assert_exit_2(result, *needles):
    message = flat(result.stderr)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    for needle in needles:
        assert needle in message, (needle, result.stderr)


def only_report(out: Path) -> dict:
    (path,) = out.glob("*.json")
    return orjson.loads(path.read_bytes())


# ---------------------------------------------------------------- 0 and 1


def test_all_pass_exits_0_and_writes_the_report_and_journal(suite, tmp_path):
    path = suite([good(), good("good-2"), bad()])
    out = tmp_path / "out"
    result = cli("run", "--cases", path, "--filter", "good", "-k", "2", "--output-dir", out, tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    report = only_report(out)
    assert set(report) >= REPORT_KEYS
    assert set(report["settings"]) >= SETTINGS_KEYS
    assert report["schema_version"] == 1 and report["exit_code"] == 0 and report["interrupted"] is False
    assert report["suite"] == "tiny" and report["gate"] is None
    assert report["cases_file"] == str(path.resolve())
    assert report["settings"]["repeat"] == 2 and report["settings"]["filter"] == ["good"]
    assert [c["id"] for c in report["cases"]] == ["good", "good-2"]
    for entry in report["cases"]:
        assert set(entry) >= CASE_KEYS and entry["status"] == "passed" and entry["pass_rate"] == 1.0
        assert [r["trial"] for r in entry["runs"]] == [0, 1]
        for run in entry["runs"]:
            assert set(run) >= RUN_KEYS and set(run["trace"]) >= TRACE_KEYS
            assert set(run["metrics"]) >= RUN_METRIC_KEYS
            (step,) = run["trace"]["steps"]
            assert set(step) >= STEP_KEYS and step["output"] == "alpha"
            assert run["trace"]["final_answer"] == "ok alpha"
    assert report["summary"]["pass_at_1"] == 1.0 and report["summary"]["runs"] == 4
    # The journal: a header line, then one line per run (2 cases x 2 trials).
    lines = (out / f"{report['run_id']}.jsonl").read_bytes().splitlines()
    header, runs = orjson.loads(lines[0]), [orjson.loads(line) for line in lines[1:]]
    assert header["run_id"] == report["run_id"]
    assert sorted((r["case_id"], r["trial"]) for r in runs) == [("good", 0), ("good", 1), ("good-2", 0),
                                                               ("good-2", 1)]
    assert "OPENAI_API_KEY" not in (out / f"{report['run_id']}.jsonl").read_text()


def test_a_failed_case_exits_1(suite, tmp_path):
    path = suite([good(), bad()])
    out = tmp_path / "out"
    result = cli("run", "--cases", path, "--output-dir", out, "--quiet", tmp=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    report = only_report(out)
    assert {c["id"]: c["status"] for c in report["cases"]} == {"good": "passed", "bad": "failed"}
    assert report["exit_code"] == 1


# ---------------------------------------------------------------- 2: bad input before anything runs


@pytest.mark.parametrize(("args", "needle"), [
    (["--repeat", "0"], "--repeat"),
    (["--repeat", "many"], "--repeat"),
    (["--threshold", "1.5"], "--threshold"),
    (["--concurrency", "0"], "--concurrency"),
    (["--max-steps", "0"], "--max-steps"),
    (["--timeout", "-1"], "--timeout"),
    (["--no-such-flag"], "--no-such-flag"),
])
def test_bad_arguments_exit_2(suite, tmp_path, args, needle):
    out = tmp_path / "out"
    result = cli("run", "--cases", suite([good()]), "--output-dir", out, *args, tmp=tmp_path)
    assert_exit_2(result)
    assert needle in result.stderr
    assert not list(out.glob("*.json"))


def test_unreadable_case_file_exits_2(tmp_path):
    missing = tmp_path / "nowhere" / "cases.json"
    assert_exit_2(cli("run", "--cases", missing, tmp=tmp_path), str(missing))
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    assert_exit_2(cli("run", "--cases", garbage, tmp=tmp_path), str(garbage), "not valid JSON")


def test_invalid_case_file_names_file_case_and_field(suite, tmp_path):
    path = suite([good(), {"id": "broken", "query": "q", "expect": {"contians": "x"}},
                  {"id": "no-input", "expect": {"contains": "x"}}])
    result = cli("run", "--cases", path, "--output-dir", tmp_path / "out", tmp=tmp_path)
    assert_exit_2(result, str(path), "'broken'", "expect.contians", "'no-input'", "query")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())  # nothing ran


def test_tools_module_that_cannot_be_imported_exits_2(suite, tmp_path):
    folder = tmp_path / "suite"
    (folder / "broken_tools.py").write_text("import a_module_that_does_not_exist_xyz\n")
    path = suite([good()], tools="broken_tools.py")
    assert_exit_2(cli("run", "--cases", path, tmp=tmp_path), "broken_tools.py",
                  "a_module_that_does_not_exist_xyz")
    (folder / "raising_tools.py").write_text("raise RuntimeError('tools exploded')\n")
    path = suite([good()], tools="raising_tools.py")
    assert_exit_2(cli("validate", "--cases", path, tmp=tmp_path), "raising_tools.py", "tools exploded")


@pytest.mark.parametrize(("source", "spec", "needle"), [
    ("raise ImportError('agent exploded')\n", "bad_agent.py:agent", "agent exploded"),
    ("def other(task):\n    return 'x'\n", "bad_agent.py:agent", "agent"),
    (None, "missing_agent.py:agent", "missing_agent.py"),
    (None, "no_such_package_xyz.mod:agent", "no_such_package_xyz"),
    (None, "no-colon-here", "no-colon-here"),
])
def test_agent_that_cannot_be_imported_exits_2(suite, tmp_path, source, spec, needle):
    folder = tmp_path / "suite"
    if source is not None:
        (folder / "bad_agent.py").write_text(source)
    path = suite([good()])
    result = cli("run", "--cases", path, "--agent", spec, "--output-dir", tmp_path / "out", cwd=folder,
                 tmp=tmp_path)
    assert_exit_2(result, needle)


def test_an_agent_spec_in_the_suite_is_relative_to_the_case_file(suite, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = suite([good()])
    result = cli("run", "--cases", path, "--output-dir", tmp_path / "out", "--quiet", cwd=elsewhere,
                 tmp=tmp_path)
    assert result.returncode == 0, result.stderr


def test_no_case_selected_exits_2(suite, tmp_path):
    path = suite([good(), bad()])
    assert_exit_2(cli("run", "--cases", path, "--filter", "zzz-nothing", tmp=tmp_path), "zzz-nothing")


def test_openai_agent_without_a_model_exits_2(suite, tmp_path):
    path = suite([good()], agent="openai")
    result = cli("run", "--cases", path, env=clean_env(OPENAI_API_KEY="sk-test"), tmp=tmp_path)
    assert_exit_2(result, "model", "--model")


def test_openai_agent_without_a_key_exits_2(suite, tmp_path):
    path = suite([good()])
    result = cli("run", "--cases", path, "--agent", "openai", "--model", "gpt-x", tmp=tmp_path)
    assert_exit_2(result, "OPENAI_API_KEY")


def test_every_selected_case_skipped_exits_2(suite, tmp_path):
    path = suite([good(requires=["AGENT_EVAL_TEST_UNSET_VARIABLE"])])
    out = tmp_path / "out"
    result = cli("run", "--cases", path, "--output-dir", out, "--quiet", tmp=tmp_path)
    assert result.returncode == 2, result.stderr
    report = only_report(out)
    assert report["cases"][0]["status"] == "skipped" and report["exit_code"] == 2


def test_an_errored_case_with_nothing_failed_exits_2(suite, tmp_path, loopback):
    srv = loopback(lambda request, index: status(400))
    path = suite([good()])
    out = tmp_path / "out"
    result = cli("run", "--cases", path, "--agent", "openai", "--model", "loop", "--base-url", srv.base_url,
                 "--output-dir", out, "--quiet", env=clean_env(OPENAI_API_KEY="sk-test"), tmp=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    report = only_report(out)
    (run,) = report["cases"][0]["runs"]
    assert report["cases"][0]["status"] == "error" and run["status"] == "error" and "400" in run["error"]
    assert report["summary"]["runs_errored"] == 1 and report["exit_code"] == 2
    assert srv.count == 1  # a 400 is not retried
    assert "sk-test" not in (out / f"{report['run_id']}.json").read_text()


def test_a_failure_beats_an_error(suite, tmp_path, loopback):
    # The agent answers "no" to "fail": a failed case; exit 1 comes before exit 2 for errors.
    srv = loopback(lambda request, index: status(400) if index == 0 else "no")
    path = suite([good("first"), bad()])
    result = cli("run", "--cases", path, "--agent", "openai", "--model", "loop", "--base-url", srv.base_url,
                 "--concurrency", "1", "--output-dir", tmp_path / "out", "--quiet",
                 env=clean_env(OPENAI_API_KEY="sk-test"), tmp=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr


# ---------------------------------------------------------------- list and validate


def test_list_prints_the_selected_cases(suite, tmp_path):
    path = suite([good(), good("good-2", tags=["extra"]), bad()])
    result = cli("list", "--cases", path, tmp=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["good", "good-2", "bad"]
    filtered = cli("list", "--cases", path, "--filter", "extra", tmp=tmp_path)
    assert filtered.returncode == 0
    assert [x.split()[0] for x in filtered.stdout.strip().splitlines()] == ["good-2"]
    assert_exit_2(cli("list", "--cases", path, "--filter", "zzz", tmp=tmp_path), "zzz")
    invalid = suite([{"id": "x", "query": "q"}], name="invalid.json")
    assert_exit_2(cli("list", "--cases", invalid, tmp=tmp_path), "'x'")


def test_validate_exit_codes(suite, tmp_path):
    path = suite([good(), bad()])
    result = cli("validate", "--cases", path, tmp=tmp_path)
    assert result.returncode == 0 and "valid" in result.stdout and "2 cases" in flat(result.stdout)
    invalid = suite([good(), good()], name="dups.json")
    result = cli("validate", "--cases", invalid, tmp=tmp_path)
    assert_exit_2(result, str(invalid), "'good'", "id", "duplicate")


# ---------------------------------------------------------------- the example suite


def test_example_suite_faq_filter_selects_and_runs(tmp_path):
    listed = cli("list", "--filter", "faq", tmp=tmp_path)
    assert listed.returncode == 0, listed.stderr
    ids = [line.split()[0] for line in listed.stdout.strip().splitlines()]
    assert ids
    out = tmp_path / "out"
    result = cli("run", "--filter", "faq", "--no-judge", "--output-dir", out, "--quiet", tmp=tmp_path)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    report = only_report(out)
    assert [c["id"] for c in report["cases"]] == ids
    assert report["summary"]["cases_total"] == len(ids)
    assert report["summary"]["cases_total"] > report["summary"]["cases_skipped"]
