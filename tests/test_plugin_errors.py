"""A plugin row whose code raises (an Exception, or SystemExit from its own code) goes through the one guard.

Per run (a metric's run value, a check family, an `expect` key), the error is recorded on the run and the
run's other results are kept, as for a custom scorer that raises. Once per command (an output's writer, a
format's reader, an agent kind's code), it is one line naming the plugin, the row and the exception, exit
2, no traceback, and what was already written is kept. A real Ctrl-C still goes through."""
from __future__ import annotations

import threading
from pathlib import Path

import orjson
import pytest

from agent_eval.errors import ConfigError
from agent_eval.plugins.calls import once, per_run
from tests.builders import clean_env, write_suite
from tests.cli import run_cli
from tests.test_plugins import installed, suite

RAISES = {"ValueError": 'raise ValueError("no words here")', "SystemExit": "raise SystemExit(3)"}
# What each one reads as in a message, with the innermost frame of the plugin's code.
SHOWN = {"ValueError": "ValueError: no words here", "SystemExit": "SystemExit: 3"}
TALKER = '''
def agent(task):
    return "hello there" if task.case_id == "short" else "hello there my friend"
'''


def _report(out: Path) -> dict:
    (path,) = out.glob("*.json")
    return orjson.loads(path.read_bytes())


METRIC = '''
from agent_eval.score.metric_registry import SuiteMetric, mean, register_metric


def answer_words(case, trace, checks, success, cost_usd):
    if case["id"] == "long":
        {raise_}
    return len((trace.get("final_answer") or "").split())


register_metric(SuiteMetric("answer_words", "answer words", lower_is_better=True, fmt="number",
                            statistic=mean("answer_words"), interval=True, run_value=answer_words))
'''


@pytest.mark.parametrize("kind", RAISES)
def test_a_metric_whose_run_value_raises_is_null_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             kind: str) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "badmetric", METRIC.format(raise_=RAISES[kind]))))
    cases = [{"id": "short", "query": "hi", "expect": {"contains": "hello"}},
             {"id": "long", "query": "hi", "expect": {"contains": "hello"}}]
    suite_file = write_suite(tmp_path / "suite", cases, {"agent": "agent.py:agent"}, {"agent.py": TALKER})
    out = tmp_path / "reports"
    result = run_cli("run", "--cases", suite_file, "-k", "2", "--output-dir", out)
    # As a custom scorer's error: the runs' verdicts are their checks' (both cases pass), so exit 0.
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    report = _report(out)
    short, long = report["cases"]
    assert [r["metrics"]["answer_words"] for r in short["runs"]] == [2, 2]
    assert "metric_errors" not in short["runs"][0]  # a run whose value was made carries no note
    assert [r["metrics"]["answer_words"] for r in long["runs"]] == [None, None]
    assert [r["status"] for r in long["runs"]] == ["passed", "passed"]  # the run's other results are kept
    note = long["runs"][0]["metric_errors"]["answer_words"]
    assert note.startswith(f"the metric 'answer_words' of the plugin badmetric raised {SHOWN[kind]} (")
    assert "badmetric.py:" in note and "in answer_words)" in note
    # The figure is over the runs with a value: (2 + 2) / 2 = 2.0.
    assert report["summary"]["answer_words"] == 2.0
    assert "Metric errors" in result.stdout and "answer_words: failed on 2 of 4 runs (null there)" in result.stdout
    assert "first: long #0: the metric 'answer_words' of the plugin badmetric raised" in result.stdout


GARBAGE = {"text": '"many"', "list": "list(range(100_000))", "nan": 'float("nan")', "huge": "10 ** 400"}
# What the note says the run value was.
GARBAGE_SHOWN = {"text": "a value of type str", "list": "a value of type list", "nan": "nan",
                 "huge": "a value of type int"}


@pytest.mark.parametrize("kind", GARBAGE)
def test_a_metric_whose_run_value_is_not_a_number_is_null_with_a_note(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      kind: str) -> None:
    source = METRIC.format(raise_=f"return {GARBAGE[kind]}")
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "badvalue", source)))
    cases = [{"id": "short", "query": "hi", "expect": {"contains": "hello"}},
             {"id": "long", "query": "hi", "expect": {"contains": "hello"}}]
    suite_file = write_suite(tmp_path / "suite", cases, {"agent": "agent.py:agent"}, {"agent.py": TALKER})
    out = tmp_path / "reports"
    result = run_cli("run", "--cases", suite_file, "-k", "2", "--output-dir", out, "-v")
    # The summary reads numbers: a string or a list there ended the command with a traceback and no report.
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    report = _report(out)
    short, long = report["cases"]
    assert [r["metrics"]["answer_words"] for r in long["runs"]] == [None, None]
    assert long["runs"][0]["metric_errors"]["answer_words"] == (
        f"the metric 'answer_words' of the plugin badvalue returned {GARBAGE_SHOWN[kind]}, not a finite number "
        "(return a number, a bool or None)")
    # Over the runs with a value, short's 2 words twice: (2 + 2) / 2 = 2.0, its interval [2.0, 2.0].
    assert (report["summary"]["answer_words"], report["summary"]["ci"]["answer_words"]) == (2.0, [2.0, 2.0])
    assert "answer_words: failed on 2 of 4 runs (null there)" in result.stdout


FAMILY = '''
from agent_eval.score.checks import CheckFamily, register_check_family


def tone_checks(case, trace, final_env, expected_env):
    if case.get("tone") == "loud":
        {raise_}
    return [{{"name": "tone", "passed": True, "detail": "calm enough"}}] if case.get("tone") else []


register_check_family(CheckFamily("tone", ("tone",), tone_checks))
'''


@pytest.mark.parametrize("kind", RAISES)
def test_a_check_family_that_raises_is_a_failed_check_naming_the_plugin(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       kind: str) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "badfamily", FAMILY.format(raise_=RAISES[kind]))))
    cases = [{"id": "calm", "query": "hi", "expect": {"contains": "hello"}, "tone": "calm"},
             {"id": "loud", "query": "hi", "expect": {"contains": "hello"}, "tone": "loud"}]
    suite_file = write_suite(tmp_path / "suite", cases, {"agent": "agent.py:agent"},
                             {"agent.py": "def agent(task):\n    return 'hello there'\n"})
    out = tmp_path / "reports"
    result = run_cli("run", "--cases", suite_file, "--output-dir", out)
    assert result.exit_code == 1, result.stderr  # "loud" failed its check
    assert "Traceback" not in result.stderr + result.stdout
    calm, loud = _report(out)["cases"]
    assert calm["status"] == "passed"
    assert calm["runs"][0]["checks"][-1] == {"name": "tone", "passed": True, "detail": "calm enough"}
    (run,) = loud["runs"]
    assert loud["status"] == "failed" and run["error"] is None
    assert run["checks"][0] == {"name": "expect:contains", "passed": True,
                                "detail": run["checks"][0]["detail"]}  # the other checks are kept
    tone = run["checks"][-1]
    assert (tone["name"], tone["passed"]) == ("tone", False)
    assert tone["detail"].startswith(f"the check family 'tone' of the plugin badfamily raised {SHOWN[kind]} (")
    assert "badfamily.py:" in tone["detail"]


EXPECT_KEY = '''
from agent_eval.score.expect import ExpectKey, register_expect_key


def shouts(value, trace, case):
    if case["id"] == "loud":
        {raise_}
    return (trace.get("final_answer") or "").isupper() == value, "checked"


register_expect_key("shouts", ExpectKey(shouts))
'''


@pytest.mark.parametrize("kind", RAISES)
def test_an_expect_key_that_raises_fails_its_check_naming_the_plugin(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    kind: str) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "badkey", EXPECT_KEY.format(raise_=RAISES[kind]))))
    cases = [{"id": "calm", "query": "hi", "expect": {"contains": "hello", "shouts": False}},
             {"id": "loud", "query": "hi", "expect": {"contains": "hello", "shouts": True}}]
    suite_file = write_suite(tmp_path / "suite", cases, {"agent": "agent.py:agent"},
                             {"agent.py": "def agent(task):\n    return 'hello there'\n"})
    out = tmp_path / "reports"
    result = run_cli("run", "--cases", suite_file, "--output-dir", out)
    assert result.exit_code == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    calm, loud = _report(out)["cases"]
    assert calm["status"] == "passed"
    contains, shouts = loud["runs"][0]["checks"]
    assert contains["name"] == "expect:contains" and contains["passed"] is True
    assert (shouts["name"], shouts["passed"]) == ("expect:shouts", False)
    assert shouts["detail"].startswith(f"the expect key 'shouts' of the plugin badkey raised {SHOWN[kind]} (")


OUTPUT = '''
from agent_eval.report.outputs import Output, register_output


def write(job):
    {raise_}


register_output(Output("Marks", lambda cfg, report_path: report_path.with_suffix(".marks.txt"), write))
'''


@pytest.mark.parametrize("kind", RAISES)
def test_an_output_that_raises_is_a_warning_and_the_report_carries_the_process_s_exit_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "badoutput", OUTPUT.format(raise_=RAISES[kind]))))
    out = tmp_path / "reports"
    result = run_cli("run", "--cases", suite(tmp_path), "--output-dir", out, "--junit", tmp_path / "junit.xml")
    # It was exit 2 while the JSON report and the history said 0 (and the terminal 'PASS (exit 0)').
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not [line for line in result.stderr.splitlines() if line.startswith("error:")]
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert line.startswith(f"warning: the output 'Marks' of the plugin badoutput raised {SHOWN[kind]} (badoutput.py:")
    assert line.endswith("; the JSON report and the other outputs are written, the verdict is unchanged.")
    report = _report(out)
    assert report["cases"][0]["status"] == "passed" and report["exit_code"] == result.exit_code
    assert list(out.glob("*.html")) and (tmp_path / "junit.xml").exists()
    assert not list(out.glob("*.marks.txt"))
    assert "PASS" in result.stdout  # the terminal report is still printed
    import sqlite3

    with sqlite3.connect(out / "history.sqlite") as db:
        assert db.execute("select exit_code from runs").fetchall() == [(0,)]


TARGET_AND_FILE = '''
from agent_eval.report.outputs import Output, register_output


def nowhere(cfg, report_path):
    raise KeyError("marks_dir")


def unwritable(job):
    raise PermissionError(13, "Permission denied")


register_output(Output("Marks", nowhere, lambda job: None))
register_output(Output("Locked", lambda cfg, report_path: report_path.with_suffix(".locked"), unwritable))
'''


def test_an_outputs_target_that_raises_and_its_file_error_are_warnings(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "targetplug", TARGET_AND_FILE)))
    out = tmp_path / "reports"
    result = run_cli("run", "--cases", suite(tmp_path), "--output-dir", out)
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert ("warning: the output 'Marks' of the plugin targetplug raised KeyError: 'marks_dir' (targetplug.py:"
            in result.stderr)
    # A file the plugin cannot write is what it is for a built-in output: a warning, the verdict unchanged.
    assert "warning: could not write the Locked file" in result.stderr and "Permission denied" in result.stderr
    assert _report(out)["cases"][0]["status"] == "passed" and _report(out)["exit_code"] == 0


FORMAT = '''
from agent_eval.ingest.formats import Format, register_format


def cases(source, logs):
    {raise_}


register_format("broken", Format(cases=cases))
'''


@pytest.mark.parametrize("kind", RAISES)
def test_a_format_reader_that_raises_is_exit_2_naming_the_plugin_and_the_row(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch,
                                                                            kind: str) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "badformat", FORMAT.format(raise_=RAISES[kind]))))
    (tmp_path / "source.txt").write_text("anything\n")
    result = run_cli("import", "broken", tmp_path / "source.txt", "--out", tmp_path / "cases.json")
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr + result.stdout
    assert f"the format 'broken' of the plugin badformat raised {SHOWN[kind]} (badformat.py:" in result.stderr
    assert not (tmp_path / "cases.json").exists()


KIND = '''
from agent_eval.run.agents import AgentKind, register_agent_kind


def load(spec, base_dir, settings):
    {raise_}


register_agent_kind(AgentKind("echo", lambda spec: spec.startswith("echo:"), load))
'''


@pytest.mark.parametrize("kind", RAISES)
def test_an_agent_kind_whose_loader_raises_is_exit_2_naming_the_plugin(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      kind: str) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "badkind", KIND.format(raise_=RAISES[kind]))))
    out = tmp_path / "reports"
    result = run_cli("run", "--cases", suite(tmp_path), "--agent", "echo:hi", "--output-dir", out)
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr + result.stdout
    assert f"the agent kind 'echo' of the plugin badkind raised {SHOWN[kind]} (badkind.py:" in result.stderr


ONCE_PER_COMMAND = '''
from agent_eval.ingest.formats import Format, register_format
from agent_eval.run.agents import AgentKind, register_agent_kind
from agent_eval.score.checks import CheckFamily, register_check_family


def matches(spec):
    if spec == "boom":
        raise SystemExit("no kind for you")
    return False


def detect(data):
    raise ValueError("cannot tell")


def validate(case):
    raise RuntimeError("tone unknown")


register_agent_kind(AgentKind("picky", matches, lambda spec, base_dir, settings: None))
register_format("sniffy", Format(runs=lambda path, tools, logs: ([], [], {}), detect=detect))
register_check_family(CheckFamily("tone", ("tone",), lambda case, trace, env, expected: [], validate=validate))
'''


def test_a_plugins_recogniser_detector_or_validation_that_raises_is_exit_2(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "onceplug", ONCE_PER_COMMAND)))
    cases = suite(tmp_path)
    picked = run_cli("validate", "--cases", cases, "--agent", "boom")
    assert picked.exit_code == 2 and "Traceback" not in picked.stderr
    assert ("the agent kind 'picky' of the plugin onceplug raised SystemExit: no kind for you (onceplug.py:"
            in picked.stderr)
    (tmp_path / "traces.json").write_text("{}")
    sniffed = run_cli("score", tmp_path / "traces.json", "--cases", cases, "--output-dir", tmp_path / "out")
    assert sniffed.exit_code == 2 and "Traceback" not in sniffed.stderr
    assert "the format 'sniffy' of the plugin onceplug raised ValueError: cannot tell" in sniffed.stderr
    toned = write_suite(tmp_path / "toned", [{"id": "c", "query": "hi", "tone": "calm"}], {"agent": "agent.py:agent"},
                        {"agent.py": "def agent(task):\n    return 'hi'\n"})
    checked = run_cli("validate", "--cases", toned)
    assert checked.exit_code == 2 and "Traceback" not in checked.stderr
    assert "the check family 'tone' of the plugin onceplug raised RuntimeError: tone unknown" in checked.stderr


def test_a_plugin_rows_own_config_error_is_its_message_and_a_real_ctrl_c_goes_through() -> None:
    def refuses() -> None:
        raise ConfigError("set TONE first")

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(ConfigError, match="^set TONE first$"):
        once("format", "x", "plug", refuses)()
    # The main thread, no event loop, Python's own SIGINT handler: where a real Ctrl-C lands.
    with pytest.raises(KeyboardInterrupt):
        once("format", "x", "plug", interrupted)()
    with pytest.raises(KeyboardInterrupt):
        per_run("metric", "x", "plug", interrupted, str)()
    # In a worker thread no Ctrl-C is ever raised: a KeyboardInterrupt there is the plugin's own.
    seen: list[str] = []
    thread = threading.Thread(target=lambda: seen.append(per_run("metric", "x", "plug", interrupted, str)()))
    thread.start()
    thread.join()
    assert seen[0].startswith("the metric 'x' of the plugin plug raised KeyboardInterrupt")


def test_a_ctrl_c_while_the_plugins_load_is_exit_130_with_no_traceback(tmp_path: Path) -> None:
    # A KeyboardInterrupt in the main thread while the plugins load cannot be told from a real Ctrl-C: it stops
    # the command as one would (it was a traceback).
    (tmp_path / "stopper.py").write_text("raise KeyboardInterrupt\n")
    result = run_cli("list", env=clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "stopper.py")))
    assert result.exit_code == 130
    assert result.stderr.strip() == "interrupted"


@pytest.mark.parametrize(("statistic", "key"), [('mean("latency_s")', "latency_s"), ('share("success")', "success"),
                                                 ('share("blocked_correctly")', "blocked_correctly")])
def test_a_plugin_run_value_under_a_built_in_run_key_is_exit_2(tmp_path: Path, statistic: str, key: str) -> None:
    # Its value replaced the run's own: latency P50 999 s, or a passed run with success false.
    (tmp_path / "shadow.py").write_text(
        "from agent_eval.score.metric_registry import SuiteMetric, mean, share, register_metric\n"
        f"register_metric(SuiteMetric('mine', 'mine', statistic={statistic}, run_value=lambda *a: 999))\n")
    result = run_cli("list", env=clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "shadow.py")))
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert " ".join(result.stderr.split()) == (
        f"error: the run value '{key}' is registered twice: by agent_eval.score.metric_registry and by "
        f"{tmp_path / 'shadow.py'}. Rename one of them, or load only one of the two plugins.")


def test_the_run_keys_a_plugin_may_not_take_cover_every_built_in_run_metric() -> None:
    from agent_eval.score.metric_registry import built_in_run_keys
    from agent_eval.score.metrics import RUN_METRICS

    assert set(RUN_METRICS) <= built_in_run_keys()


RESPONDS = '''
import asyncio

from agent_eval.run.agents import AgentKind, Reply, register_agent_kind


class Echo:
    name = "echo"

    async def respond(self, ctx):
        if ctx.case["id"] == "short":
            {raise_}
        return Reply("hello there my friend")


register_agent_kind(AgentKind("echo", lambda spec: spec.startswith("echo:"), lambda spec, base_dir, settings: Echo()))
'''
RESPONSE_RAISES = {**RAISES, "TimeoutError": 'raise TimeoutError("my own deadline")'}
RESPONSE_SHOWN = {**SHOWN, "TimeoutError": "TimeoutError: my own deadline"}


@pytest.mark.parametrize("extra", [(), ("--timeout", "30"), ("--workers", "2"), ("--workers", "2", "--timeout", "30")],
                         ids=["plain", "timeout", "workers", "workers-timeout"])
@pytest.mark.parametrize("kind", RESPONSE_RAISES)
def test_an_agent_kind_whose_agent_raises_fails_that_run_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              kind: str, extra: tuple[str, ...]) -> None:
    site = installed(tmp_path / "site", "raisekind", RESPONDS.format(raise_=RESPONSE_RAISES[kind]))
    monkeypatch.syspath_prepend(str(site))
    cases = write_suite(tmp_path / "suite", [{"id": "short", "query": "hi", "expect": {"contains": "hello"}},
                                             {"id": "long", "query": "hi", "expect": {"contains": "friend"}}], {})
    out = tmp_path / "reports"
    result = run_cli("run", "--cases", cases, "--agent", "echo:x", "--output-dir", out, *extra,
                     env=clean_env(PYTHONPATH=f"{site}:{clean_env().get('PYTHONPATH', '')}"))
    # It crashed the command with a traceback and no report (under --workers: 'a bug in agent-eval'); its own
    # TimeoutError was a TypeError formatting None, or with --timeout 'outran the timeout'.
    assert result.exit_code == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout and "bug in agent-eval" not in result.stderr
    report = _report(out)
    assert report["exit_code"] == 1
    short, long = report["cases"]
    assert (short["status"], long["status"]) == ("failed", "passed")
    (run,) = short["runs"]
    assert run["trace"]["stop_reason"] == "agent_error"
    assert run["trace"]["agent_error"] == RESPONSE_SHOWN[kind]
    assert 'raisekind.py", line' in run["trace"]["agent_error_traceback"]


@pytest.mark.parametrize("name", ["order", "select", "group", "Where", "TABLE", "Pass_At_1", "TOOL_RECALL", "Words"])
def test_a_metric_name_that_cannot_be_a_history_column_is_exit_2_naming_it(tmp_path: Path, name: str) -> None:
    # A keyword broke the history's CREATE/ALTER TABLE; a name equal to another but for case is the same column.
    (tmp_path / "names.py").write_text(
        "from agent_eval.score.metric_registry import SuiteMetric, mean, register_metric\n"
        "register_metric(SuiteMetric('words', 'words', statistic=mean('words'), run_value=lambda *a: 1))\n"
        f"register_metric(SuiteMetric({name!r}, 'x', statistic=mean('x_value'), run_value=lambda *a: 1))\n")
    result = run_cli("list", env=clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "names.py")))
    assert result.exit_code == 2 and "Traceback" not in result.stderr, result.stdout + result.stderr
    assert f"the metric {name!r}" in result.stderr and "run history" in result.stderr


def test_a_metric_name_sqlite_reads_as_a_column_is_registered(tmp_path: Path) -> None:
    (tmp_path / "names.py").write_text(
        "from agent_eval.score.metric_registry import SuiteMetric, mean, register_metric\n"
        "register_metric(SuiteMetric('key', 'key', statistic=mean('key_value'), run_value=lambda *a: 1))\n"
        "register_metric(SuiteMetric('order_total', 'o', statistic=mean('o_value'), run_value=lambda *a: 1))\n")
    result = run_cli("list", env=clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "names.py")))
    assert result.exit_code == 0, result.stdout + result.stderr


RANGED = '''
from agent_eval.flags import Setting, register_setting


def depth_range(value):
    raise ValueError("no range for " + str(value))


register_setting(Setting("depth", int, ("--depth",), env="AGENT_EVAL_DEPTH", suite_key="depth", check=depth_range))
'''


@pytest.mark.parametrize("given", [("flag", ("--depth", "2"), {}), ("env", (), {"AGENT_EVAL_DEPTH": "2"})])
def test_a_setting_whose_range_check_raises_is_exit_2_naming_the_plugin(tmp_path: Path, given: tuple) -> None:
    # A row's `check` is the plugin's code: it was called outside the guard, and the command was a traceback.
    _, extra, env = given
    (tmp_path / "ranged.py").write_text(RANGED)
    result = run_cli("run", "--cases", suite(tmp_path), "--output-dir", tmp_path / "out", "--no-html", *extra,
                     cwd=tmp_path, env=clean_env(AGENT_EVAL_PLUGINS="ranged.py", **env))
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert (f"the setting 'depth' of the plugin {tmp_path / 'ranged.py'} raised ValueError: no range for 2"
            in " ".join(result.stderr.split()))
    assert not (tmp_path / "out").exists()  # refused before anything ran


SHAPED = '''
import os
from agent_eval.flags import Setting, register_setting


def resolve_depth(row, given):
    if os.environ.get("BREAK") == "resolve":
        raise ValueError("no depth to resolve")
    given.values[row.name] = 2


def show_depth(settings):
    if os.environ.get("BREAK") == "show":
        raise KeyError("depth")
    if os.environ.get("BREAK") == "model":  # the report's own key: the run's model would read as the plugin's
        return {"depth": settings.get("depth"), "model": "not the model"}
    return ["depth", settings.get("depth")] if os.environ.get("BREAK") == "list" else {"depth": settings.get("depth")}


register_setting(Setting("depth", int, ("--depth",), resolve=resolve_depth, show=show_depth))
'''


@pytest.mark.parametrize(("broken", "says"), [
    ("resolve", "raised ValueError: no depth to resolve"), ("show", "raised KeyError: 'depth'"),
    ("list", "raised TypeError: its show returned a list, not a dict of the report's settings entries"),
    ("model", "raised ValueError: its show returned the key 'model' of agent-eval's own settings; a plugin's row "
              "shows keys of its own")])
def test_a_setting_whose_resolve_or_show_raises_is_exit_2_naming_the_plugin(tmp_path: Path, broken: str,
                                                                             says: str) -> None:
    # A row's `resolve` and `show` are the plugin's code, called outside the guard: a traceback.
    (tmp_path / "shaped.py").write_text(SHAPED)
    result = run_cli("run", "--cases", suite(tmp_path), "--output-dir", tmp_path / "out", "--no-html", cwd=tmp_path,
                     env=clean_env(AGENT_EVAL_PLUGINS="shaped.py", BREAK=broken))
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"the setting 'depth' of the plugin {tmp_path / 'shaped.py'} {says}" in " ".join(result.stderr.split())


def test_a_setting_with_its_own_resolve_and_show_is_in_the_report(tmp_path: Path) -> None:
    (tmp_path / "shaped.py").write_text(SHAPED)
    result = run_cli("run", "--cases", suite(tmp_path), "--output-dir", tmp_path / "out", "--no-html", cwd=tmp_path,
                     env=clean_env(AGENT_EVAL_PLUGINS="shaped.py"))
    assert result.exit_code == 0, result.stderr
    assert _report(tmp_path / "out")["settings"]["depth"] == 2


def test_a_setting_whose_check_is_a_predicate_is_exit_2_saying_what_a_check_returns(tmp_path: Path) -> None:
    # check=lambda v: v > 0 returned True for a good value, which read as the range's words: "--depth must be True."
    (tmp_path / "pred.py").write_text(RANGED.replace("check=depth_range", "check=lambda value: value > 0"))
    result = run_cli("run", "--cases", suite(tmp_path), "--output-dir", tmp_path / "out", "--no-html", "--depth", "2",
                     cwd=tmp_path, env=clean_env(AGENT_EVAL_PLUGINS="pred.py"))
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert ("raised TypeError: its check returned a bool, not None (in range) or the words after \"must be\""
            in " ".join(result.stderr.split()))


def test_a_row_registered_outside_a_plugins_load_is_named_the_programs_saying_why(tmp_path: Path) -> None:
    # A row registered from a thread the plugin started is no plugin's (the loading context is the loader's
    # thread's): "of the plugin the program" read as a plugin named so; the message says where the row came from.
    (tmp_path / "threaded.py").write_text(
        "import threading\nfrom agent_eval.flags import Setting, register_setting\n\n\ndef depth_range(value):\n"
        "    raise ValueError('no range')\n\n\ndef register(host):\n"
        "    thread = threading.Thread(target=register_setting,"
        " args=(Setting('depth', int, ('--depth',), check=depth_range),))\n    thread.start()\n    thread.join()\n")
    result = run_cli("run", "--cases", suite(tmp_path), "--output-dir", tmp_path / "out", "--no-html", "--depth", "2",
                     cwd=tmp_path, env=clean_env(AGENT_EVAL_PLUGINS="threaded.py"))
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert ("the setting 'depth' of the program (registered outside any plugin's register(host): from a thread of "
            "its own, or after the plugins were loaded) raised ValueError: no range") in " ".join(result.stderr.split())
