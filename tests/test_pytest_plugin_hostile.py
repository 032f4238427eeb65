"""The pytest plugin as a careless user calls it: `--agent-eval` given a folder is a usage error naming it,
never a collection of everything under that folder."""
from __future__ import annotations

import pytest


def test_a_folder_given_as_a_case_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    cases = pytester.path / "cases"
    cases.mkdir()
    (cases / "test_unrelated.py").write_text("def test_elsewhere():\n    assert 0\n")  # must never be collected
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--agent-eval", "cases")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--agent-eval" in result.stderr.str() and "a folder, not a case file" in result.stderr.str()
    assert "test_elsewhere" not in result.stdout.str()
