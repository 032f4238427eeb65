"""Hostile values, in process: conversions at the trace boundary, regex limits, inert text, sealed runs.

The CLI half of these attacks (exit codes, reports, no traceback, no leftover process) is
tests/e2e/test_adversarial_cli.py. Add an attack here when it needs no subprocess.
"""
from __future__ import annotations

import asyncio
import io
import time

import orjson
import pytest

from agent_eval.report.console import SafeConsole, escape_control
from agent_eval.report.markdown import inert, render_markdown
from agent_eval.run.agents.python import PythonAgent
from agent_eval.run.episode import Clock, play_run
from agent_eval.run.journal import Journal, scan_runs
from agent_eval.suite.jsonsafe import TOO_DEEP, dumps_safe, to_json_safe
from agent_eval.run.world import EnvTemplate
from agent_eval.score.checks import check_trajectory
from agent_eval.score.env_checks import check_env_item
from agent_eval.score.matchers import matched_fields
from agent_eval.errors import ConfigError
from agent_eval.suite.fields import is_too_deep
from agent_eval.suite.tools import ToolSet


def nested(levels: int) -> object:
    value: object = "leaf"
    for _ in range(levels):
        value = [value]
    return value


class Hostile:
    def __repr__(self) -> str:
        raise SystemExit("a repr that exits")


@pytest.mark.parametrize(("value", "stored"), [
    ({1, 2}, [1, 2]),
    (frozenset({"a"}), ["a"]),
    ((1, "x"), [1, "x"]),
    (b"\xff ok", "\ufffd ok"),
    ("hi \udcff", "hi \ufffd"),
    ({1: "a", None: "b"}, {"1": "a", "None": "b"}),
    (2**70, str(2**70)),
    (-(2**64), str(-(2**64))),
    (float("nan"), None),
    (Hostile(), "<unrepresentable Hostile>"),
])
def test_a_value_json_cannot_hold_is_stored_converted(value, stored):
    converted, data = dumps_safe({"v": value})
    assert orjson.loads(data) == {"v": stored}
    assert orjson.loads(orjson.dumps(converted)) == {"v": stored}


def test_a_value_nested_300_deep_is_cut_at_depth_100_with_a_marker():
    converted = to_json_safe(nested(300))
    depth, node = 0, converted
    while isinstance(node, list):
        depth, node = depth + 1, node[0]
    assert depth == 100 and node == TOO_DEEP
    assert orjson.dumps(converted)


def test_the_fast_path_returns_the_value_itself():
    value = {"a": [1, 2.5, "é", None, True]}
    same, data = dumps_safe(value)
    assert same is value and data == orjson.dumps(value)


def test_is_too_deep_counts_levels_exactly():
    assert not is_too_deep(nested(100)) and is_too_deep(nested(101))
    assert not is_too_deep({"a": 1})


def test_a_journal_line_of_odd_values_is_written_and_read_back(tmp_path):
    journal = Journal(tmp_path / "r.jsonl", {"run_id": "r"})
    position = journal.append("c", 0, {"status": "passed", "error": "bad \udcff", "trace": {"x": {1}}})
    journal.close()
    (_, _, run, found), = scan_runs(tmp_path / "r.jsonl")
    assert found == position and run == {"status": "passed", "error": "bad \ufffd", "trace": {"x": [1]}}


def test_a_second_writer_of_a_journal_is_refused(tmp_path):
    first = Journal(tmp_path / "r.jsonl", {"run_id": "r"}, run_id="r")
    with pytest.raises(ConfigError, match="run r is being written by process"):
        Journal(tmp_path / "r.jsonl", run_id="r")
    first.close()
    Journal(tmp_path / "r.jsonl").close()  # free again once the writer is done


def test_a_journal_that_fails_to_write_refuses_further_runs(tmp_path):
    journal = Journal(tmp_path / "r.jsonl", {"run_id": "r"})
    journal._file.close()
    journal._file = open("/dev/full", "ab")  # every write: No space left on device
    journal.append("c", 0, {"status": "passed", "trace": {"x": "y" * 100_000}})
    assert journal.failed and journal.append("c", 1, {"status": "passed", "trace": {}}) is None


# ------------------------------------------------------------------ regex limits

SLOW = {"$regex": "^(a|a)+$"}


def test_a_backtracking_args_regex_fails_the_trajectory_with_regex_timed_out():
    steps = [{"name": "t", "args": {"q": "a" * 40 + "!"}}]
    check = check_trajectory("strict", [{"name": "t", "args": {"q": SLOW}}], steps)
    assert check["passed"] is False and "regex timed out" in check["detail"]
    assert matched_fields({"q": SLOW}, steps[0]["args"]) == 0  # the metric counts it as a miss


def test_a_backtracking_env_regex_fails_its_check():
    check = check_env_item({"path": ["s"], "equals": SLOW}, {"s": "a" * 40 + "!"})
    assert check["passed"] is False and "regex timed out" in check["detail"]


# ------------------------------------------------------------------ untrusted text is inert

def test_the_cli_console_escapes_control_characters_and_reads_no_markup():
    out = io.StringIO()
    console = SafeConsole(file=out, width=200, color_system=None)
    console.print("\x1b[2J[bold]x[/] \x9b\x07 end\nnext")
    assert out.getvalue() == "\\x1b[2J[bold]x[/] \\x9b end\nnext\n"  # Rich drops the bell itself
    assert escape_control("plain") == "plain"


@pytest.mark.parametrize("text", ["![i](http://e/x.png)", "<img src=x>", "[a](http://e)", "www.e.com",
                                  "# h", "a | b", "``x`", "<!-- c -->"])
def test_untrusted_markdown_text_is_a_code_span(text):
    shown = inert(text)
    assert shown.startswith("`") and shown.endswith("`")
    fence = len(shown) - len(shown.lstrip("`"))
    assert "`" * fence not in shown[fence:-fence]  # the span cannot be closed from inside


def test_a_failure_reason_cannot_add_a_table_cell():
    report = {"suite": "s", "summary": {}, "cases": [{"id": "a|b", "status": "failed", "pass_rate": 0.0, "runs": [
        {"status": "failed", "checks": [{"name": "expect:contains", "passed": False, "detail": "x | y | z"}],
         "trace": {"stop_reason": "completed"}}]}]}
    row = next(line for line in render_markdown(report).splitlines() if line.startswith("| `a"))
    assert row.replace("\\|", "").count("|") == 5


# ------------------------------------------------------------------ sealed runs, timeouts, usage

TOOLS = ToolSet.from_functions({"noop": lambda: "ok"})


def play(fn, case=None, timeout=None):
    case = case or {"id": "c", "query": "hi", "metadata": {"k": [1]}}
    return asyncio.run(play_run(case, 0, PythonAgent("t:agent", fn), TOOLS, EnvTemplate({}), None, timeout))


def test_task_metadata_schemas_and_messages_are_the_runs_own_copies():
    case = {"id": "c", "query": "hi", "metadata": {"k": [1]}}

    def tamper(task):
        task.metadata["k"].append(2)
        task.tool_schemas[0]["function"]["name"] = "hacked"
        task.messages[-1]["content"] = "tampered"
        return "ok"

    played = play(tamper, case)
    assert case["metadata"] == {"k": [1]} and TOOLS.schemas[0]["function"]["name"] == "noop"
    assert played.trace["user_messages"] == ["hi"]


def test_record_usage_rejects_counts_json_cannot_hold_exactly():
    def agent(task):
        try:
            task.record_usage(prompt_tokens=2**53, completion_tokens=0)
        except ValueError:
            pass  # swallowing the error does not save the run
        return "ok"

    trace = play(agent).trace
    assert trace["stop_reason"] == "agent_error" and "2**53 - 1" in trace["agent_error"]


def test_an_async_agent_that_blocks_past_the_deadline_times_out():
    async def blocker(task):
        time.sleep(0.3)
        return "ok"

    assert play(blocker, timeout=0.1).trace["stop_reason"] == "timeout"
    assert asyncio.run(Clock(None).run(asyncio.sleep(0, "fine"))) == "fine"


def test_a_record_without_a_trace_or_a_status_is_a_malformed_journal_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"run_id":"r"}\n{"case_id":"c","trial":0,"run":{"status":"passed"}}\n')
    with pytest.raises(ConfigError, match="line 2"):
        list(scan_runs(path))
