"""--junit and --markdown: counts, structure against the common JUnit schema, and the summary's sections."""
from __future__ import annotations

import copy
import xml.etree.ElementTree as ET

import orjson
import pytest

from agent_eval.report.junit import write_junit
from agent_eval.report.markdown import render_markdown, write_markdown
from tests.builders import FIXTURES

FIXTURE = FIXTURES / "sample_report.json"

# The subset of Jenkins' junit-10.xsd (the schema CI reporters share) that a writer can get wrong:
# element -> (required attributes, allowed attributes, allowed children).
SCHEMA = {
    "testsuites": (set(), {"name", "time", "tests", "failures", "disabled", "errors"}, {"testsuite"}),
    "testsuite": ({"name", "tests"},
                  {"name", "tests", "failures", "errors", "time", "disabled", "skipped", "timestamp",
                   "hostname", "id", "package", "file", "log", "url", "version"},
                  {"properties", "testcase", "system-out", "system-err"}),
    "testcase": ({"name"}, {"name", "assertions", "time", "classname", "status", "file", "line"},
                 {"skipped", "error", "failure", "system-out", "system-err"}),
    "properties": (set(), set(), {"property"}),
    "property": ({"name", "value"}, {"name", "value"}, set()),
    "skipped": (set(), {"message"}, set()),
    "error": (set(), {"message", "type"}, set()),
    "failure": (set(), {"message", "type"}, set()),
}
INTEGER_ATTRS = {"tests", "failures", "errors", "skipped", "disabled"}


def check_schema(element: ET.Element) -> None:
    required, allowed, children = SCHEMA[element.tag]
    assert required <= set(element.attrib), (element.tag, element.attrib)
    assert set(element.attrib) <= allowed, (element.tag, set(element.attrib) - allowed)
    for name, value in element.attrib.items():
        if name in INTEGER_ATTRS:
            assert value.isdigit(), (name, value)
        if name == "time":
            assert float(value) >= 0
    # junit-10.xsd allows at most one <skipped> per testcase.
    assert sum(1 for c in element if c.tag == "skipped") <= 1
    for child in element:
        assert child.tag in children, (element.tag, child.tag)
        check_schema(child)


@pytest.fixture
def report() -> dict:
    return orjson.loads(FIXTURE.read_bytes())


def test_junit_counts_and_schema(tmp_path, report) -> None:
    path = tmp_path / "results.xml"
    write_junit(report, path)
    root = ET.parse(path).getroot()
    check_schema(root)
    suite = root.find("testsuite")
    # The fixture's six cases: 2 passed, 2 failed, 1 error, 1 skipped.
    counts = [suite.get(key) for key in ("tests", "failures", "errors", "skipped")]
    assert counts == ["6", "2", "1", "1"]
    assert suite.get("name") == "support-desk"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == [c["id"] for c in report["cases"]]
    assert all(c.get("classname") == "support-desk" for c in cases.values())
    failure = cases["refund_unverified_claim"].find("failure")
    assert failure.get("message").startswith("2/3 runs failed; first: env: orders.ORD_2001.status equals")
    assert "expect.grounded" in failure.text
    assert cases["premium_upgrade"].find("skipped").get("message") == "requires PREMIUM_API_KEY (unset)"
    assert "InternalServerError 500" in cases["shipping_eta"].find("error").get("message")
    assert len(cases["refund_damaged_order"]) == 0
    # time = the sum of the runs' latencies: 2.31 + 2.05 + 2.62 = 6.98
    assert cases["refund_damaged_order"].get("time") == "6.980"


def test_junit_carries_judge_reason_and_escapes(tmp_path, report) -> None:
    report = copy.deepcopy(report)
    case = report["cases"][0]
    case["id"] = 'a<b>&"c"'
    case["status"] = "failed"
    run = case["runs"][0]
    run["status"] = "failed"
    run["judge"] = {"verdict": "FAIL", "reason": "refund amount <wrong> & \x1b[31mred\x1b[0m", "model": "m"}
    path = tmp_path / "results.xml"
    write_junit(report, path)
    root = ET.parse(path).getroot()  # parses although the reason held an escape character
    check_schema(root)
    testcase = root.find("testsuite/testcase")
    assert testcase.get("name") == 'a<b>&"c"'
    failure = testcase.find("failure")
    assert "judge: FAIL: refund amount <wrong> &" in failure.get("message")
    assert root.find("testsuite").get("failures") == "3"


def test_markdown_sections(report) -> None:
    text = render_markdown(report)
    assert text.startswith("## agent-eval: support-desk\n")
    assert "| pass@1 | 0.600 |" in text and "| pass^3 | 0.500 |" in text
    assert "| cost per success | $0.0037 |" in text
    assert "### Failing cases (3)" in text
    # Failure reasons hold agent text: they are code spans, which Markdown never interprets.
    assert ("| `refund_unverified_claim` | failed | 33% | `env: orders.ORD_2001.status equals: "
            "expected 'refunded', got 'shipped'` |") in text
    assert "| `shipping_eta` | error | 100% | `error: provider error after 8 retries" in text
    assert "### Regression gate vs `20250301-101500-a1b2c3`: ❌ **regression**" in text
    assert "| pass_hat_k | 0.750 | 0.500 | -0.250 | [-0.500, -0.020] | **regressed** |" in text
    assert "regressed case injection_in_notes: 3/3 -> 0/3 (Fisher p = 0.05)" in text
    # Every table row has as many cells as its header.
    for block in text.split("\n\n"):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        if rows:
            widths = {line.replace("\\|", "").count("|") for line in rows}
            assert len(widths) == 1, block


def test_markdown_without_gate_or_failures(report) -> None:
    report = copy.deepcopy(report)
    report["gate"] = None
    report["cases"] = [c for c in report["cases"] if c["status"] == "passed"]
    report["cases"][0]["id"] = "pipe|case"
    text = render_markdown(report)
    assert "Regression gate" not in text and "No failing cases." in text


def test_markdown_appends(tmp_path, report) -> None:
    path = tmp_path / "summary.md"
    path.write_text("earlier step\n", encoding="utf-8")
    write_markdown(report, path)
    write_markdown(report, path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n") and text.count("## agent-eval: support-desk") == 2


def test_markdown_holds_a_case_s_whole_reason_as_every_output_does(report) -> None:
    from agent_eval.report.reasons import case_reason

    case = next(c for c in report["cases"] if c["id"] == "refund_unverified_claim")
    run = next(r for r in case["runs"] if r["status"] == "failed")
    # A long first cause (a trajectory listing many calls), then the tool's exception at its end.
    run["checks"] = [{"name": "trajectory", "passed": False, "detail": "expected calls not covered: " + "x" * 300}]
    run["trace"]["steps"].append({"type": "tool_call", "name": "lookup", "args": {}, "error": "KeyError: 'accounts'",
                                  "error_traceback": 'Traceback (most recent call last):\n  File "tools.py", line 12,'
                                                     " in lookup\n    return env['accounts']\nKeyError: 'accounts'"})
    reason = case_reason(case)
    assert len(reason) > 300 and reason.endswith("; tool KeyError: 'accounts' (tools.py:12 in lookup)")
    assert f"| `refund_unverified_claim` | failed | 33% | `{reason}` |" in render_markdown(report)  # never cut


def test_markdown_at_k_1_lists_pass_at_1_once_as_the_terminal_does(report) -> None:
    report["settings"]["repeat"] = 1  # pass^1 and pass@1 are pass@1 again
    text = render_markdown(report)
    assert text.count("| pass@1 |") == 1 and "| pass^1 |" not in text


def test_markdown_opens_with_the_terminals_verdict_line() -> None:
    from agent_eval.report.verdict import verdict_line

    report = orjson.loads(FIXTURE.read_bytes())
    lines = render_markdown(report).splitlines()
    assert lines[0].startswith("## agent-eval:")
    assert lines[2] == f"**{verdict_line(report)}**" == ("**FAIL (exit 1): 2 cases failed; the baseline gate found a "
                                                         "regression; 1 case ended in an infrastructure error**")


def test_junit_agrees_with_the_verdict_when_no_case_explains_the_exit_code(tmp_path) -> None:
    from agent_eval.report.verdict import verdict_line

    report = orjson.loads(FIXTURE.read_bytes())
    for case in report["cases"]:
        case["status"] = "passed" if case["status"] != "skipped" else "skipped"
    report["summary"].update(cases_failed=0, cases_errored=0)
    report.update(exit_code=2, gate={"nothing_to_gate": "the reports share no case id", "regression": False})
    path = tmp_path / "junit.xml"
    write_junit(report, path)
    root = ET.parse(path).getroot()
    check_schema(root)
    suite = root.find("testsuite")
    assert suite.find("properties/property[@name='verdict']").get("value") == verdict_line(report)
    assert suite.get("errors") == "1" and root.get("errors") == "1" and suite.get("failures") == "0"
    (verdict,) = [c for c in suite.findall("testcase") if c.get("name") == "agent-eval verdict"]
    assert verdict.find("error").get("message") == \
        "ERROR (exit 2): the baseline has nothing to gate: the reports share no case id"
    # A run whose failed cases explain exit 1 gets no extra testcase; a case -x left unrun is skipped.
    failed = orjson.loads(FIXTURE.read_bytes())
    failed["cases"][2]["status"] = "not_run"
    write_junit(failed, path)
    cases = ET.parse(path).getroot().find("testsuite").findall("testcase")
    assert len(cases) == len(failed["cases"])
    assert cases[2].find("skipped").get("message").startswith("not run")
