"""Plugins: found through the entry-point group `agent_eval.plugins` (a real one: a tiny dist-info on
sys.path) and AGENT_EVAL_PLUGINS; one `register` per table; a name held twice is exit 2 naming both
modules; a module named several ways is imported once; an output may not write the report, the journal or
the page; a format row of the wrong shape is exit 2 naming the plugin and the row."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.builders import clean_env, write_suite
from tests.cli import run_cli

AGENT = "def agent(task):\n    return 'hello there'\n"
CASES = [{"id": "greets", "query": "hi", "expect": {"contains": "hello"}}]


def installed(folder: Path, name: str, source: str) -> Path:
    """`name`.py and a dist-info declaring it in the group agent_eval.plugins: an installed plugin."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(source)
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[agent_eval.plugins]\n{name} = {name}\n")
    return folder


def suite(tmp_path: Path) -> Path:
    return write_suite(tmp_path / "suite", CASES, {"agent": "agent.py:agent"}, {"agent.py": AGENT})


MARKS = '''
from agent_eval.report.outputs import Output, register_output


def write(job):
    job.target.write_text(" ".join(c["id"] for c in job.report["cases"]))


register_output(Output("Marks", lambda cfg, report_path: report_path.with_suffix(".marks.txt"), write))
'''


def test_an_entry_point_plugin_adds_an_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "marksplug", MARKS)))
    out = tmp_path / "reports"
    result = run_cli("run", "--cases", suite(tmp_path), "--no-html", "--output-dir", out)
    assert result.exit_code == 0, result.stderr
    (marks,) = out.glob("*.marks.txt")
    assert marks.read_text() == "greets"
    assert f"Marks: {marks}" in result.stdout


CLASH = '''
from agent_eval.run.agents import AgentKind, register_agent_kind

register_agent_kind(AgentKind("cmd", lambda spec: spec.startswith("clash:"), lambda spec, base, settings: None))
'''


def test_a_name_already_held_is_exit_2_naming_both_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "clashplug", CLASH)))
    result = run_cli("validate", "--cases", suite(tmp_path))
    assert result.exit_code == 2
    assert "agent kind 'cmd' is registered twice: by agent_eval.run.agents and by clashplug" in result.stderr
    assert "Traceback" not in result.stderr


COUNTED = '''
import os
from pathlib import Path

with Path(os.environ["IMPORT_LOG"]).open("a") as log:
    log.write("imported\\n")
'''


def test_a_plugin_named_three_ways_is_imported_once(tmp_path: Path) -> None:
    (tmp_path / "counted.py").write_text(COUNTED)
    log = tmp_path / "imports.log"
    names = ",".join(["counted.py", "./counted.py", str(tmp_path / "counted.py")])
    result = run_cli("validate", "--cases", suite(tmp_path), cwd=tmp_path,
                     env=clean_env(AGENT_EVAL_PLUGINS=names, IMPORT_LOG=str(log)))
    assert result.exit_code == 0, result.stderr
    assert log.read_text() == "imported\n"


OWN_FILE = '''
from agent_eval.report.outputs import Output, register_output

register_output(Output("Clobber", lambda cfg, report_path: report_path.with_suffix(".{suffix}"),
                       lambda job: job.target.write_text("x")))
'''


@pytest.mark.parametrize(("suffix", "what"), [("json", "the JSON report"), ("jsonl", "the run's journal"),
                                              ("html", "the HTML page")])
def test_an_output_cannot_write_the_reports_own_files(tmp_path: Path, suffix: str, what: str) -> None:
    (tmp_path / "clobber.py").write_text(OWN_FILE.format(suffix=suffix))
    out = tmp_path / "reports"
    result = run_cli("run", "--cases", suite(tmp_path), "--output-dir", out, cwd=tmp_path,
                     env=clean_env(AGENT_EVAL_PLUGINS="clobber.py"))
    assert result.exit_code == 2
    assert f"the output 'Clobber' of {tmp_path / 'clobber.py'} would write" in result.stderr
    assert f"which is {what}" in result.stderr and "Traceback" not in result.stderr
    (report,) = out.glob("*.json")
    assert orjson.loads(report.read_bytes())["cases"][0]["id"] == "greets"  # never overwritten


BAD_FORMAT = '''
from agent_eval.ingest.formats import Format, register_format

register_format("broken", Format(cases=lambda source, logs: ["not", "a", "tuple"]))
'''


def test_a_format_of_the_wrong_shape_is_exit_2_naming_the_plugin_and_the_row(tmp_path: Path) -> None:
    (tmp_path / "badformat.py").write_text(BAD_FORMAT)
    (tmp_path / "source.txt").write_text("anything\n")
    result = run_cli("import", "broken", tmp_path / "source.txt", "--out", tmp_path / "cases.json", cwd=tmp_path,
                     env=clean_env(AGENT_EVAL_PLUGINS="badformat.py"))
    assert result.exit_code == 2
    assert f"the format 'broken' of the plugin {tmp_path / 'badformat.py'} returned list" in result.stderr
    assert "Traceback" not in result.stderr


WORDS = '''
from agent_eval.flags import Setting, register_setting
from agent_eval.score.metric_registry import SuiteMetric, mean, register_metric


def answer_words(case, trace, checks, success, cost_usd):
    return len((trace.get("final_answer") or "").split())


register_metric(SuiteMetric("answer_words", "answer words", lower_is_better=True, fmt="number",
                            statistic=mean("answer_words"), interval=True, run_value=answer_words))
register_setting(Setting("tone", str, ("--tone",), env="AGENT_EVAL_TONE", suite_key="tone", default="plain",
                         help="The tone the agent is asked for."))
'''
TALKER = '''
def agent(task):
    return "hello there" if task.case_id == "short" else "hello there my friend"
'''
TWO_CASES = [{"id": "short", "query": "hi", "expect": {"contains": "hello"}},
             {"id": "long", "query": "hi", "expect": {"contains": "hello"}}]


def test_an_entry_point_plugin_adds_a_metric_row_and_a_setting_row(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "wordsplug", WORDS)))
    cases = write_suite(tmp_path / "suite", TWO_CASES, {"agent": "agent.py:agent"}, {"agent.py": TALKER})
    out = tmp_path / "reports"
    helped = run_cli("run", "--help")
    assert helped.exit_code == 0 and "--tone" in helped.stdout and "The tone the agent is asked for." in helped.stdout
    result = run_cli("run", "--cases", cases, "-k", "2", "-v", "--output-dir", out, "--tone", "formal")
    assert result.exit_code == 0, result.stderr
    (path,) = out.glob("*.json")
    report = orjson.loads(path.read_bytes())
    # Runs: short 2 words twice, long 4 words twice; the mean is (2 + 2 + 4 + 4) / 4 = 3.0. The interval
    # resamples the 2 cases: a draw of short twice gives 2.0, long twice 4.0, so [2.0, 4.0].
    assert [r["metrics"]["answer_words"] for c in report["cases"] for r in c["runs"]] == [2, 2, 4, 4]
    assert report["summary"]["answer_words"] == 3.0
    assert report["summary"]["ci"]["answer_words"] == [2.0, 4.0]
    assert "More metrics" in result.stdout and "answer words" in result.stdout and "[2.000, 4.000]" in result.stdout
    page = path.with_suffix(".html").read_text()
    # The page draws the rows embedded beside the report: the plugin's in its own card, after the built-in ones.
    assert ('{"name":"answer_words","label":"answer words","fmt":"number","direction":"lower",'
            '"card":"More metrics"}]' in page)
    gated = run_cli("compare", path, path, "--gate", "answer_words")
    assert gated.exit_code == 0, gated.stderr
    assert "answer words" in gated.stdout
    # The setting: its value and source in `settings`; --resume keeps the run's value over the environment's.
    assert (report["settings"]["tone"], report["settings"]["sources"]["tone"]) == ("formal", "flag")
    resumed = run_cli("run", "--resume", report["run_id"], "--output-dir", out,
                      env=clean_env(AGENT_EVAL_TONE="casual"))
    assert resumed.exit_code == 0, resumed.stderr
    again = orjson.loads(path.read_bytes())
    assert again["settings"]["tone"] == "formal"
    fresh = run_cli("run", "--cases", cases, "--output-dir", tmp_path / "fresh",
                    env=clean_env(AGENT_EVAL_TONE="casual"))
    (fresh_path,) = (tmp_path / "fresh").glob("*.json")
    assert orjson.loads(fresh_path.read_bytes())["settings"]["tone"] == "casual", fresh.stderr


WORDS_PER_SUCCESS = '''
from agent_eval.score.metric_registry import SuiteMetric, ratio, register_metric


def answer_words(case, trace, checks, success, cost_usd):
    return len((trace.get("final_answer") or "").split())


register_metric(SuiteMetric("words_per_success", "words per success", lower_is_better=True, fmt="number",
                            statistic=ratio("answer_words", "success"), interval=True, run_value=answer_words))
'''


def test_a_plugin_metric_may_be_a_ratio_of_run_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "ratioplug", WORDS_PER_SUCCESS)))
    cases = [TWO_CASES[0], {**TWO_CASES[1], "expect": {"contains": "goodbye"}}]  # "long" always fails
    suite_file = write_suite(tmp_path / "suite", cases, {"agent": "agent.py:agent"}, {"agent.py": TALKER})
    out = tmp_path / "reports"
    result = run_cli("run", "--cases", suite_file, "-k", "2", "--output-dir", out, "--otel", tmp_path / "runs.jsonl")
    assert result.exit_code == 1, result.stderr  # "long" failed
    (path,) = out.glob("*.json")
    summary = orjson.loads(path.read_bytes())["summary"]
    # words 2, 2 (short, passed) and 4, 4 (long, failed): (2 + 2 + 4 + 4) / (1 + 1 + 0 + 0) = 12 / 2 = 6.0
    assert summary["words_per_success"] == 6.0
    # Per case (words, successes): short (4, 2), long (8, 0). A draw of short twice gives 8 / 4 = 2.0, one of
    # each 12 / 2 = 6.0, long twice 16 / 0 is undefined and left out: about 1/3 of the rows are 2.0, so
    # the 2.5th and 97.5th percentiles are 2.0 and 6.0.
    assert summary["ci"]["words_per_success"] == [2.0, 6.0]
    # Each run's span carries the row's run value as an evaluation result, as it does the built-in ones.
    words = [a["value"]["doubleValue"] for line in (tmp_path / "runs.jsonl").read_bytes().splitlines()
             for event in orjson.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["events"]
             if {"key": "gen_ai.evaluation.name", "value": {"stringValue": "answer_words"}} in event["attributes"]
             for a in event["attributes"] if a["key"] == "gen_ai.evaluation.score.value"]
    assert sorted(words) == [2.0, 2.0, 4.0, 4.0]
    gated = run_cli("compare", path, path, "--gate", "words_per_success")
    assert gated.exit_code == 0, gated.stderr
    assert "words per success" in gated.stdout


def test_a_metric_row_whose_statistic_cannot_work_is_refused() -> None:
    from agent_eval.errors import ConfigError
    from agent_eval.score.metric_registry import SuiteMetric, pass_count, percentile, register_metric

    with pytest.raises(ConfigError, match="reads a run value"):
        register_metric(SuiteMetric("my_pass", "my pass", statistic=pass_count("at_1")))
    with pytest.raises(ConfigError, match="a percentile has no interval"):
        register_metric(SuiteMetric("my_p90", "my p90", statistic=percentile("latency_s", 90), interval=True))


def _words(case: object, trace: object, checks: object, success: bool, cost_usd: float | None) -> int:
    return 1


@pytest.mark.parametrize(("fields", "problem"), [
    ({"name": "p90-words"}, "its name must be letters, digits and _ (it is a key of the summary, a column of the "
                            "history and the NAME of --gate NAME): rename it."),
    ({"statistic": "mean"}, "its statistic must be built with mean(KEY), share(KEY), ratio(KEY, DEN), total(KEY), "
                            "per_success(KEY) or percentile(KEY, Q), not 'mean'."),
    ({"kind": "median"}, "its statistic must be built with mean(KEY)"),
    ({"q": 150}, "a percentile's Q is a number from 0 to 100, not 150."),
    ({"section": "nope"}, "section must be one of 'outcome', 'trajectory', 'safety', 'cost', 'latency', 'more', "
                          "not 'nope'."),
    ({"fmt": "pct"}, "fmt must be one of 'rate', 'number', 'seconds', 'count', 'usd', not 'pct'."),
    ({"run_value": 3}, "run_value must be a function (case, trace, checks, success, cost_usd), not 3."),
    ({"gate_rank": 6}, "gate_rank is for agent-eval's own rows (the metrics gated when no --gate is given); a "
                       "plugin's metric is gated with --gate words_p90: leave gate_rank out."),
])
def test_a_metric_row_with_an_impossible_field_is_refused_naming_it(fields: dict, problem: str) -> None:
    from agent_eval.errors import ConfigError
    from agent_eval.plugins import loading
    from agent_eval.score.metric_registry import Statistic, SuiteMetric, percentile, register_metric

    statistic = fields.pop("statistic", None) or (
        Statistic(fields.pop("kind"), "words") if "kind" in fields else percentile("words", fields.pop("q", 90)))
    row = SuiteMetric(**{"name": "words_p90", "label": "words p90", "statistic": statistic, "run_value": _words,
                         **fields})
    with pytest.raises(ConfigError) as refused, loading("words_plugin"):  # as the host loads the plugin
        register_metric(row)
    assert str(refused.value).startswith(f"the metric {row.name!r} of words_plugin: {problem}")


TONE_OUTPUT = '''
from agent_eval.flags import Setting, register_setting
from agent_eval.report.outputs import Output, flag, register_output

register_setting(Setting("tone_file", str, ("--tone-file",), env="AGENT_EVAL_TONE_FILE", suite_key="tone_file",
                         commands=("run", "rescore", "score"), help="Where the tone output writes."))


def target(cfg, report_path):
    name = flag("tone_file")(cfg, report_path)
    return None if name is None else report_path.with_name(name)


register_output(Output("Tone", target, lambda job: job.target.write_text(job.report["run_id"])))
'''


def test_a_plugin_outputs_own_setting_reaches_it_under_run_rescore_and_score(tmp_path: Path) -> None:
    # flag(name) read only RunConfig's attributes, and rescore handed its outputs no plugin setting at all:
    # the output was silently never written.
    (tmp_path / "tone.py").write_text(TONE_OUTPUT)
    out = tmp_path / "reports"
    for how, extra, env in (("flag", ("--tone-file", "by-flag.txt"), {}),
                            ("env", (), {"AGENT_EVAL_TONE_FILE": "by-env.txt"})):
        environ = clean_env(AGENT_EVAL_PLUGINS="tone.py", **env)
        done = run_cli("run", "--cases", suite(tmp_path), "--output-dir", out, "--no-html", *extra, cwd=tmp_path,
                       env=environ)
        assert done.exit_code == 0, done.stdout + done.stderr
        report = max(out.glob("*.json"), key=lambda p: p.stat().st_mtime)
        written = out / (extra[1] if extra else "by-env.txt")
        assert written.read_text() == report.stem, how
        written.unlink()
        done = run_cli("rescore", report, "--no-judge", *extra, cwd=tmp_path, env=environ)
        assert done.exit_code == 0, done.stdout + done.stderr
        rescored = max(out.glob("*.json"), key=lambda p: p.stat().st_mtime)
        assert rescored != report and written.read_text() == rescored.stem, how
        written.unlink()
        done = run_cli("score", report, "--format", "agent-eval", "--cases", suite(tmp_path), "--output-dir", out,
                       "--no-judge", *extra, cwd=tmp_path, env=environ)
        assert done.exit_code == 0, done.stdout + done.stderr
        assert written.exists(), how


RUN_ONLY_TONE = TONE_OUTPUT.replace('commands=("run", "rescore", "score"), ', "")


def test_a_plugin_outputs_run_setting_reaches_it_under_rescore_from_the_environment_and_the_suite(
        tmp_path: Path) -> None:
    # A row of `run` only (a Setting's default commands) has no flag on rescore, but its environment variable
    # and suite key still set it there (rescore resolved only its own rows: the output was silently not written).
    (tmp_path / "tone.py").write_text(RUN_ONLY_TONE)
    cases = write_suite(tmp_path / "suite", CASES, {"agent": "agent.py:agent", "tone_file": "by-suite.txt"},
                        {"agent.py": AGENT})
    out = tmp_path / "reports"
    done = run_cli("run", "--cases", cases, "--output-dir", out, "--no-html", cwd=tmp_path,
                   env=clean_env(AGENT_EVAL_PLUGINS="tone.py"))
    assert done.exit_code == 0, done.stdout + done.stderr
    (report,) = out.glob("*.json")
    (out / "by-suite.txt").unlink()
    for env, written in (({}, "by-suite.txt"), ({"AGENT_EVAL_TONE_FILE": "by-env.txt"}, "by-env.txt")):
        done = run_cli("rescore", report, "--no-judge", cwd=tmp_path,
                       env=clean_env(AGENT_EVAL_PLUGINS="tone.py", **env))
        assert done.exit_code == 0, done.stdout + done.stderr
        rescored = max(out.glob("*.json"), key=lambda p: p.stat().st_mtime)
        assert (out / written).read_text() == rescored.stem, written


SCORE_ONLY_TONE = TONE_OUTPUT.replace('commands=("run", "rescore", "score")', 'commands=("score",)')


def test_a_plugin_setting_of_score_only_reaches_its_output_under_score(tmp_path: Path) -> None:
    # score resolves run's rows: the flag of a row naming only score was taken on its command line and dropped.
    out = tmp_path / "reports"
    done = run_cli("run", "--cases", suite(tmp_path), "--output-dir", out, "--no-html", cwd=tmp_path)
    assert done.exit_code == 0, done.stdout + done.stderr
    (report,) = out.glob("*.json")
    (tmp_path / "tone.py").write_text(SCORE_ONLY_TONE)
    done = run_cli("score", report, "--format", "agent-eval", "--cases", suite(tmp_path), "--output-dir", out,
                   "--no-judge", "--no-html", "--tone-file", "by-flag.txt", cwd=tmp_path,
                   env=clean_env(AGENT_EVAL_PLUGINS="tone.py"))
    assert done.exit_code == 0, done.stdout + done.stderr
    scored = max(out.glob("*.json"), key=lambda p: p.stat().st_mtime)
    assert (out / "by-flag.txt").read_text() == scored.stem


SIZES = '''
from agent_eval.flags import Setting, register_setting

register_setting(Setting("sizes", int, ("--size",), env="AGENT_EVAL_SIZE", suite_key="sizes", repeatable=True))
'''


@pytest.mark.parametrize(("env", "block", "shown"), [
    ({"AGENT_EVAL_SIZE": "12"}, {}, [12]), ({}, {"sizes": [3, "4"]}, [3, 4]), ({}, {"sizes": 5}, [5])])
def test_a_repeatable_plugin_setting_from_the_environment_or_the_suite_is_a_list_of_its_type(
        tmp_path: Path, env: dict, block: dict, shown: list) -> None:
    # An environment variable's text was split into its characters (("1", "2") for 12), and no item was
    # converted to the row's type.
    (tmp_path / "sizes.py").write_text(SIZES)
    cases = write_suite(tmp_path / "suite", CASES, {"agent": "agent.py:agent", **block}, {"agent.py": AGENT})
    done = run_cli("run", "--cases", cases, "--output-dir", tmp_path / "out", "--no-html", cwd=tmp_path,
                   env=clean_env(AGENT_EVAL_PLUGINS="sizes.py", **env))
    assert done.exit_code == 0, done.stdout + done.stderr
    (report,) = (tmp_path / "out").glob("*.json")
    assert orjson.loads(report.read_bytes())["settings"]["sizes"] == shown


def test_a_repeatable_plugin_setting_with_an_item_of_the_wrong_type_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "sizes.py").write_text(SIZES)
    cases = write_suite(tmp_path / "suite", CASES, {"agent": "agent.py:agent", "sizes": [3, "big"]},
                        {"agent.py": AGENT})
    done = run_cli("run", "--cases", cases, "--output-dir", tmp_path / "out", "--no-html", cwd=tmp_path,
                   env=clean_env(AGENT_EVAL_PLUGINS="sizes.py"))
    assert done.exit_code == 2 and "Traceback" not in done.stderr
    assert "the setting 'sizes' (the suite's sizes) must be an integer, not 'big'." in done.stderr
