"""The pytest plugin: case files as pytest items, inline cases through the `agent_eval` fixture.

Each test runs pytest inside pytest (the `pytester` fixture, in-process where it can) on a copy of the
demo suite or a small suite of its own; the reports the plugin writes are compared with `run`'s.
"""
from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import orjson
import pytest

import agent_eval
from tests.builders import ROOT, write_suite
from tests.cli import run_cli
from tests.loopback import status

AGENT = '''
def agent(task):
    return "the answer is 42" if "answer" in task.input else "no idea"
'''
SMALL = [{"id": "knows", "query": "the answer?", "expect": {"contains": "42"}, "tags": ["maths"]},
         {"id": "guesses", "query": "a riddle", "expect": {"contains": "42"}, "tags": ["riddle"]},
         {"id": "needs-token", "query": "the answer?", "expect": {"contains": "42"}, "requires": ["NO_SUCH_TOKEN_X"]}]
# A pytest subprocess loads this plugin alone (with PYTEST_DISABLE_PLUGIN_AUTOLOAD): the venv's other plugins
# (langsmith's takes seconds to import) are not under test. The entry point itself is tested below.
ONLY_THIS_PLUGIN = ("-p", "agent_eval.pytest_plugin")
NOT_FIGURES = ("latency", "ttfa")  # what may differ between two plays of the same suite


def small_suite(pytester: pytest.Pytester) -> Path:
    return write_suite(pytester.path / "suite", SMALL, {"agent": "agent.py:agent"}, {"agent.py": AGENT})


def demo(pytester: pytest.Pytester) -> Path:
    shutil.copytree(ROOT / "cases", pytester.path / "cases")
    return pytester.path / "cases" / "test_cases.json"


def only_report(folder: Path) -> dict[str, Any]:
    reports = sorted(folder.glob("*.json"))
    assert len(reports) == 1, reports
    report: dict[str, Any] = orjson.loads(reports[0].read_bytes())
    return report


def figures(report: dict[str, Any]) -> tuple[list[tuple[str, str, Any]], dict[str, Any]]:
    """Case by case statuses and pass rates, and the summary without latencies (or their intervals)."""
    def keep(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: keep(v) for k, v in value.items() if not any(word in k for word in NOT_FIGURES)}
        return value

    summary = keep(report["summary"])
    summary.pop("provider", None)
    return [(c["id"], c["status"], c["pass_rate"]) for c in report["cases"]], summary


def outcomes_of(report: dict[str, Any]) -> dict[str, int]:
    """The pytest outcomes a report's cases give: one test per case."""
    return {status: sum(c["status"] == status for c in report["cases"]) for status in ("passed", "failed", "skipped")}


def test_the_plugin_is_registered_as_agent_eval() -> None:
    found = [ep for ep in entry_points(group="pytest11") if ep.name == "agent_eval"]
    assert [ep.value for ep in found] == ["agent_eval.pytest_plugin"]


def test_inert_until_asked(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session that does not ask imports nothing of agent-eval's but the plugin module, and writes nothing."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest('''
import sys
def pytest_sessionfinish(session):
    loaded = sorted(m for m in sys.modules if m.startswith("agent_eval"))
    open("loaded.txt", "w").write(" ".join(loaded))
''')
    pytester.makepyfile("def test_one():\n    assert 1\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *ONLY_THIS_PLUGIN)
    result.assert_outcomes(passed=1)
    loaded = (pytester.path / "loaded.txt").read_text()
    assert loaded == "agent_eval agent_eval.pytest_plugin agent_eval.pytest_plugin.items"
    assert " agent-eval =" not in result.stdout.str()  # no summary section
    assert not (pytester.path / "reports").exists()


def test_the_demo_suite_gives_run_s_statuses_and_figures(pytester: pytest.Pytester) -> None:
    cases = demo(pytester)
    result = pytester.runpytest("-p", "no:cacheprovider", "--agent-eval", str(cases), "--agent-eval-no-judge",
                                "--agent-eval-output-dir", "out", "-rA")
    report = only_report(pytester.path / "out")
    expected = agent_eval.run_suite(cases, no_judge=True, output_dir=pytester.path / "cli")
    assert figures(report) == figures(expected)
    result.assert_outcomes(**outcomes_of(expected))
    assert report["exit_code"] == expected["exit_code"] == 1
    # the JSON report, journal, page and history row, so compare, --baseline, history and view work on it
    run_id = report["run_id"]
    assert {p.name for p in (pytester.path / "out").iterdir()} >= {
        f"{run_id}.json", f"{run_id}.jsonl", f"{run_id}.html", "history.sqlite"}
    assert report["cases"][0]["runs"][0]["trace"]["steps"]  # traces included, as run writes them
    compared = run_cli("compare", pytester.path / "cli" / f"{expected['run_id']}.json",
                       pytester.path / "out" / f"{run_id}.json")
    assert compared.exit_code == 0, compared.stdout + compared.stderr  # the same figures: no regression
    history = run_cli("history", "--cases", cases, "--output-dir", pytester.path / "out")
    assert history.exit_code == 0 and run_id in history.stdout
    out = result.stdout.str()
    assert "pass@1" in out and f"FAIL (exit 1): {report['summary']['cases_failed']} cases failed" in out
    assert f"out/{run_id}.json" in out


def test_failed_case_message_is_its_reason_and_failed_checks(pytester: pytest.Pytester) -> None:
    suite = small_suite(pytester)
    result = pytester.runpytest("-p", "no:cacheprovider", "--agent-eval", str(suite), "--agent-eval-repeat", "2",
                                "--agent-eval-output-dir", "out")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    out = result.stdout.str()
    assert "suite/cases.json::guesses" in out
    assert "case 'guesses' failed (pass rate 0.00 < threshold 1): expect:contains: reply lacks [\"42\"]" in out
    assert "run 2: expect:contains" in out
    assert "requires NO_SUCH_TOKEN_X (unset)" in pytester.runpytest(
        "-p", "no:cacheprovider", "--agent-eval", str(suite), "-rs", "--agent-eval-output-dir", "out2").stdout.str()
    report = only_report(pytester.path / "out")
    assert report["settings"]["repeat"] == 2 and report["settings"]["sources"]["repeat"] == "flag"


def test_tags_are_registered_markers_and_deselected_cases_do_not_run(pytester: pytest.Pytester) -> None:
    suite = small_suite(pytester)
    result = pytester.runpytest("-p", "no:cacheprovider", "--strict-markers", "--agent-eval", str(suite),
                                "-m", "riddle or maths", "-k", "not knows", "--agent-eval-output-dir", "out")
    result.assert_outcomes(failed=1, deselected=2)
    assert [c["id"] for c in only_report(pytester.path / "out")["cases"]] == ["guesses"]


def test_settings_from_the_ini_file(pytester: pytest.Pytester) -> None:
    small_suite(pytester)
    pytester.makeini("[pytest]\nagent_eval_cases = suite/cases.json\nagent_eval_repeat = 3\n"
                     "agent_eval_output_dir = from-ini\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--junitxml", "junit.xml")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    report = only_report(pytester.path / "from-ini")
    assert report["settings"]["repeat"] == 3 and len(report["cases"][0]["runs"]) == 3
    cases = {c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").iter("testcase")}
    assert set(cases) == {"knows", "guesses", "needs-token"}
    failure = cases["guesses"].find("failure")
    assert failure is not None and "expect:contains" in (failure.get("message") or "")


def test_exitfirst_stops_taking_runs_and_last_failed_reruns_the_failures(pytester: pytest.Pytester) -> None:
    suite = small_suite(pytester)
    args = ["--agent-eval", str(suite), "--agent-eval-concurrency", "1", "--agent-eval-output-dir"]
    first = pytester.runpytest("-x", *args, "out-x")
    first.assert_outcomes(passed=1, failed=1)  # pytest stops after the failure; -x stopped the run too
    report = only_report(pytester.path / "out-x")
    assert report["stopped_early"] is True
    assert [c["status"] for c in report["cases"]] == ["passed", "failed", "skipped"]
    again = pytester.runpytest("--lf", *args, "out-lf")
    again.assert_outcomes(failed=1)  # the others are not collected again
    assert [c["id"] for c in only_report(pytester.path / "out-lf")["cases"]] == ["guesses"]


def test_an_infrastructure_error_is_a_pytest_error(pytester: pytest.Pytester, loopback: Any) -> None:
    srv = loopback(lambda body, index: status(400))  # not retried: the run is an error, not the agent's fault
    suite = write_suite(pytester.path / "llm", [{"id": "asks", "query": "hi", "expect": {"contains": "x"}}])
    result = pytester.runpytest("-p", "no:cacheprovider", "--agent-eval", str(suite), "--agent-eval-agent",
                                "openai", "--agent-eval-base-url", srv.base_url, "--agent-eval-model", "m",
                                "--agent-eval-output-dir", "out")
    result.assert_outcomes(errors=1)
    assert "ERROR at setup of agent-eval case asks" in result.stdout.str() and "400" in result.stdout.str()
    assert only_report(pytester.path / "out")["cases"][0]["status"] == "error"


def test_a_typo_in_the_case_file_is_a_collection_error(pytester: pytest.Pytester) -> None:
    bad = write_suite(pytester.path / "bad", [{"id": "typo", "query": "q", "expext": {"contains": "a"}}],
                      {"agent": "agent.py:agent"}, {"agent.py": AGENT})
    result = pytester.runpytest("-p", "no:cacheprovider", "--agent-eval", str(bad))
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "ERROR collecting bad/cases.json" in out
    assert "cases.json, case 'typo', field 'expext'" in out and "expect" in out
    assert "Traceback" not in out


INLINE_TEST = '''
def test_inline(agent_eval):
    result = agent_eval({"id": "inline", "query": "QUERY", "expect": {"contains": "42"}}, repeat=2)
    assert len(result.runs) == 2 and result.runs[0]["trace"]["final_answer"]
    result.assert_passed()
'''


def test_an_inline_case_fails_with_its_reason_and_passes_when_fixed(pytester: pytest.Pytester) -> None:
    small_suite(pytester)
    pytester.makeini("[pytest]\nagent_eval_cases = suite/cases.json\n")
    pytester.makepyfile(test_inline=INLINE_TEST.replace("QUERY", "a riddle"))
    failing = pytester.runpytest("-p", "no:cacheprovider", "test_inline.py", "--agent-eval-output-dir", "out1")
    failing.assert_outcomes(failed=1)
    out = failing.stdout.str()
    assert "AssertionError: case 'inline' failed (pass rate 0.00 < threshold 1): expect:contains" in out
    report = only_report(pytester.path / "out1")  # the session's report holds what the test ran
    assert [(c["id"], len(c["runs"])) for c in report["cases"]] == [("inline", 2)]

    pytester.makepyfile(test_inline=INLINE_TEST.replace("QUERY", "the answer?"))
    pytester.runpytest("-p", "no:cacheprovider", "test_inline.py",
                       "--agent-eval-output-dir", "out2").assert_outcomes(passed=1)


def test_an_inline_case_s_result_and_unknown_fields(pytester: pytest.Pytester) -> None:
    small_suite(pytester)
    pytester.makeconftest('''
import pytest

@pytest.fixture
def agent_eval_suite():
    return "suite/cases.json"
''')
    pytester.makepyfile(test_result='''
import pytest
from agent_eval.errors import CaseFileError

def test_result(agent_eval):
    result = agent_eval({"id": "r", "query": "a riddle", "expect": {"contains": "42"}})
    assert (result.status, result.passed, result.pass_rate) == ("failed", False, 0.0)
    assert result.reason.startswith("expect:contains")
    assert result.failed_checks == [result.reason]
    assert result.metrics["pass_at_1"] == 0.0 and result.metrics["cases_failed"] == 1

def test_unknown_field(agent_eval):
    with pytest.raises(CaseFileError, match="case 'u', field 'expected_toolz'"):
        agent_eval({"id": "u", "query": "q", "expected_toolz": []})
''')
    pytester.runpytest("-p", "no:cacheprovider", "--agent-eval-output-dir", "out").assert_outcomes(passed=2)


@pytest.mark.slow  # two worker processes
def test_under_xdist_each_worker_plays_its_cases_and_the_report_is_one(pytester: pytest.Pytester,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cases = demo(pytester)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "xdist.plugin", *ONLY_THIS_PLUGIN,
                                           "-n", "2", "--agent-eval",
                                           str(cases), "--agent-eval-no-judge", "--agent-eval-output-dir", "out")
    report = only_report(pytester.path / "out")
    expected = agent_eval.run_suite(cases, no_judge=True, output_dir=pytester.path / "cli")
    assert figures(report) == figures(expected)
    result.assert_outcomes(**outcomes_of(expected))
    assert not list((pytester.path / "out").glob("*.gw*"))  # the workers' journals are merged into one
    journal = (pytester.path / "out" / f"{report['run_id']}.jsonl").read_bytes().splitlines()
    assert len(journal) == 1 + report["summary"]["runs"] + report["summary"]["runs_errored"]  # header + runs


def test_a_missing_model_is_each_case_s_error(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AGENT_EVAL_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    suite = write_suite(pytester.path / "llm", [{"id": "a", "query": "hi", "expect": {"contains": "x"}},
                                                {"id": "b", "query": "hi", "expect": {"contains": "y"}}])
    result = pytester.runpytest("-p", "no:cacheprovider", "--agent-eval", str(suite), "--agent-eval-agent", "openai",
                                "--agent-eval-output-dir", "out")
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert "Traceback" not in out and "AGENT_EVAL_MODEL" in out and "--agent-eval-model" in out


def test_inline_ids_are_unique_in_the_session_report(pytester: pytest.Pytester) -> None:
    small_suite(pytester)
    pytester.makeini("[pytest]\nagent_eval_cases = suite/cases.json\n")
    pytester.makepyfile(test_many='''
import pytest

@pytest.mark.parametrize("query", ["the answer?", "the answer, please?"])
def test_many(agent_eval, query):
    agent_eval({"id": "same", "query": query, "expect": {"contains": "42"}}).assert_passed()
''')
    pytester.runpytest("-p", "no:cacheprovider", "test_many.py", "--agent-eval-output-dir", "out").assert_outcomes(
        passed=2)
    assert [c["id"] for c in only_report(pytester.path / "out")["cases"]] == ["same", "same (2)"]


def test_a_tag_no_marker_can_name_is_still_found_by_k(pytester: pytest.Pytester) -> None:
    odd = [{"id": "odd", "query": "the answer?", "expect": {"contains": "42"}, "tags": ["a:b", "with space"]},
           {"id": "plain", "query": "the answer?", "expect": {"contains": "42"}, "tags": ["multi-turn"]}]
    suite = write_suite(pytester.path / "odd", odd, {"agent": "agent.py:agent"}, {"agent.py": AGENT})
    args = ["-p", "no:cacheprovider", "--strict-markers", "--agent-eval", str(suite), "--agent-eval-output-dir"]
    pytester.runpytest(*args, "o1", "-m", "multi-turn").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest(*args, "o2", "-k", "space").assert_outcomes(passed=1, deselected=1)


def test_an_agent_s_reply_cannot_restyle_the_terminal(pytester: pytest.Pytester) -> None:
    hostile = 'def agent(task):\n    raise RuntimeError("\\x1b[2J\\x1b[31mgone")\n'
    suite = write_suite(pytester.path / "h", [{"id": "h", "query": "q", "expect": {"contains": "42"}}],
                        {"agent": "agent.py:agent"}, {"agent.py": hostile})
    result = pytester.runpytest("-p", "no:cacheprovider", "--agent-eval", str(suite), "--agent-eval-output-dir", "out")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "\\x1b[2J\\x1b[31mgone" in out and "\x1b" not in out  # shown escaped


def test_agent_eval_alone_collects_the_case_files_alone(pytester: pytest.Pytester) -> None:
    suite = small_suite(pytester)
    pytester.makepyfile(test_unit="def test_unit():\n    assert True\n")
    args = ["-p", "no:cacheprovider", "--agent-eval", str(suite), "--agent-eval-output-dir", "out"]
    pytester.runpytest(*args).assert_outcomes(passed=1, failed=1, skipped=1)
    pytester.runpytest("test_unit.py", *args).assert_outcomes(passed=2, failed=1, skipped=1)
