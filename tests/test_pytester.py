"""tests/conftest.py's `pytester`: a pytest run inside a test leaves one copy of each installed module in the
process, so that a later test in the same process sees the modules an earlier one saw."""
from __future__ import annotations

import sys

import pytest

INNER = '''
import colorsys

from agent_eval.suite.tools import ToolMark


def test_inner():
    assert colorsys.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0) and ToolMark
'''


def test_a_module_first_imported_by_an_inner_session_stays_one_module(pytester: pytest.Pytester,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # Not imported yet, as openai was not when a recording test's inner session first imported it: forgetting
    # it afterwards gave the process a second openai beside the first (llm's client class), and
    # tests/run/test_replay.py failed after it with "Invalid timeout ... got <class 'openai.NotGiven'>".
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    pytester.makepyfile(test_inner=INNER)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    first = sys.modules.get("colorsys")
    assert first is not None  # still imported: the next import is the same module, not a second copy
    import colorsys

    assert colorsys is first
    assert "agent_eval.suite.tools" in sys.modules
    assert "test_inner" not in sys.modules  # the inner session's own test module is forgotten, as before
