"""Checks that cannot fail are validation errors (exit 2 naming the case and the field), section 12b."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import LOOKUP_TOOLS, write_suite
from tests.e2e.hardening import agent_eval

VACUOUS = [
    ({"expect": {"regex": ""}}, "expect.regex"),
    ({"expect": {"regex": []}}, "expect.regex"),
    ({"expect": {"regex": ["ok", ""]}}, "expect.regex"),
    ({"expect": {"has_card": []}}, "expect.has_card"),
    ({"expect": {"no_card": []}}, "expect.no_card"),
    ({"expect": {"forbidden_tools": []}}, "expect.forbidden_tools"),
    ({"expected_tools": [], "trajectory": "unordered"}, "trajectory"),
    ({"expected_tools": [], "trajectory": "superset"}, "trajectory"),
]


@pytest.mark.parametrize(("fields", "where"), VACUOUS)
def test_a_check_that_cannot_fail_is_exit_2(tmp_path: Path, fields: dict, where: str) -> None:
    cases_file = write_suite(tmp_path, [{"id": "vacuous", "query": "q", **fields}],
                             {"name": "demo", "tools": "tools.py"}, {"tools.py": LOOKUP_TOOLS})
    done = agent_eval(tmp_path, "validate", "--cases", cases_file)
    assert done.code == 2, done.out
    assert "case 'vacuous'" in done.err and f"field {where!r}" in done.err, done.err


def test_a_threshold_of_0_is_exit_2(tmp_path: Path) -> None:
    case = {"id": "a", "query": "q", "expect": {"contains": "ok"}}
    cases_file = write_suite(tmp_path, [case], {"name": "demo", "tools": "tools.py", "agent": "agent.py:agent",
                                                "defaults": {"threshold": 0}},
                             {"tools.py": LOOKUP_TOOLS, "agent.py": "def agent(task):\n    return 'no'\n"})
    assert agent_eval(tmp_path, "validate", "--cases", cases_file).code == 2
    flag_file = write_suite(tmp_path / "flag", [case], {"name": "demo", "tools": "tools.py", "agent": "agent.py:agent"},
                            {"tools.py": LOOKUP_TOOLS, "agent.py": "def agent(task):\n    return 'no'\n"})
    done = agent_eval(tmp_path, "run", "--cases", flag_file, "--threshold", "0")
    assert done.code == 2 and "--threshold" in done.err and done.report == {}
