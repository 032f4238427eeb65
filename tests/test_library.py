"""`agent_eval.run_suite(...)`: `run` as a function that returns the report, prints nothing and never exits."""
from __future__ import annotations

import asyncio
import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console

import agent_eval
from agent_eval.commands.run import run_command
from agent_eval.errors import CaseFileError, ConfigError
from tests.builders import flags_of, write_suite

AGENT = '''
def agent(task):
    return "the answer is 42" if "answer" in task.input else "no idea"
'''
CASES = [{"id": "knows", "query": "the answer?", "expect": {"contains": "42"}},
         {"id": "guesses", "query": "a riddle", "expect": {"contains": "42"}, "tags": ["riddle"]}]


def suite(tmp_path: Path) -> Path:
    return write_suite(tmp_path, CASES, {"agent": "agent.py:agent"}, {"agent.py": AGENT})


def test_run_suite_returns_the_report_run_writes_and_prints_nothing(tmp_path: Path,
                                                                      capfd: pytest.CaptureFixture[str]) -> None:
    report = agent_eval.run_suite(suite(tmp_path), repeat=2, output_dir=tmp_path / "lib")
    assert capfd.readouterr() == ("", "")
    assert report["exit_code"] == 1  # "guesses" fails
    assert [(c["id"], c["status"]) for c in report["cases"]] == [("knows", "passed"), ("guesses", "failed")]
    assert report["settings"]["repeat"] == 2 and report["settings"]["sources"]["repeat"] == "flag"
    written = orjson.loads((tmp_path / "lib" / f"{report['run_id']}.json").read_bytes())
    assert report == written  # the dict `run` writes, traces included
    assert written["cases"][0]["runs"][0]["trace"]["final_answer"] == "the answer is 42"
    assert {p.suffix for p in (tmp_path / "lib").iterdir()} >= {".json", ".jsonl", ".html", ".sqlite"}

    # `run` is the same plus the terminal and the exit code: the same statuses and summary figures.
    out = io.StringIO()
    code = run_command(flags_of(cases=suite(tmp_path), repeat=2, output_dir=tmp_path / "cli"),
                       Console(file=out, width=200), Console(file=io.StringIO()))
    assert code == report["exit_code"] and "guesses" in out.getvalue()
    cli = orjson.loads(next((tmp_path / "cli").glob("*.json")).read_bytes())
    assert [(c["id"], c["status"], c["pass_rate"]) for c in cli["cases"]] == [
        (c["id"], c["status"], c["pass_rate"]) for c in report["cases"]]
    for key in ("cases_passed", "cases_failed", "pass_at_1", "pass_hat_k"):
        assert cli["summary"][key] == report["summary"][key], key


def test_run_suite_takes_runs_flags_as_keywords(tmp_path: Path) -> None:
    report = agent_eval.run_suite(suite(tmp_path), filter="riddle", output_dir=tmp_path / "r")
    assert [c["id"] for c in report["cases"]] == ["guesses"]
    with pytest.raises(ConfigError, match="unknown setting repeats"):
        agent_eval.run_suite(suite(tmp_path), repeats=2)


def test_run_suite_raises_user_mistakes(tmp_path: Path) -> None:
    bad = write_suite(tmp_path, [{"id": "x", "query": "q", "expect": {"contains": "a"}, "tgas": []}],
                      {"agent": "agent.py:agent"}, {"agent.py": AGENT})
    with pytest.raises(CaseFileError, match="tgas"):
        agent_eval.run_suite(bad, output_dir=tmp_path / "r")


def test_run_suite_inside_a_running_event_loop(tmp_path: Path) -> None:
    async def main() -> int | None:
        return agent_eval.run_suite(suite(tmp_path), output_dir=tmp_path / "r")["exit_code"]

    assert asyncio.run(main()) == 1


def test_run_suite_takes_folders_and_files_as_strings(tmp_path: Path) -> None:
    recorded = agent_eval.run_suite(str(suite(tmp_path)), record=str(tmp_path / "tape"),
                                    output_dir=str(tmp_path / "r"), markdown=str(tmp_path / "r.md"))
    assert (tmp_path / "tape" / "cassette.json").is_file() and (tmp_path / "r.md").is_file()
    replayed = agent_eval.run_suite(str(suite(tmp_path)), replay=str(tmp_path / "tape"),
                                    output_dir=str(tmp_path / "r"))
    assert replayed["settings"]["replay"] == str(tmp_path / "tape")
    assert replayed["exit_code"] == recorded["exit_code"] == 1


TONE = '''
from agent_eval.flags import Setting, register_setting

register_setting(Setting("tone", str, ("--tone",), default="plain", help="The tone the agent is asked for."))
'''


def test_run_suite_takes_a_plugin_s_setting_before_any_command_loaded_the_plugins(tmp_path: Path) -> None:
    from tests.builders import clean_env
    from tests.cli import _State

    (tmp_path / "tone.py").write_text(TONE)
    cases = suite(tmp_path)
    # As in a fresh process (the state a call changes is put back after it): the plugin is found through
    # AGENT_EVAL_PLUGINS by run_suite itself, before it checks the keyword arguments.
    with _State(tmp_path, clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "tone.py")), None):
        report = agent_eval.run_suite(cases, tone="formal", output_dir=tmp_path / "r")
    assert (report["settings"]["tone"], report["settings"]["sources"]["tone"]) == ("formal", "flag")


@pytest.mark.parametrize(("given", "says"), [
    ({"repeat": True}, "run_suite(repeat=...) takes an integer, not True."),  # it was settings.repeat = true
    ({"repeat": 2.5}, "run_suite(repeat=...) takes an integer, not 2.5."),  # it was 2 runs per case
    ({"no_judge": "no"}, "run_suite(no_judge=...) takes True or False, not 'no'."),  # it was the judge on
    ({"filter": 5}, "run_suite(filter=...) takes a list of text, not 5."),  # it was a TypeError
    ({"filter": ["a", 5]}, "run_suite(filter=...) takes a list of text, not ['a', 5]."),
    ({"model": 42}, "run_suite(model=...) takes text, not 42."),
    ({"output_dir": 5}, "run_suite(output_dir=...) takes a path (a str or a Path), not 5."),
])
def test_run_suite_refuses_a_keyword_of_the_wrong_type(tmp_path: Path, given: dict, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        agent_eval.run_suite(suite(tmp_path), **given)
    assert str(refused.value) == says
    with pytest.raises(ConfigError, match=r"run_suite\(\) takes the case file as a str or a Path, not int"):
        agent_eval.run_suite(5)  # type: ignore[arg-type]


def test_run_suite_takes_text_as_a_number_and_a_path_as_text(tmp_path: Path) -> None:
    first = agent_eval.run_suite(suite(tmp_path), repeat="2", output_dir=tmp_path / "r")
    assert first["settings"]["repeat"] == 2
    path = tmp_path / "r" / f"{first['run_id']}.json"
    again = agent_eval.run_suite(suite(tmp_path), baseline=path, output_dir=tmp_path / "r")
    assert again["gate"]["base_run_id"] == first["run_id"]


BOOM = '''
from agent_eval.report.outputs import Output, register_output


def write(job):
    raise RuntimeError("no room")


register_output(Output("Boom", lambda cfg, report_path: report_path.with_suffix(".boom"), write))
'''


def test_run_suite_returns_the_report_with_a_warning_when_a_plugin_s_output_raised(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from tests.builders import clean_env
    from tests.cli import _State

    (tmp_path / "boom.py").write_text(BOOM)
    cases = write_suite(tmp_path, [CASES[0]], {"agent": "agent.py:agent"}, {"agent.py": AGENT})  # "knows" passes
    with _State(tmp_path, clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "boom.py")), None):
        report = agent_eval.run_suite(cases, output_dir=tmp_path / "r")
    # It raised ConfigError while the report on disk said exit_code 0: an output never changes the verdict.
    assert report["exit_code"] == 0
    (line,) = [r.getMessage() for r in caplog.records if "Boom" in r.getMessage()]
    assert line.startswith("warning: the output 'Boom' of the plugin ") and "raised RuntimeError: no room" in line
    (path,) = (tmp_path / "r").glob("*.json")
    assert orjson.loads(path.read_bytes())["exit_code"] == 0


def test_every_error_run_suite_raises_is_an_agent_eval_error(tmp_path: Path) -> None:
    assert issubclass(agent_eval.CaseFileError, agent_eval.AgentEvalError)
    assert issubclass(agent_eval.ConfigError, agent_eval.AgentEvalError)
    bad = tmp_path / "bad.yaml"
    bad.write_text("cases: [{id: a}]\n")
    for call in (lambda: agent_eval.run_suite(bad), lambda: agent_eval.run_suite(suite(tmp_path), repeats=2)):
        with pytest.raises(agent_eval.AgentEvalError):
            call()


def test_a_plugin_that_failed_to_load_fails_again_on_the_next_call(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The host marked a plugin loaded before loading it: after one call's ConfigError, the next call in the same
    # process (a notebook's second cell) ran silently without it.
    (tmp_path / "broken.py").write_text("def register(host):\n    raise RuntimeError('no config')\n")
    monkeypatch.setenv("AGENT_EVAL_PLUGINS", str(tmp_path / "broken.py"))
    for _ in range(2):
        with pytest.raises(ConfigError, match="raised RuntimeError: no config in register"):
            agent_eval.run_suite(suite(tmp_path / "suite"), output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()
