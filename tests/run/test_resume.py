"""`run --resume RUN_ID` in-process: stored settings win, only missing runs run, same report."""
from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from agent_eval.commands.run import run_command
from tests.builders import flags_of
from agent_eval.errors import ConfigError

TOOLS = '''
from agent_eval import tool


@tool
def note(text: str, env: dict) -> str:
    """Append a note."""
    env["notes"].append(text)
    return "noted"
'''

# Deterministic: succeeds unless (case number + trial) is a multiple of 3. Counts its calls in a file.
AGENT = '''
from pathlib import Path

CALLS = Path(__file__).with_name("calls.log")


def agent(task):
    with CALLS.open("a") as f:
        f.write(f"{task.case_id} {task.trial}\\n")
    task.call_tool("note", text=task.case_id)
    n = int(task.case_id.split("-")[1])
    return "ok" if (n + task.trial) % 3 else "no"
'''


def make_suite(tmp_path: Path, cases: int = 6) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "tools.py").write_text(TOOLS)
    (folder / "agent.py").write_text(AGENT)
    rows = [{"id": f"case-{n}", "query": "go", "expect": {"contains": "ok"},
             "expected_env_check": {"path": ["notes", 0], "equals": f"case-{n}"}} for n in range(cases)]
    block = {"name": "resumable", "tools": "tools.py", "agent": "agent.py:agent",
             "initial_env": {"notes": []}}
    path = folder / "cases.json"
    path.write_bytes(orjson.dumps({"suite": block, "cases": rows}))
    return path


def run(out: Path, **flags) -> int:
    flags = {"output_dir": out, "quiet": True, **flags}
    return run_command(flags_of(**flags), Console(file=io.StringIO(), width=200), Console(file=io.StringIO()))


def report_of(out: Path, run_id: str) -> dict:
    return orjson.loads((out / f"{run_id}.json").read_bytes())


def only_run_id(out: Path) -> str:
    (journal,) = out.glob("*.jsonl")
    return journal.stem


def comparable(report: dict) -> dict:
    """What must not depend on an interruption: figures (minus wall times), statuses, checks."""
    summary = {k: v for k, v in report["summary"].items() if "latency" not in k and "ttfa" not in k}
    cases = [(c["id"], c["status"], c["pass_rate"],
              [(r["trial"], r["status"], r["checks"], r["trace"]["final_env_diff"]) for r in c["runs"]])
             for c in report["cases"]]
    return {"summary": summary, "cases": cases, "exit_code": report["exit_code"]}


def cut_journal(out: Path, run_id: str, keep_runs: int) -> list[bytes]:
    """Pretend the run was interrupted after `keep_runs` runs: keep those, drop the report."""
    path = out / f"{run_id}.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:1 + keep_runs]))
    (out / f"{run_id}.json").unlink()
    return lines[1:1 + keep_runs]


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "suite" / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_resume_runs_only_the_missing_runs_and_matches_an_uninterrupted_run(tmp_path):
    cases = make_suite(tmp_path)
    whole_code = run(tmp_path / "whole", cases=cases, repeat=2, concurrency=3)
    whole = report_of(tmp_path / "whole", only_run_id(tmp_path / "whole"))
    out = tmp_path / "cut"
    run(out, cases=cases, repeat=2, concurrency=3)
    run_id = only_run_id(out)
    kept = cut_journal(out, run_id, keep_runs=5)
    (tmp_path / "suite" / "calls.log").unlink()

    code = run(out, resume=run_id, concurrency=2)
    resumed = report_of(out, run_id)
    assert len(calls(tmp_path)) == 12 - 5  # only the missing (case, trial) pairs ran
    assert {tuple(line.split()) for line in calls(tmp_path)}.isdisjoint(
        {(r["case_id"], str(r["trial"])) for r in map(orjson.loads, kept)})
    assert comparable(resumed) == comparable(whole) and code == whole_code == 1
    assert resumed["run_id"] == run_id and resumed["interrupted"] is False
    assert resumed["settings"]["repeat"] == 2 and resumed["settings"]["concurrency"] == 2
    # Restored runs are spliced from the journal at the right offsets: whole traces, in trial order.
    journaled = {(r["case_id"], r["trial"]): r["run"]
                 for r in map(orjson.loads, (out / f"{run_id}.jsonl").read_bytes().splitlines()[1:])}
    for entry in resumed["cases"]:
        assert [r["trial"] for r in entry["runs"]] == [0, 1]
        for record in entry["runs"]:
            assert record == journaled[(entry["id"], record["trial"])]


def test_errored_runs_run_again_and_the_report_keeps_only_the_latest_record(tmp_path):
    cases = make_suite(tmp_path, cases=3)
    out = tmp_path / "out"
    run(out, cases=cases)
    run_id = only_run_id(out)
    path = out / f"{run_id}.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    errored = orjson.loads(lines[1])
    errored["run"].update(status="error", error="APIConnectionError: Connection error.", success=False)
    path.write_bytes(lines[0] + orjson.dumps(errored) + b"\n" + b"".join(lines[2:]))
    (tmp_path / "suite" / "calls.log").unlink()

    run(out, resume=run_id)
    report = report_of(out, run_id)
    assert calls(tmp_path) == [f"{errored['case_id']} 0"]
    entry = next(c for c in report["cases"] if c["id"] == errored["case_id"])
    assert len(entry["runs"]) == 1 and entry["runs"][0]["status"] != "error"
    assert report["summary"]["runs_errored"] == 0 and report["summary"]["runs"] == 3
    assert len(path.read_bytes().splitlines()) == 1 + 4  # the errored record stays in the journal


def test_a_finished_run_resumes_to_the_same_report_without_running_anything(tmp_path):
    cases = make_suite(tmp_path, cases=3)
    out = tmp_path / "out"
    first_code = run(out, cases=cases, repeat=2)
    run_id = only_run_id(out)
    first = report_of(out, run_id)
    (tmp_path / "suite" / "calls.log").unlink()
    assert run(out, resume=run_id) == first_code
    assert calls(tmp_path) == []
    assert comparable(report_of(out, run_id)) == comparable(first)


def test_stored_settings_beat_the_environment(tmp_path, monkeypatch):
    cases = make_suite(tmp_path, cases=2)
    out = tmp_path / "out"
    monkeypatch.delenv("AGENT_EVAL_MODEL", raising=False)
    run(out, cases=cases, timeout=30.0)
    run_id = only_run_id(out)
    cut_journal(out, run_id, keep_runs=1)
    monkeypatch.setenv("AGENT_EVAL_MODEL", "changed-since")
    run(out, resume=run_id)
    report = report_of(out, run_id)
    assert report["model"] is None and report["settings"]["timeout"] == 30.0


@pytest.mark.parametrize(("flag", "value", "shown"), [("repeat", 3, "--repeat"),
                                                       ("threshold", 0.5, "--threshold"),
                                                       ("filter", ["case-1"], "--filter"),
                                                       ("no_judge", True, "--no-judge"),
                                                       ("agent", "other.py:agent", "--agent")])
def test_an_explicit_flag_that_conflicts_with_the_stored_settings_exits_2_naming_it(tmp_path, flag, value,
                                                                                     shown):
    cases = make_suite(tmp_path, cases=2)
    out = tmp_path / "out"
    run(out, cases=cases)
    run_id = only_run_id(out)
    with pytest.raises(ConfigError, match=shown):
        run(out, resume=run_id, explicit={flag}, **{flag: value})


def test_a_conflicting_url_is_named_with_its_secret_redacted(tmp_path):
    cases = make_suite(tmp_path, cases=2)
    out = tmp_path / "out"
    run(out, cases=cases)
    with pytest.raises(ConfigError) as refused:
        run(out, resume=only_run_id(out), explicit={"base_url"}, base_url="http://me:hunter2@llm.internal/v1")
    # The message goes to stderr, a CI log: it showed the password.
    assert "hunter2" not in str(refused.value)
    assert str(refused.value).startswith("--base-url http://***@llm.internal/v1 conflicts with run ")


def test_explicit_flags_equal_to_the_stored_ones_and_command_line_only_flags_are_accepted(tmp_path,
                                                                                           monkeypatch):
    cases = make_suite(tmp_path, cases=2)
    out = tmp_path / "out"
    run(out, cases=cases, repeat=2)
    run_id = only_run_id(out)
    cut_journal(out, run_id, keep_runs=1)
    monkeypatch.chdir(tmp_path / "suite")  # a relative --cases resolves to the stored absolute path
    explicit = {"cases", "repeat", "agent", "concurrency", "quiet", "output_dir"}
    code = run(out, resume=run_id, explicit=explicit, cases=Path("cases.json"), repeat=2,
               agent="agent.py:agent", concurrency=1)
    assert code == 1 and report_of(out, run_id)["summary"]["runs"] == 4


def test_a_missing_journal_exits_2_with_its_path(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match=str(out / "20260101-000000-abcdef.jsonl")):
        run(out, resume="20260101-000000-abcdef")


def test_a_case_file_changed_since_the_run_started_is_warned_about(tmp_path):
    cases, out = make_suite(tmp_path), tmp_path / "out"
    run(out, cases=cases)
    run_id = only_run_id(out)

    def resume_stderr() -> str:
        err = io.StringIO()
        run_command(flags_of(output_dir=out, quiet=True, resume=run_id), Console(file=io.StringIO()),
                    Console(file=err, width=300))
        return err.getvalue()

    assert "changed since run" not in resume_stderr()
    cases.write_text(cases.read_text().replace('"go"', '"go!"'))
    assert f"changed since run {run_id} started" in resume_stderr()


def test_a_base_url_with_a_secret_is_stored_redacted_and_resumes_only_when_given_again(tmp_path, monkeypatch):
    cases = make_suite(tmp_path, cases=2)
    out = tmp_path / "out"
    secret = "https://user:sk-SECRET@gateway.example/v1?api_key=sk-OTHER"
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    run(out, cases=cases, base_url=secret)  # a Python agent: the URL is stored, never called
    run_id = only_run_id(out)
    cut_journal(out, run_id, keep_runs=1)
    header = (out / f"{run_id}.jsonl").read_bytes().splitlines()[0]
    assert b"SECRET" not in header and b"OTHER" not in header
    with pytest.raises(ConfigError, match="--base-url"):
        run(out, resume=run_id)  # the stored URL lacks its secret: say how to give it back
    run(out, resume=run_id, explicit={"base_url"}, base_url=secret)
    report = report_of(out, run_id)
    assert report["settings"]["base_url"] == "https://***@gateway.example/v1?api_key=***"
    assert report["summary"]["runs"] == 2


@pytest.mark.parametrize("flag", ["no_judge", "no_cache"])
def test_a_switch_given_to_a_run_that_ran_without_it_says_so(tmp_path, flag):
    cases = make_suite(tmp_path, cases=2)
    out = tmp_path / "out"
    run(out, cases=cases)
    run_id = only_run_id(out)
    shown = "--" + flag.replace("_", "-")
    with pytest.raises(ConfigError) as refused:
        run(out, resume=run_id, explicit={flag}, **{flag: True})
    assert str(refused.value) == (f"{shown} conflicts with run {run_id}, which ran without it; a resumed run keeps "
                                  f"its settings: drop {shown}, or start a new run without --resume.")


def test_resuming_a_run_played_with_a_plugins_setting_without_that_plugin_is_exit_2(tmp_path: Path) -> None:
    from agent_eval.report.files import journal_path_of
    from agent_eval.run.resume import open_resume

    run_id = "20260101-120000-a1b2c3"
    path = journal_path_of(tmp_path, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    # judge_base_url and user are the block's own keys; tone is no loaded row's.
    sources = {"repeat": "default", "judge_base_url": "agent", "user": "default", "tone": "flag"}
    path.write_bytes(orjson.dumps({"run_id": run_id, "created_at": "2026-01-01T12:00:00Z",
                                   "settings": {"sources": sources}, "cases_file": "cases.json"}) + b"\n")
    with pytest.raises(ConfigError) as refused:
        open_resume(flags_of(resume=run_id, output_dir=tmp_path))
    assert str(refused.value).startswith(f"run {run_id} was played with the setting tone of a plugin that is not "
                                         "loaded now;")
