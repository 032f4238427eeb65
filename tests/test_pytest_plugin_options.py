"""The pytest plugin's record, replay and gate options (and their ini keys), meaning what `run`'s flags
mean: a recording made by `agent-eval run --record` replays under pytest and the other way round; a miss is
the case's error unless `--agent-eval-replay-miss live`; the gate against a baseline fails the session."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_eval.scripted.server import serving
from tests.builders import write_suite
from tests.cli import run_cli

SCRIPT = [{"match": {"role": "agent", "case": "hello"}, "reply": "hello there"},
          {"match": {"role": "agent", "case": "bye"}, "reply": "goodbye"}]
CASES = [{"id": "hello", "query": "say hello", "expect": {"contains": "hello"}},
         {"id": "bye", "query": "say bye", "expect": {"contains": "goodbye"}}]
DEAD = "http://127.0.0.1:9/v1"  # nothing listens: a request that is not replayed fails


def only_report(folder: Path) -> dict[str, Any]:
    reports = sorted(folder.glob("*.json"))
    assert len(reports) == 1, reports
    report: dict[str, Any] = orjson.loads(reports[0].read_bytes())
    return report


def plugin(*args: object) -> list[str]:
    return ["-p", "no:cacheprovider", "--agent-eval-agent", "openai", "--agent-eval-model", "m", *map(str, args)]


def test_a_run_recording_replays_under_pytest_and_a_pytest_recording_under_run(pytester: pytest.Pytester) -> None:
    cases = write_suite(pytester.path / "suite", CASES, {"name": "greet"})
    with serving(SCRIPT) as model:
        recorded = run_cli("run", "--cases", cases, "--agent", "openai", "--model", "m", "--base-url", model.base_url,
                           "--record", pytester.path / "by-run", "--output-dir", pytester.path / "r0", "--no-html",
                           cwd=pytester.path)
        assert recorded.exit_code == 0, recorded.stdout + recorded.stderr
        pytester.runpytest(*plugin("--agent-eval", cases, "--agent-eval-base-url", model.base_url,
                                   "--agent-eval-record", "by-pytest", "--agent-eval-output-dir", "r1")
                           ).assert_outcomes(passed=2)
        asked = len(model.asked)
    assert asked == 4  # two cases, once by run and once by pytest: nothing was asked after this
    recorded_files = sorted(p.name for p in (pytester.path / "by-pytest").iterdir())
    assert recorded_files == [".lock", "bye", "cassette.json", "hello"]

    pytester.runpytest(*plugin("--agent-eval", cases, "--agent-eval-base-url", DEAD, "--agent-eval-replay", "by-run",
                               "--agent-eval-output-dir", "r2")).assert_outcomes(passed=2)
    report = only_report(pytester.path / "r2")
    assert report["settings"]["replay"] == str(pytester.path / "by-run")
    assert report["summary"]["replay"]["hits"] == 2 and report["summary"]["replay"]["misses"] == 0
    replayed = run_cli("run", "--cases", cases, "--agent", "openai", "--model", "m", "--base-url", DEAD, "--replay",
                       pytester.path / "by-pytest", "--output-dir", pytester.path / "r3", "--no-html",
                       cwd=pytester.path)
    assert replayed.exit_code == 0, replayed.stdout + replayed.stderr


def test_a_replay_miss_is_the_case_s_error_unless_it_goes_live(pytester: pytest.Pytester) -> None:
    cases = write_suite(pytester.path / "suite", CASES, {"name": "greet"})
    with serving(SCRIPT) as model:
        pytester.runpytest(*plugin("--agent-eval", cases, "--agent-eval-base-url", model.base_url,
                                   "--agent-eval-record", "rec", "--agent-eval-output-dir", "r1")
                           ).assert_outcomes(passed=2)
        changed = [{**CASES[0], "query": "say hello, now"}, CASES[1]]
        write_suite(pytester.path / "suite", changed, {"name": "greet"})
        missed = pytester.runpytest(*plugin("--agent-eval", cases, "--agent-eval-base-url", model.base_url,
                                            "--agent-eval-replay", "rec", "--agent-eval-output-dir", "r2"))
        missed.assert_outcomes(passed=1, errors=1)
        assert "replay miss" in missed.stdout.str()
        assert len(model.asked) == 2  # the miss was not sent
        pytester.makeini("[pytest]\nagent_eval_replay = rec\nagent_eval_replay_miss = live\n")
        live = pytester.runpytest(*plugin("--agent-eval", cases, "--agent-eval-base-url", model.base_url,
                                          "--agent-eval-output-dir", "r3"))
        live.assert_outcomes(passed=2)
        assert len(model.asked) == 3  # the miss, asked live
    assert only_report(pytester.path / "r3")["summary"]["replay"]["live"] == 1


FLAKY = '''
from pathlib import Path


def agent(task):
    mode = (Path(__file__).parent / "mode.txt").read_text()
    return "42" if mode == "good" or task.trial == 0 else "no idea"
'''


def test_the_gate_against_a_baseline_fails_the_session(pytester: pytest.Pytester) -> None:
    suite = pytester.path / "suite"
    cases = write_suite(suite, [{"id": "q", "query": "the answer?", "expect": {"contains": "42"}}],
                        {"agent": "agent.py:agent"}, {"agent.py": FLAKY, "mode.txt": "good"})
    args = ["-p", "no:cacheprovider", "--agent-eval", str(cases), "--agent-eval-repeat", "2",
            "--agent-eval-threshold", "0.5", "--agent-eval-output-dir", "out"]
    first = pytester.runpytest(*args, "--agent-eval-baseline", "last", "--agent-eval-gate", "pass_at_1")
    first.assert_outcomes(passed=1)
    assert first.ret == 0 and "is not gated" in first.stdout.str()  # no earlier run: a warning, as for run
    (suite / "mode.txt").write_text("flaky")  # trial 1 now fails: the case still passes at threshold 0.5
    pytester.makeini("[pytest]\nagent_eval_baseline = last\nagent_eval_gate = pass_at_1\n")
    second = pytester.runpytest(*args)
    second.assert_outcomes(passed=1)
    assert second.ret == pytest.ExitCode.TESTS_FAILED
    reports = sorted((pytester.path / "out").glob("*.json"), key=lambda p: p.stat().st_mtime)
    gated = orjson.loads(reports[-1].read_bytes())
    assert gated["gate"]["regression"] is True and gated["exit_code"] == 1
    # pass_at_1 fell from 1.0 (2 of 2 runs) to 0.5 (1 of 2)
    assert gated["summary"]["pass_at_1"] == 0.5
    assert "FAIL (exit 1)" in second.stdout.str()


@pytest.mark.slow  # two worker processes
def test_under_xdist_the_workers_record_into_one_folder(pytester: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"id": f"hello{n}", "query": "say hello", "expect": {"contains": "hello"}} for n in range(6)]
    cases = write_suite(pytester.path / "suite", rows, {"name": "greet"})
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    with serving([{"match": {"role": "agent"}, "reply": "hello there"}]) as model:
        result = pytester.runpytest_subprocess(*plugin(
            "-p", "xdist.plugin", "-p", "agent_eval.pytest_plugin", "-n", "2", "--agent-eval", cases,
            "--agent-eval-base-url", model.base_url, "--agent-eval-record", "rec", "--agent-eval-output-dir", "r1"))
        result.assert_outcomes(passed=6)  # the second worker was not refused the folder the first one holds
    replayed = run_cli("run", "--cases", cases, "--agent", "openai", "--model", "m", "--base-url", DEAD, "--replay",
                       pytester.path / "rec", "--output-dir", pytester.path / "r2", "--no-html", cwd=pytester.path)
    assert replayed.exit_code == 0, replayed.stdout + replayed.stderr
    assert only_report(pytester.path / "r2")["summary"]["replay"]["hits"] == 6
