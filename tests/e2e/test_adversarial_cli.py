"""Hostile agents, tools and case files through the real CLI: nothing lost, nothing silently off.

Every attack runs `agent-eval` and checks, through `hostile()`, the exit code, a readable JSON report where
a run happened, no Python traceback on stderr, and no process left behind. It runs in-process (no child
process of this one may be left when it returns), or with `process=True` as a subprocess in its own
process group (nothing of the group may be left): for an attack on the process itself, such as threads
still sleeping in user code when it should exit, or a limit set on it (`prefix`). To add an attack: write
the agent (and tools) as source text, call `hostile(...)`, and assert what the report holds. The attacks on
the library itself (no CLI) are tests/test_adversarial.py.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_eval.run.journal import Journal
from agent_eval.suite.reaper import descendants
from tests.cli import run_cli
from tests.loopback import router, text, tool_calls

CLI = str(Path(sys.executable).parent / "agent-eval")
HANG_GUARD_S = 120  # a hang fails the test instead of stalling the suite

TOOLS = '''
import time
from agent_eval import tool


@tool
def bump(env: dict, who: str) -> str:
    """Add one to the counter."""
    env["counter"] += 1
    return f"bumped by {who}"


@tool
def slow(env: dict) -> str:
    """Take three seconds."""
    time.sleep(3)
    env["counter"] += 100
    return "slow done"


@tool
def store(env: dict, key: str, value: str) -> str:
    """Store a value that JSON cannot hold, chosen by name."""
    odd = {"huge": 2**70, "set": {1, 2}, "object": object(), "bytes": b"\\xff\\xfe raw",
           "deep": __import__("functools").reduce(lambda acc, _: [acc], range(300), 0)}
    env[key] = odd.get(value, value)
    return "stored"
'''


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str
    out: Path

    @property
    def report(self) -> dict[str, Any]:
        (path,) = self.out.glob("*.json")
        return orjson.loads(path.read_bytes())

    def runs(self, case_id: str) -> list[dict[str, Any]]:
        return next(c["runs"] for c in self.report["cases"] if c["id"] == case_id)


def write_suite(folder: Path, agent_source: str | None, cases: list[dict], tools: str = TOOLS,
                **block: Any) -> Path:
    """A suite in folder: tools.py, agent.py (when given) and cases.json with the block's extra keys."""
    (folder / "tools.py").write_text(tools)
    suite = {"name": "hostile", "tools": "tools.py", "initial_env": {"counter": 0}, **block}
    if agent_source is not None:
        (folder / "agent.py").write_text(agent_source)
        suite.setdefault("agent", "agent.py:agent")
    path = folder / "cases.json"
    path.write_text(json.dumps({"suite": suite, "cases": cases}))  # json: orjson refuses the deepest files
    return path


def hostile(tmp_path: Path, *args: str, command: str = "run", code: int | None = None, report: bool = True,
            env: dict[str, str] | None = None, prefix: list[str] | None = None, process: bool = False) -> Result:
    """Run the CLI (in-process, or in its own process group with `process` or `prefix`) and assert what
    every hostile run must hold."""
    out = tmp_path / "reports"
    argv = [command, *args]
    if command == "run" and "--output-dir" not in args:
        argv += ["--output-dir", str(out)]
    full_env = {**os.environ, "COLUMNS": "1000", **(env or {})}
    if prefix is None and not process:
        before = set(descendants())
        done = run_cli(*argv, cwd=tmp_path, env=full_env, timeout=HANG_GUARD_S)
        result = Result(done.exit_code, done.stdout, done.stderr, out)
        assert set(descendants()) - before == set()  # no process of the command's is left
    else:
        proc = subprocess.Popen([*(prefix or [CLI]), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=tmp_path, env=full_env, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=HANG_GUARD_S)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        result = Result(proc.returncode, stdout, stderr, out)
        with pytest.raises(ProcessLookupError):
            os.killpg(proc.pid, 0)  # nothing of the run's process group is left
    stderr, stdout = result.stderr, result.stdout
    assert "Traceback" not in stderr, stderr
    if code is not None:
        assert result.code == code, (stdout, stderr)
    if report:
        assert isinstance(result.report["cases"], list)
    return result


def case(case_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": case_id, "query": "go", "expect": {"contains": "ok"}, **fields}


# ------------------------------------------------------------------ values JSON cannot hold

ODD_AGENT = '''
def agent(task):
    if task.case_id == "odd":
        task.call_tool("store", key="big", value="huge")
        task.call_tool("store", key="tags", value="set")
        task.call_tool("store", key="thing", value="object")
        task.call_tool("store", key="raw", value="bytes")
        task.call_tool("store", key="deep", value="deep")
        try:
            task.call_tool("bump", who={"a", "set"})  # a set in the args
        except Exception:
            pass
        return {"answer": "ok \\udcff lone surrogate", "cards": [{"type": "x", "obj": object(), 2: "int key"}],
                "final_agent": frozenset({1})}
    task.call_tool("bump", who=task.case_id)
    return "ok"
'''


def test_values_json_cannot_hold_lose_nothing_20_good_and_1_bad_at_k3(tmp_path):
    cases = write_suite(tmp_path, ODD_AGENT, [case(f"good-{n:02d}") for n in range(20)] + [case("odd")])
    result = hostile(tmp_path, "--cases", str(cases), "-k", "3", "--quiet", code=0)
    report = result.report
    assert sum(len(c["runs"]) for c in report["cases"]) == 63  # 21 cases x 3 trials, all in the report
    odd = result.runs("odd")[0]
    assert odd["status"] == "passed"  # scored as usual
    trace = odd["trace"]
    assert trace["final_answer"] == "ok \ufffd lone surrogate"
    assert trace["cards"][0]["obj"].startswith("<object object at") and trace["cards"][0]["2"] == "int key"
    assert trace["final_agent"] == [1]
    diff = {tuple(d["path"]): d.get("new") for d in trace["final_env_diff"]}
    assert diff[("big",)] == str(2**70) and sorted(diff[("tags",)]) == [1, 2]
    assert diff[("thing",)].startswith("<object object at") and diff[("raw",)] == "\ufffd\ufffd raw"
    assert "<nested too deep>" in orjson.dumps(diff[("deep",)]).decode()
    bump = [s for s in trace["steps"] if s["name"] == "bump"][0]
    assert sorted(bump["args"]["who"]) == ["a", "set"]
    # The journal holds the same runs: a --resume of the finished run reads every line.
    again = hostile(tmp_path, "--resume", report["run_id"], "--quiet", code=0)
    assert sum(len(c["runs"]) for c in again.report["cases"]) == 63


USAGE_AGENT = '''
def agent(task):
    if task.case_id == "huge":
        task.record_usage(prompt_tokens=10**30, completion_tokens=1)
    elif task.case_id == "bool":
        task.record_usage(prompt_tokens=True, completion_tokens=1)
    elif task.case_id == "float":
        task.record_usage(prompt_tokens=1.5, completion_tokens=1)
    else:
        task.record_usage(prompt_tokens=2**53 - 1, completion_tokens=0)
    return "ok"
'''


def test_record_usage_outside_0_to_2_pow_53_fails_the_run_as_agent_error(tmp_path):
    cases = write_suite(tmp_path, USAGE_AGENT, [case("huge"), case("bool"), case("float"), case("edge")])
    result = hostile(tmp_path, "--cases", str(cases), "--quiet", code=1)
    for case_id in ("huge", "bool", "float"):
        trace = result.runs(case_id)[0]["trace"]
        assert trace["stop_reason"] == "agent_error" and "record_usage: prompt_tokens" in trace["agent_error"]
    edge = result.runs("edge")[0]
    assert edge["status"] == "passed" and edge["trace"]["llm_calls"][0]["prompt_tokens"] == 2**53 - 1


# ------------------------------------------------------------------ timeouts hold

BLOCKING_ASYNC_AGENT = '''
import time


async def agent(task):
    time.sleep(2)  # blocks the event loop: cannot be cut, must not pass
    return "ok"
'''

SLOW_TOOL_ASYNC_AGENT = '''
async def agent(task):
    await task.acall_tool("slow")
    return "ok"
'''


def test_an_async_agent_that_blocks_past_the_timeout_is_a_timeout_even_though_it_returned(tmp_path):
    cases = write_suite(tmp_path, BLOCKING_ASYNC_AGENT, [case("blocker")])
    result = hostile(tmp_path, "--cases", str(cases), "--timeout", "1", "--quiet", code=1)
    run = result.runs("blocker")[0]
    assert run["status"] == "failed" and run["trace"]["stop_reason"] == "timeout"


def test_a_slow_sync_tool_under_an_async_agent_is_cut_at_the_deadline_and_not_recorded(tmp_path):
    cases = write_suite(tmp_path, SLOW_TOOL_ASYNC_AGENT, [case(f"s{n}") for n in range(4)])
    result = hostile(tmp_path, "--cases", str(cases), "--timeout", "0.5", "--concurrency", "4", "--quiet",
                     code=1, process=True)  # the tools' threads still sleep when the process should exit
    for n in range(4):
        trace = result.runs(f"s{n}")[0]["trace"]
        assert trace["stop_reason"] == "timeout"
        assert trace["steps"] == [] and trace["final_env_diff"] == []  # the tool finished after the deadline


def test_a_slow_sync_tool_under_the_openai_agent_is_cut_at_the_deadline(tmp_path, loopback):
    def script(messages: list[dict]):
        return text("ok") if messages[-1]["role"] == "tool" else tool_calls([("slow", {})])

    srv = loopback(router(script))
    cases = write_suite(tmp_path, None, [case(f"s{n}") for n in range(4)], agent="openai", model="loopback")
    result = hostile(tmp_path, "--cases", str(cases), "--timeout", "0.5", "--concurrency", "4", "--quiet",
                     "--base-url", srv.base_url, env={"OPENAI_API_KEY": "test"}, code=1, process=True)
    for n in range(4):
        trace = result.runs(f"s{n}")[0]["trace"]
        assert trace["stop_reason"] == "timeout" and trace["steps"] == []


# ------------------------------------------------------------------ BaseException from user code

EXITING_AGENT = '''
import asyncio
import sys


def agent(task):
    if task.case_id == "exit":
        sys.exit(3)
    if task.case_id == "interrupt":
        raise KeyboardInterrupt("pretend Ctrl-C")
    if task.case_id == "tool-exit":
        try:
            task.call_tool("quit")
        except Exception as exc:  # the tool's SystemExit is a tool error: the agent sees it and goes on
            return f"ok, the tool said {exc}"
    return "ok"
'''

ASYNC_EXITING_AGENT = '''
import asyncio
import sys


async def agent(task):
    if task.case_id == "cancel":
        raise asyncio.CancelledError("not a real cancellation")
    if task.case_id == "genexit":
        raise GeneratorExit("odd")
    if task.case_id == "exit":
        sys.exit(3)
    return "ok"
'''

QUITTING_TOOLS = TOOLS + '''

@tool
def quit() -> str:
    """Exit the process (it must not)."""
    raise SystemExit(3)
'''


def test_sys_exit_and_keyboard_interrupt_from_a_sync_agent_or_tool_fail_only_their_run(tmp_path):
    cases = write_suite(tmp_path, EXITING_AGENT,
                        [case("exit"), case("interrupt"), case("tool-exit"), case("fine")], tools=QUITTING_TOOLS)
    result = hostile(tmp_path, "--cases", str(cases), "--quiet", code=1)
    assert result.runs("exit")[0]["trace"]["agent_error"] == "SystemExit: 3"
    assert result.runs("interrupt")[0]["trace"]["agent_error"] == "KeyboardInterrupt: pretend Ctrl-C"
    # From a tool, SystemExit is that call's tool error: the agent sees it and the run goes on.
    tool_exit = result.runs("tool-exit")[0]
    assert tool_exit["status"] == "passed" and tool_exit["trace"]["agent_error"] is None
    assert tool_exit["trace"]["steps"][0]["error"] == "SystemExit: 3"
    assert tool_exit["trace"]["final_answer"] == "ok, the tool said SystemExit: 3"
    assert result.runs("fine")[0]["status"] == "passed"
    assert not result.report["interrupted"]


def test_cancelled_error_generator_exit_and_sys_exit_from_an_async_agent_fail_only_their_run(tmp_path):
    cases = write_suite(tmp_path, ASYNC_EXITING_AGENT, [case("cancel"), case("genexit"), case("exit"),
                                                        case("fine")])
    result = hostile(tmp_path, "--cases", str(cases), "--quiet", code=1)
    assert result.runs("cancel")[0]["trace"]["agent_error"] == "CancelledError: not a real cancellation"
    assert result.runs("genexit")[0]["trace"]["agent_error"] == "GeneratorExit: odd"
    assert result.runs("exit")[0]["trace"]["agent_error"] == "SystemExit: 3"
    assert result.runs("fine")[0]["status"] == "passed"


@pytest.mark.parametrize("where", ["tools", "agent"])
def test_sys_exit_at_import_is_exit_2_naming_the_module(tmp_path, where):
    tools = "import sys\nsys.exit(7)\n" if where == "tools" else TOOLS
    agent = "import sys\nsys.exit(7)\n" if where == "agent" else "def agent(task):\n    return 'ok'\n"
    cases = write_suite(tmp_path, agent, [case("c")], tools=tools)
    for command in ("run", "validate"):
        result = hostile(tmp_path, "--cases", str(cases), command=command, code=2, report=False)
        assert f"{where}.py" in result.stderr and "sys.exit(7)" in result.stderr


# ------------------------------------------------------------------ one writer per journal

def test_a_second_resume_of_a_run_being_written_exits_2_naming_the_writer(tmp_path):
    cases = write_suite(tmp_path, "def agent(task):\n    return 'ok'\n", [case("c")])
    run_id = hostile(tmp_path, "--cases", str(cases), "--quiet", code=0).report["run_id"]
    holder = Journal(tmp_path / "reports" / f"{run_id}.jsonl", run_id=run_id)  # this process writes it now
    try:
        result = hostile(tmp_path, "--resume", run_id, "--quiet", code=2, report=False)
    finally:
        holder.close()
    assert f"run {run_id} is being written by process {os.getpid()}" in result.stderr


def test_resume_drops_a_torn_last_line_and_names_any_other_malformed_line(tmp_path):
    cases = write_suite(tmp_path, "def agent(task):\n    return 'ok'\n", [case("a"), case("b")])
    run_id = hostile(tmp_path, "--cases", str(cases), "--quiet", code=0).report["run_id"]
    journal = tmp_path / "reports" / f"{run_id}.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:2]) + lines[2][:40])  # case b's line torn mid-write
    resumed = hostile(tmp_path, "--resume", run_id, "--quiet", code=0)
    assert [len(c["runs"]) for c in resumed.report["cases"]] == [1, 1]  # b ran again
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(lines[0] + b'{"case_id": "a", "garbage"\n' + b"".join(lines[1:]))
    bad = hostile(tmp_path, "--resume", run_id, "--quiet", code=2, report=False)
    assert f"{journal}, line 2" in bad.stderr


LIMITED = ["-c", "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
           "resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv.pop(1)),) * 2); "
           "from agent_eval.cli import main; main()"]


def test_a_journal_that_cannot_be_written_stops_the_run_with_exit_2(tmp_path):
    """A file-size limit makes every write past 20 kB fail, as a full disk would."""
    agent = "def agent(task):\n    return 'ok ' + 'x' * 3000\n"
    cases = write_suite(tmp_path, agent, [case(f"c{n:02d}") for n in range(40)])
    result = hostile(tmp_path, "--cases", str(cases), "--quiet", "--concurrency", "1",
                     prefix=[sys.executable, *LIMITED, "20000"], code=2, report=False)
    (journal,) = (tmp_path / "reports").glob("*.jsonl")
    assert f"cannot write the journal {journal}" in result.stderr and "--resume" in result.stderr
    assert not list((tmp_path / "reports").glob("*.json"))
    assert journal.stat().st_size <= 20000


def test_a_json_report_that_cannot_be_written_is_exit_2_naming_the_journal(tmp_path):
    cases = write_suite(tmp_path, "def agent(task):\n    return 'ok'\n", [case(f"c{n}") for n in range(10)])
    first = hostile(tmp_path, "--cases", str(cases), "--quiet", "--no-html", code=0)
    (journal,) = first.out.glob("*.jsonl")
    (report,) = first.out.glob("*.json")
    limit = (journal.stat().st_size + report.stat().st_size) // 2  # the journal fits, the report does not
    second = tmp_path / "second"
    second.mkdir()
    result = hostile(second, "--cases", str(cases), "--quiet", "--no-html",
                     prefix=[sys.executable, *LIMITED, str(limit)], code=2, report=False)
    (journal,) = (second / "reports").glob("*.jsonl")
    assert "cannot write the JSON report" in result.stderr and str(journal) in result.stderr
    assert not list((second / "reports").glob("*.json")) and not list((second / "reports").glob("*.tmp"))


# ------------------------------------------------------------------ extra outputs never change the verdict

def test_failing_extra_outputs_warn_once_each_and_keep_the_verdict(tmp_path):
    cases = write_suite(tmp_path, "def agent(task):\n    return 'ok'\n", [case("c")])
    out = tmp_path / "reports"
    out.mkdir()
    (out / "history.sqlite").write_bytes(b"this is not a database" * 100)
    (tmp_path / "summary.md").mkdir()  # a folder where the Markdown file should go
    (tmp_path / "a-file").write_text("")  # a missing folder is created, but not one under a file
    result = hostile(tmp_path, "--cases", str(cases), "--quiet", "--junit", str(tmp_path / "a-file" / "j.xml"),
                     "--markdown", str(tmp_path / "summary.md"), code=0)
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 3, result.stderr
    assert any("JUnit" in w and "j.xml" in w for w in warnings)
    assert any("Markdown" in w and "summary.md" in w for w in warnings)
    (aside,) = out.glob("history.sqlite.corrupt-*")
    assert aside.read_bytes().startswith(b"this is not a database")
    assert (out / "history.sqlite").stat().st_size > 0  # a new history was started and holds this run


def test_an_html_page_that_cannot_be_written_is_a_warning_and_leaves_no_partial_file(tmp_path):
    cases = write_suite(tmp_path, "def agent(task):\n    return 'ok'\n", [case("c")])
    result = hostile(tmp_path, "--cases", str(cases), "--quiet", prefix=[sys.executable, *LIMITED, "28000"],
                     code=0)
    assert "could not write the HTML file" in result.stderr
    assert not list(result.out.glob("*.html")) and not list(result.out.glob(".*.tmp"))


# ------------------------------------------------------------------ regex limits

def test_a_catastrophic_regex_fails_its_check_with_regex_timed_out(tmp_path):
    agent = "def agent(task):\n    return 'a' * 40 + '!'\n"
    cases = write_suite(tmp_path, agent, [{"id": "re", "query": "go", "expect": {"regex": "^(a|a)+$"}},
                                          {"id": "re2", "query": "go", "expect": {"regex": "^(a|aa)+$"}}])
    result = hostile(tmp_path, "--cases", str(cases), "--quiet", code=1)
    for case_id in ("re", "re2"):
        check = result.runs(case_id)[0]["checks"][0]
        assert check["passed"] is False and "regex timed out" in check["detail"]


# ------------------------------------------------------------------ untrusted text is inert

ANSI_AGENT = '''
def agent(task):
    raise RuntimeError("\\x1b[2J\\x1b[H\\x1b[32mPASS\\x1b[0m all good")
'''


def test_ansi_escapes_from_an_agent_are_shown_escaped_never_sent_to_the_terminal(tmp_path):
    cases = write_suite(tmp_path, ANSI_AGENT, [case("evil"), case("b")])
    result = hostile(tmp_path, "--cases", str(cases), code=1)
    shown = result.stdout + result.stderr
    assert "\x1b" not in shown and "\\x1b[2J" in shown


def test_markup_in_paths_and_flag_values_is_text(tmp_path):
    cases = write_suite(tmp_path, "def agent(task):\n    return 'ok [/] [bold]x'\n", [case("c[/]")])
    out = tmp_path / "out[/]dir[bold]"
    result = hostile(tmp_path, "--cases", str(cases), "--output-dir", str(out), code=0, report=False)
    assert str(out) in result.stdout
    assert list(out.glob("*.json"))
    history = hostile(tmp_path, "--cases", str(cases), "--output-dir", str(out), "--metric", "[/]",
                      command="history", code=2, report=False)
    assert "[/]" in history.stdout + history.stderr


MARKDOWN_AGENT = '''
def agent(task):
    return ("![x](http://evil.test/i.png) <img src=x onerror=alert(1)> [click](http://evil.test) "
            "www.evil.test | fake | cell\\n# Heading\\n`code` ``")
'''


def test_agent_text_in_the_markdown_summary_makes_no_link_image_html_heading_or_cell(tmp_path):
    cases = write_suite(tmp_path, MARKDOWN_AGENT, [case("<b>id`x</b>|y")])
    summary = tmp_path / "summary.md"
    hostile(tmp_path, "--cases", str(cases), "--quiet", "--markdown", str(summary), code=1)
    markdown = summary.read_text()
    outside_code = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", markdown)  # what Markdown would interpret
    for danger in ("<img", "<b>", "![", "](", "www.evil", "\n# Heading"):
        assert danger not in outside_code, (danger, markdown)
    row = next(line for line in markdown.splitlines() if "evil" in line)
    assert row.replace("\\|", "").count("|") == 5  # four cells, as the header


# ------------------------------------------------------------------ each run is sealed

SEALED_AGENT = '''
def agent(task):
    assert task.metadata == {"n": 1, "nested": {"k": [1]}}, task.metadata
    assert [s["function"]["name"] for s in task.tool_schemas] == ["bump", "slow", "store"], task.tool_schemas
    assert [m["content"] for m in task.messages] == ["go"], task.messages
    task.metadata["n"] = 99
    task.metadata["nested"]["k"].append(2)
    task.tool_schemas[0]["function"]["name"] = "hacked"
    task.tool_schemas.clear()
    task.messages[0]["content"] = "tampered"
    return "ok"
'''


def test_what_a_run_does_to_metadata_schemas_and_messages_is_seen_by_no_other_run(tmp_path):
    cases = write_suite(tmp_path, SEALED_AGENT, [case(f"c{n}", metadata={"n": 1, "nested": {"k": [1]}})
                                                 for n in range(3)])
    result = hostile(tmp_path, "--cases", str(cases), "-k", "3", "--concurrency", "1", "--quiet", code=0)
    assert all(r["status"] == "passed" for c in result.report["cases"] for r in c["runs"])
    assert all(r["trace"]["user_messages"] == ["go"] for c in result.report["cases"] for r in c["runs"])


# ------------------------------------------------------------------ the case file: a typo never switches a check off

@pytest.mark.parametrize(("block", "cases", "field", "hint"), [
    ({"polcy": []}, [case("c")], "suite.polcy", "policy"),
    ({"sensitve_tools": ["bump"]}, [case("c")], "suite.sensitve_tools", "sensitive_tools"),
    ({"system_promt": "x"}, [case("c")], "suite.system_promt", "system_prompt"),
    ({}, [case("c", expected_env_chek={"path": ["counter"], "equals": 1})], "expected_env_chek",
     "expected_env_check"),
    ({}, [case("c", rubrik="be nice")], "rubrik", "rubric"),
    ({}, [case("c", trajectroy="strict", expected_tools=[])], "trajectroy", "trajectory"),
    ({}, [case("c", expect={"contians": "ok"})], "expect.contians", "contains"),
    ({}, [case("c", expected_tools=[{"name": "bump", "argz": {}}], trajectory="strict")],
     "expected_tools[0].argz", "args"),
    ({}, [case("c", faults=[{"tool": "bump", "fail_time": 1}])], "faults[0].fail_time", "fail_times"),
    ({"policy": [{"forbid_tools": "bump"}]}, [case("c")], "suite.policy[0].forbid_tools", "forbid_tool"),
    ({}, [case("c", expected_tools=[{"name": "bump", "args": {"whoo": "x"}}], trajectory="strict")],
     "expected_tools[0].args.whoo", "who"),
    ({}, [case("c", expect={"forbidden_tools": ["bumpp"]})], "expect.forbidden_tools[0]", "bump"),
])
def test_a_misspelled_key_is_an_error_with_did_you_mean(tmp_path, block, cases, field, hint):
    path = write_suite(tmp_path, "def agent(task):\n    return 'ok'\n", cases, **block)
    for command in ("validate", "run"):
        result = hostile(tmp_path, "--cases", str(path), command=command, code=2, report=False)
        assert f"field {field!r}" in result.stderr and f"did you mean `{hint}`?" in result.stderr


def deep(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = {"k": value}
    return value


@pytest.mark.parametrize(("cases", "block", "needle"), [
    ([case("c", expect={"contains": []})], {}, "can never fail"),
    ([case("c", initial_env=deep(254))], {}, "nested deeper than 100"),
    ([case("c")], {"initial_env": deep(120)}, "nested deeper than 100"),
    ([case("c", expected_tools=[{"name": "bump", "args": {"who": deep(150)}}], trajectory="strict")], {},
     "nested deeper than 100"),
    ([case("line\nbreak")], {}, "control character"),
    ([case("esc\x1b[2Jid")], {}, "control character"),
    ([case("c")], {"defaults": {"repeat": "abc"}}, "suite.defaults.repeat"),
    ([case("c")], {"defaults": {"repeat": 2**31}}, "suite.defaults.repeat"),
    ([case("c")], {"defaults": {"threshold": "high"}}, "suite.defaults.threshold"),
    ([case("c")], {"agent": "agent.py:nothing"}, "no attribute 'nothing'"),
])
def test_validate_rejects_what_run_would_reject_or_crash_on(tmp_path, cases, block, needle):
    path = write_suite(tmp_path, "def agent(task):\n    return 'ok'\n", cases, **block)
    for command in ("validate", "run"):
        result = hostile(tmp_path, "--cases", str(path), command=command, code=2, report=False)
        assert needle in result.stderr, result.stderr
        assert "\x1b" not in result.stderr


def test_fields_of_other_tools_and_of_scorers_are_kept_and_the_rest_warned_about_once(tmp_path):
    (tmp_path / "scorers.py").write_text("def length(output, expected_output, my_column):\n"
                                         "    return {'value': len(output)}\n")
    cases = [case(f"c{n}", expected_output="x", context=["y"], my_column=1, notes="free text") for n in range(3)]
    path = write_suite(tmp_path, "def agent(task):\n    return 'ok'\n", cases, scorers=["scorers.py:length"])
    validated = hostile(tmp_path, "--cases", str(path), command="validate", code=0, report=False)
    assert validated.stderr.count("warning:") == 1 and "'notes' (in 3 cases" in validated.stderr
    assert "expected_output" not in validated.stderr and "my_column" not in validated.stderr
    hostile(tmp_path, "--cases", str(path), "--quiet", code=0)


@pytest.mark.parametrize("flags", [["--timeout", "nan"], ["--timeout", "inf"], ["-k", "1e20"],
                                   ["-k", str(2**31)], ["--concurrency", str(2**31)], ["--max-steps", "99999999999"],
                                   ["--threshold", "nan"]])
def test_odd_flag_values_are_exit_2(tmp_path, flags):
    cases = write_suite(tmp_path, "def agent(task):\n    return 'ok'\n", [case("c")])
    hostile(tmp_path, "--cases", str(cases), *flags, code=2, report=False)
