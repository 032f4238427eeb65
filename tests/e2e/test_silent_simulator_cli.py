"""A simulated user that ends before its first message (the stop marker, None or an empty answer) makes
the run an `error`, never the agent's failure. In-process, against a loopback server."""
from __future__ import annotations

import pytest

from tests.e2e.test_simulated_user_cli import accounts_suite, cli, newest_report
from tests.loopback import text

SILENT_SIMS = '''
def never_speaks(sim):
    return None


def blank(sim):
    return "   "
'''

ENDED = "the simulated user ended before its first message"


# An empty answer gets the one corrective retry every unusable answer gets (2 requests); the stop, none.
@pytest.mark.parametrize("answer, said, asked", [("###STOP###", "user-m answered ###STOP###", 1),
                                                 ("", "user-m gave no usable user message twice", 2)])
def test_an_llm_user_whose_first_answer_is_the_stop_is_an_error(loopback, tmp_path, answer, said, asked) -> None:
    srv = loopback(lambda request, index: text(answer if request["model"] == "user-m" else "hello"))
    cases_file = accounts_suite(tmp_path)
    code, out, err = cli(tmp_path, "run", "--cases", str(cases_file), "--user-model", "user-m",
                         "--filter", "reset", srv=srv)
    assert code == 2, out + err  # an infrastructure error, not a failed case (exit 1)
    (case,) = newest_report(tmp_path)["cases"]
    (run,) = case["runs"]
    assert case["status"] == "error" and run["status"] == "error"
    assert ENDED in run["error"] and said in run["error"]
    assert run["trace"]["user_messages"] == [] and srv.count == asked  # the agent was never asked
    assert ENDED in " ".join(out.split())


@pytest.mark.parametrize("function, said", [("never_speaks", "returned None"),
                                            ("blank", "returned an empty message")])
def test_a_python_user_that_ends_before_speaking_is_an_error(tmp_path, function, said) -> None:
    cases_file = accounts_suite(tmp_path, agent="agent.py:agent", user={"agent": f"silent.py:{function}"})
    (tmp_path / "silent.py").write_text(SILENT_SIMS)
    (tmp_path / "agent.py").write_text("def agent(task):\n    return 'hello'\n")
    code, out, err = cli(tmp_path, "run", "--cases", str(cases_file), "--filter", "reset")
    assert code == 2, out + err
    (case,) = newest_report(tmp_path)["cases"]
    (run,) = case["runs"]
    assert run["status"] == "error" and ENDED in run["error"] and f"silent.py:{function} {said}" in run["error"]
