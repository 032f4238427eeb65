"""The pytest plugin's session as a careless user drives it: a conftest that changes the working directory,
an inline case with a nonsense `repeat`, `-x` and Ctrl-C under xdist."""
from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.builders import write_suite

AGENT = 'def agent(task):\n    return "the answer is 42" if "answer" in task.input else "no idea"\n'
SMALL = [{"id": "knows", "query": "the answer?", "expect": {"contains": "42"}},
         {"id": "guesses", "query": "a riddle", "expect": {"contains": "42"}}]


def test_every_file_of_the_session_goes_under_one_folder_whatever_a_conftest_does_to_the_cwd(
        pytester: pytest.Pytester) -> None:
    write_suite(pytester.path / "suite", SMALL, {"agent": "agent.py:agent"}, {"agent.py": AGENT})
    (pytester.path / "elsewhere").mkdir()
    (pytester.path / "further").mkdir()
    pytester.makeconftest('''
import os
import pytest

os.chdir("elsewhere")  # at import, before the plugin is configured


@pytest.fixture(autouse=True)
def wander():
    os.chdir(os.path.join(os.path.dirname(__file__), "further"))  # before each test, the cases' included
    yield
''')
    pytester.makepyfile(test_inline='''
def test_inline(agent_eval):
    agent_eval({"id": "inline", "query": "the answer?", "expect": {"contains": "42"}}).assert_passed()
''')
    pytester.makeini("[pytest]\nagent_eval_cases = suite/cases.json\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--rootdir", str(pytester.path))
    result.assert_outcomes(passed=2, failed=1)
    reports = pytester.path / "reports"  # the default folder, from where pytest started
    report = orjson.loads(next(reports.glob("*.json")).read_bytes())
    run_id = report["run_id"]
    assert {p.name for p in reports.iterdir()} >= {f"{run_id}.json", f"{run_id}.jsonl", f"{run_id}.html",
                                                   "history.sqlite"}
    assert [c["id"] for c in report["cases"]] == ["knows", "guesses", "inline"]
    assert not list((pytester.path / "elsewhere").iterdir()) and not list((pytester.path / "further").iterdir())


@pytest.mark.parametrize("repeat", [0, -1, 2.5, "3", True])
def test_an_inline_repeat_that_is_not_a_positive_integer_is_a_usage_message(pytester: pytest.Pytester,
                                                                             repeat: Any) -> None:
    write_suite(pytester.path / "suite", SMALL, {"agent": "agent.py:agent"}, {"agent.py": AGENT})
    pytester.makeini("[pytest]\nagent_eval_cases = suite/cases.json\n")
    pytester.makepyfile(test_inline=f'''
def test_inline(agent_eval):
    agent_eval({{"id": "inline", "query": "the answer?", "expect": {{"contains": "42"}}}}, repeat={repeat!r})
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "test_inline.py", "--agent-eval-output-dir", "out")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert f"repeat={repeat!r}): repeat is the number of runs of the case, a positive whole number" in out
    assert not (pytester.path / "out").exists()  # nothing was played


@pytest.mark.slow  # two worker processes
def test_exitfirst_under_xdist_leaves_the_unplayed_cases_not_run(pytester: pytest.Pytester,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    agent = ('import time\n\ndef agent(task):\n    if task.case_id != "fails":\n        time.sleep(0.5)\n'
             '    return "no" if task.case_id == "fails" else "42"\n')
    rows = [{"id": "fails", "query": "q", "expect": {"contains": "42"}},
            *({"id": f"c{n:02d}", "query": "q", "expect": {"contains": "42"}} for n in range(19))]
    cases = write_suite(pytester.path / "suite", rows, {"agent": "agent.py:agent"}, {"agent.py": agent})
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "xdist.plugin", "-p",
                                           "agent_eval.pytest_plugin", "-n", "2", "-x", "--agent-eval", str(cases),
                                           "--agent-eval-output-dir", "out")
    assert result.ret != pytest.ExitCode.OK  # xdist ends -x as interrupted (2), as it does without agent-eval
    reports = list((pytester.path / "out").glob("*.json"))
    report = orjson.loads(reports[0].read_bytes())
    statuses = {c["id"]: c["status"] for c in report["cases"]}
    assert sorted(statuses) == sorted(r["id"] for r in rows)  # every selected case, as without xdist
    assert statuses["fails"] == "failed" and report["stopped_early"] is True and report["interrupted"] is False
    assert set(statuses.values()) <= {"passed", "failed", "not_run"} and "not_run" in statuses.values()
    assert report["summary"]["cases_not_run"] == sum(s == "not_run" for s in statuses.values())


LISTENING = '''
import os
from pathlib import Path

from agent_eval.provider.events import RunListener


class Log(RunListener):
    def _say(self, line):
        with Path(os.environ["HEARD_LOG"]).open("a") as log:
            log.write(line + "\\n")

    def run_finished(self, case_id, run):
        self._say(f"finished {case_id} {run['trial']} {run['status']}")

    def journaled(self, case_id, trial, run_json):
        self._say(f"journaled {case_id} {trial}")

    def command_finished(self):
        self._say("command finished")


class Loud(RunListener):
    def run_finished(self, case_id, run):
        raise ValueError("no log for " + case_id)


def register(host):
    host.add_listener(Log())
    host.add_listener(Loud())
'''


@pytest.mark.parametrize("xdist", [(), ("-p", "xdist.plugin", "-n", "2")])
def test_the_plugins_listeners_hear_the_sessions_runs_as_runs(pytester: pytest.Pytester,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                xdist: tuple[str, ...]) -> None:
    # The book built its Runner without the plugins' listeners: under pytest they heard nothing.
    cases = write_suite(pytester.path / "suite", SMALL, {"agent": "agent.py:agent"}, {"agent.py": AGENT})
    (pytester.path / "listen.py").write_text(LISTENING)
    log = pytester.path / "heard.log"
    for name, value in (("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1"), ("AGENT_EVAL_PLUGINS", "listen.py"),
                        ("HEARD_LOG", str(log))):
        monkeypatch.setenv(name, value)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *xdist, "-p", "agent_eval.pytest_plugin",
                                           "--agent-eval", str(cases), "--agent-eval-repeat", "2",
                                           "--agent-eval-output-dir", "out")
    result.assert_outcomes(passed=1, failed=1)
    heard = log.read_text().splitlines()
    # Each of the 4 runs (2 cases x 2 trials) is journaled and finished once, in whichever process played it;
    # each process that played is told once that its command finished (one here; one or two xdist workers).
    assert sorted(line for line in heard if not line.startswith("command")) == sorted(
        [f"journaled {case} {trial}" for case in ("knows", "guesses") for trial in (0, 1)]
        + [f"finished knows {trial} passed" for trial in (0, 1)]
        + [f"finished guesses {trial} failed" for trial in (0, 1)])
    assert 1 <= heard.count("command finished") <= (2 if xdist else 1) and heard[-1] == "command finished"
    # The listener that raised is one warning per process, in the plugin's agent-eval section, and the runs go on.
    out = result.stdout.str()
    assert 1 <= out.count("warning: the listener Loud of the plugin") <= (2 if xdist else 1)
    assert "raised ValueError: no log for" in out and "in run_finished; it is told no more" in out
    assert out.index(" agent-eval ===") < out.index("warning: the listener Loud") and "Traceback" not in out
    (report,) = (pytester.path / "out").glob("*.json")
    statuses = {c["id"]: c["status"] for c in orjson.loads(report.read_bytes())["cases"]}
    assert statuses == {"knows": "passed", "guesses": "failed"}
