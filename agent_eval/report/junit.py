"""`--junit FILE`: one JUnit XML <testcase> per case, for CI test reporters (GitHub Actions, Jenkins).

The layout follows the common JUnit schema (Jenkins' junit-10.xsd): testsuites > testsuite (name,
tests, failures, errors, skipped, time) > testcase (classname, name, time) > failure | error | skipped.
The testsuite's `verdict` property is the terminal's verdict line; when the exit code is not explained by
a case (a regression, nothing to gate), one more testcase, `agent-eval verdict`, fails or errors with it.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from agent_eval.errors import EXIT_ERROR, EXIT_FAILED
from agent_eval.records import CaseEntry, Report
from agent_eval.report.files import atomic_file
from agent_eval.report.fmt import trim
from agent_eval.report.reasons import case_reason, failure_lines
from agent_eval.report.verdict import verdict_line

MESSAGE_MAX_CHARS = 500
# XML 1.0 cannot carry most control characters (an ANSI colour code in a provider error, say), even
# escaped, and ElementTree would write them as they are; they are replaced so the file always parses.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: object) -> str:
    """`text` as a string that XML 1.0 can hold."""
    return _NOT_XML.sub("\ufffd", str(text))


def _seconds(case: CaseEntry) -> float:
    """The case's time: the sum of its runs' latencies (0 when none were measured)."""
    return sum((run.get("metrics") or {}).get("latency_s") or 0.0 for run in case.get("runs") or [])


def _short(text: str) -> str:
    return trim(xml_text(text), MESSAGE_MAX_CHARS)


def _case_element(case: CaseEntry, suite: str) -> tuple[ET.Element, str]:
    """The <testcase> of one case and its outcome: passed, failed, skipped or error."""
    element = ET.Element("testcase", classname=suite, name=xml_text(case.get("id")),
                         time=f"{_seconds(case):.3f}")
    status = case.get("status")
    runs = case.get("runs") or []
    if status == "not_run":  # -x or --max-cost stopped the run before any of its runs finished
        ET.SubElement(element, "skipped", message="not run: the run stopped before this case")
        return element, "skipped"
    if status == "skipped":
        ET.SubElement(element, "skipped", message=_short(case.get("skip_reason") or "skipped"))
        return element, "skipped"
    if status == "failed":
        failed = [r for r in runs if r.get("status") == "failed"]
        counted = [r for r in runs if r.get("status") != "error"]
        message = f"{len(failed)}/{len(counted)} runs failed; first: {case_reason(case)}"
        body = "\n".join(f"run {r.get('trial')}:\n  " + "\n  ".join(failure_lines(r)) for r in failed)
        node = ET.SubElement(element, "failure", message=_short(message), type="failed")
        node.text = xml_text(body)
        return element, "failed"
    if status == "error":
        errored = [r for r in runs if r.get("status") == "error"]
        node = ET.SubElement(element, "error", message=_short(case_reason(case)), type="error")
        node.text = xml_text("\n".join(f"run {r.get('trial')}: {r.get('error')}" for r in errored))
        return element, "error"
    return element, "passed"


def _verdict_element(report: Report, suite: str, outcomes: dict[str, int]) -> ET.Element | None:
    """A <testcase name="agent-eval verdict"> when the exit code is not explained by a case's own element
    (a regression with every case passed, a baseline with nothing to gate, every case skipped, a stop at
    the budget): a failure for exit 1, an error for exit 2, carrying the verdict line, so that a CI reporter
    never shows green for a run that exited non-zero. None otherwise; `outcomes` gains its count."""
    code = report.get("exit_code")
    kind = "failure" if code == EXIT_FAILED and not outcomes["failed"] else \
        "error" if code == EXIT_ERROR and not outcomes["error"] else None
    if kind is None:
        return None
    outcomes["failed" if kind == "failure" else "error"] += 1
    element = ET.Element("testcase", classname=suite, name="agent-eval verdict", time="0.000")
    ET.SubElement(element, kind, message=_short(verdict_line(report)), type="verdict")
    return element


def build_junit(report: Report) -> ET.ElementTree:
    """The JUnit tree of a report: one testsuite named after the suite, one testcase per case."""
    suite = xml_text(report.get("suite") or "agent-eval")
    outcomes = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
    cases = []
    for case in report.get("cases") or []:
        element, outcome = _case_element(case, suite)
        outcomes[outcome] += 1
        cases.append(element)
    extra = _verdict_element(report, suite, outcomes)
    if extra is not None:
        cases.append(extra)
    seconds = sum(_seconds(c) for c in report.get("cases") or [])
    counts = {"tests": str(len(cases)), "failures": str(outcomes["failed"]), "errors": str(outcomes["error"])}
    root = ET.Element("testsuites", {"name": "agent-eval", "time": f"{seconds:.3f}", **counts})
    attrs = {"name": suite, **counts, "skipped": str(outcomes["skipped"]), "time": f"{seconds:.3f}"}
    if report.get("created_at"):
        attrs["timestamp"] = str(report["created_at"])
    testsuite = ET.SubElement(root, "testsuite", attrs)
    properties = ET.SubElement(testsuite, "properties")
    ET.SubElement(properties, "property", name="verdict", value=xml_text(verdict_line(report)))
    testsuite.extend(cases)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(report: Report, path: str | Path) -> None:
    """Write the report's cases as JUnit XML to `path` (UTF-8, with an XML declaration)."""
    with atomic_file(Path(path)) as f:
        build_junit(report).write(f, encoding="utf-8", xml_declaration=True)
