"""agent_eval/flags: a setting is one row, and every command's options, `Flags` and the --resume rule are read
from the rows."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import typer

from agent_eval.cli import app
from agent_eval.flags import DEFAULTS, Flags, Setting, all_settings, setting
from agent_eval.flags.rows import BUILT_IN
from tests.builders import clean_env, write_suite
from tests.cli import run_cli


def test_flags_hold_the_rows_values_and_refuse_a_name_no_row_holds() -> None:
    flags = Flags({"repeat"}, repeat=3, filter=["a", "b"], output_dir="out", no_judge=True)
    assert (flags.count("repeat"), flags.texts("filter"), flags.path("output_dir"), flags.is_on("no_judge")) == (
        3, ("a", "b"), Path("out"), True)
    assert flags.given("repeat") and not flags.given("filter")
    # Not given: None, False or (), or an eager option's own default.
    assert (flags.text("model"), flags.is_on("quiet"), flags.texts("gate"), flags.path("cases")) == (
        None, False, (), DEFAULTS.cases)
    again = flags.replace(repeat=None, model="m")
    assert (again.count("repeat"), again.text("model"), again.explicit) == (None, "m", frozenset({"repeat"}))
    with pytest.raises(TypeError, match="unknown setting repeats"):
        Flags(repeats=3)
    with pytest.raises(TypeError, match="'repeat' is a int"):
        flags.text("repeat")
    with pytest.raises(KeyError):
        flags.value("repeats")


def test_each_command_has_an_option_for_each_row_that_names_it_in_the_table_s_order() -> None:
    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        shown = [p.opts[0] for p in command.params if p.opts[0].startswith("--") and p.opts[0] != "--help"
                 and p.param_type_name == "option"]
        expected = [row.flags[0] for row in all_settings() if name in row.commands and row.flags]
        assert shown == expected, name


def test_a_rows_help_and_default_may_differ_by_command() -> None:
    cases = setting("cases")
    assert (cases.command_default.get("run", cases.unset()), cases.command_default["rescore"]) == (
        DEFAULTS.cases, None)
    assert "the report's cases_file" in run_cli("rescore", "--help", env={**clean_env(), "COLUMNS": "1000"}).stdout
    assert "[default: cases/test_cases.json]" in run_cli("run", "--help",
                                                          env={**clean_env(), "COLUMNS": "1000"}).stdout


def test_flags_of_a_command_read_its_own_default() -> None:
    # rescore, label and calibrate default --cases to the report's cases_file (None); run to the case file.
    assert Flags(command="rescore").path("cases") is None
    assert Flags(command="run").path("cases") == Flags().path("cases") == DEFAULTS.cases
    assert Flags(command="history").path("output_dir") == DEFAULTS.output_dir
    assert Flags(command="rescore").replace(quiet=True).path("cases") is None  # replace keeps the command


def test_an_eager_option_s_default_is_shown_once() -> None:
    # typer shows an eager row's default itself: `plan --help` said "(default 0.05). [default: 0.05]".
    for command in ("plan", "calibrate", "history"):
        shown = run_cli(command, "--help", env={**clean_env(), "COLUMNS": "1000"}).stdout
        assert not [line for line in shown.splitlines() if "(default" in line and "[default:" in line], shown


def test_the_resume_rule_of_a_plugin_s_older_spelling() -> None:
    assert Setting("a").rule == "renewed" and Setting("a", resume=False).rule == "command"
    assert Setting("a", resume="kept").rule == "kept"
    rules = {row.name: row.rule for row in BUILT_IN}
    assert [n for n, r in rules.items() if r == "kept"] == [
        "cases", "filter", "repeat", "threshold", "no_judge", "agent", "model", "base_url", "judge_model", "no_cache",
        "max_steps", "timeout", "user", "user_model"]
    assert [n for n, r in rules.items() if r == "renewed"] == ["judge_timeout", "max_cost", "record", "replay",
                                                                "replay_miss"]


WINDOW = '''
from agent_eval.flags import Setting, register_setting

register_setting(Setting("window", int, ("--window",), commands=("history", "list"),
                         help="How many runs the window holds."))
'''


def test_a_plugin_s_setting_is_an_option_of_any_command_it_names(tmp_path: Path) -> None:
    (tmp_path / "window.py").write_text(WINDOW)
    env = {**clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "window.py")), "COLUMNS": "1000"}
    for command in ("history", "list"):
        shown = run_cli(command, "--help", env=env)
        assert shown.exit_code == 0 and "--window" in shown.stdout and "How many runs the window holds." in shown.stdout
    assert "--window" not in run_cli("history", "--help", env={**clean_env(), "COLUMNS": "1000"}).stdout


SWITCHES = '''
from pathlib import Path

import orjson

from agent_eval.flags import Setting, register_setting

register_setting(Setting("loud", bool, ("--loud",), help="renewed, a switch"))
register_setting(Setting("tag", str, ("--tag",), repeatable=True, help="renewed, repeatable"))
register_setting(Setting("fixture", Path, ("--fixture",), resume="kept", shown="text", help="kept, a path"))
register_setting(Setting("label", str, ("--label",), repeatable=True, resume="kept", help="kept, repeatable"))
'''
HELLO = 'def agent(task):\n    return "hello"\n'


def one_case_suite(folder: Path) -> Path:
    """A one-case suite whose Python agent passes."""
    return write_suite(folder, [{"id": "a", "query": "hi", "expect": {"contains": "hello"}}],
                       {"agent": "agent.py:agent"}, {"agent.py": HELLO})


def test_resume_keeps_a_plugin_s_switch_and_repeatable_flag_and_takes_a_kept_one_given_again(tmp_path: Path) -> None:
    (tmp_path / "switches.py").write_text(SWITCHES)
    cases = one_case_suite(tmp_path)
    out = tmp_path / "reports"
    env = clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "switches.py"))
    first = run_cli("run", "--cases", cases, "--output-dir", out, "-q", "--no-html", "--loud", "--tag", "a",
                    "--tag", "b", "--fixture", "fx", "--label", "z", env=env)
    assert first.exit_code == 0, first.stderr
    (path,) = out.glob("*.json")
    shown = ("loud", "tag", "fixture", "label")
    stored = {k: orjson.loads(path.read_bytes())["settings"][k] for k in shown}
    assert stored == {"loud": True, "tag": ["a", "b"], "fixture": "fx", "label": ["z"]}
    # Renewed rows not given again: the run's values (a switch left off is False, a repeatable flag (), not None).
    # Kept rows given again with the values the run used: no conflict (a path as a path, a list as a list).
    resumed = run_cli("run", "--resume", path.stem, "--output-dir", out, "-q", "--fixture", "fx", "--label", "z",
                      env=env)
    assert resumed.exit_code == 0, resumed.stderr
    assert {k: orjson.loads(path.read_bytes())["settings"][k] for k in shown} == stored
    clash = run_cli("run", "--resume", path.stem, "--output-dir", out, "--label", "y", env=env)
    assert clash.exit_code == 2 and "--label y conflicts with run" in clash.stderr and "which used z" in clash.stderr


PATHS = '''
from pathlib import Path

from agent_eval.flags import Setting, register_setting

register_setting(Setting("fixture", Path, ("--fixture",), help="a path shown as it is"))
register_setting(Setting("extra_dir", Path, ("--extra-dir",), repeatable=True, help="repeatable paths"))
'''


def test_a_plugin_s_path_setting_is_shown_as_text(tmp_path: Path) -> None:
    (tmp_path / "paths.py").write_text(PATHS)
    cases = one_case_suite(tmp_path)
    out = tmp_path / "reports"
    env = clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "paths.py"))
    result = run_cli("run", "--cases", cases, "--output-dir", out, "-q", "--no-html", "--fixture", "fx",
                     "--extra-dir", "d1", "--extra-dir", "d2", env=env)
    assert result.exit_code == 0 and "Traceback" not in result.stderr, result.stderr
    (path,) = out.glob("*.json")
    settings = orjson.loads(path.read_bytes())["settings"]
    assert (settings["fixture"], settings["extra_dir"]) == ("fx", ["d1", "d2"])


SHOUT = '''
from agent_eval.flags import Setting, register_setting
from agent_eval.run.config import resolve_value


def loud(row, given):
    given.values[row.name] = resolve_value(row, given).upper()


register_setting(Setting("shout", str, ("--shout",), env="AGENT_EVAL_SHOUT", default="hey", resolve=loud,
                         show=lambda cfg: {"shout": cfg.get("shout"), "shout_chars": len(cfg.get("shout"))}))
'''


def test_a_plugins_row_may_bring_its_own_resolver_and_settings_entries(tmp_path: Path) -> None:
    # The built-in rows' resolvers and shows are the rows' own `resolve` and `show`: a plugin's row takes the same.
    (tmp_path / "shout.py").write_text(SHOUT)
    cases = one_case_suite(tmp_path)
    out = tmp_path / "reports"
    for extra, env, expected in ((("--shout", "hello"), {}, ("HELLO", 5, "flag")),
                                 ((), {"AGENT_EVAL_SHOUT": "psst"}, ("PSST", 4, "env")),
                                 ((), {}, ("HEY", 3, "default"))):
        result = run_cli("run", "--cases", cases, "--output-dir", out, "-q", "--no-html", *extra,
                         env=clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "shout.py"), **env))
        assert result.exit_code == 0 and "Traceback" not in result.stderr, result.stderr
        path = max(out.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        settings = orjson.loads(path.read_bytes())["settings"]
        assert (settings["shout"], settings["shout_chars"], settings["sources"]["shout"]) == expected
        assert list(settings)[-3:-1] == ["shout", "shout_chars"]  # after the rows (prices: the run adds them)
        path.unlink()


@pytest.mark.parametrize(("row", "problem"), [
    (Setting("my-tone", str, ("--tone",)), "its name must be a Python name"),
    (Setting("tone", dict, ("--tone",)), "its type must be str, int, float, bool or Path (repeatable=True for "
                                          "several values), not dict"),
    (Setting("tone", "str", ("--tone",)), "its type must be str, int, float, bool or Path (repeatable=True for "  # type: ignore[arg-type]
                                           "several values), not the text 'str'"),
    (Setting("tone", str, ("tone",)), "a flag starts with - or -- (\"--tone\"), not 'tone'"),
    (Setting("loud", bool, ("--loud",), default=True), "a switch (type bool) is off until its flag is given, so its "
                                                        "default is False (its environment variable or suite key may "
                                                        "turn it on); for one that is on by default, name the flag "
                                                        "--no-X."),
    (Setting("tone", str, ("--tone",), resume="keep"), "resume must be \"kept\", \"renewed\", \"command\", True or "  # type: ignore[arg-type]
                                                       "False, not 'keep'"),
    (Setting("tone", str, ("--tone",), shown="secret"), "shown must be one of 'value', 'text', 'url', 'urls', "  # type: ignore[arg-type]
                                                        "'hidden', not 'secret'"),
    (Setting("tone", str, ("--tone",), show={"tone": "loud"}), "check, resolve and show take a function "  # type: ignore[arg-type]
                                                               "(check(value), resolve(row, given), show(settings)) "
                                                               "or None."),
    # --help was taken by the setting: `run --help` ran the suite.
    (Setting("tone", bool, ("--help",)), "--help is every command's own flag (it shows the command's help): "
                                         "give the setting another flag"),
    # Flags(command=...) names the command: a setting of that name could not be given.
    (Setting("command", str, ("--command",)), "'command' is a name the flags hold for themselves (their "
                                              "command, the flags typed): rename it"),
    # An unknown key of typer.Option was a traceback of every command.
    (Setting("tone", str, ("--tone",), option={"bogus": 1}), "option takes allow_dash, case_sensitive, clamp, "
                                                             "dir_okay, exists, file_okay, hidden, max, metavar, min, "
                                                             "readable, resolve_path, rich_help_panel, show_default, "
                                                             "writable (more of the flag's typer.Option), not 'bogus'"),
])
def test_a_setting_row_that_cannot_work_is_refused_naming_the_field(row: Setting, problem: str) -> None:
    from agent_eval.errors import ConfigError
    from agent_eval.flags import register_setting
    from agent_eval.plugins import loading

    with pytest.raises(ConfigError) as refused, loading("tone_plugin"):  # as the host loads the plugin
        register_setting(row)
    assert f"the setting {row.name!r} of tone_plugin: {problem}" in str(refused.value)


@pytest.mark.parametrize("row", [
    Setting("tone", str, ("--tone",), attr="model"),  # settings.model showed the plugin's value, not the model
    Setting("judge", bool, ("--judge",)),  # the key of --no-judge's row in settings
    Setting("sources", str, ("--sources",)),  # the block's own key, which no row owns
])
def test_a_setting_whose_report_key_a_built_in_one_holds_is_refused(row: Setting) -> None:
    from agent_eval.errors import ConfigError
    from agent_eval.flags import register_setting

    with pytest.raises(ConfigError) as refused:  # outside any plugin's load: the program's own row
        register_setting(row)
    assert str(refused.value) == (f"the setting {row.key!r} is registered twice: by agent_eval.flags.rows and by "
                                  "the program. Rename one of them, or load only one of the two plugins.")


@pytest.mark.parametrize(("row", "args", "says"), [
    ("Setting('tone', str, ('--tone',), commands=('runn',))", ("run", "--help"),
     "the setting 'tone' of {plugin} names the command 'runn', which agent-eval does not have; its commands are "
     "calibrate, compare, history, import, label, list, plan, rescore, run, score, scripted-model, validate, view."),
    ("Setting('base_report', str, ('--br',), commands=('compare',))", ("compare", "--help"),
     "the setting 'base_report' of {plugin} has the name of an argument of `compare`; rename the setting."),
    ("Setting('tone', str, ('--model',))", ("run", "--help"),
     "the setting 'tone' of {plugin} wants the flag --model, which `run` already has; give the setting another flag."),
])
def test_a_setting_for_no_command_or_named_as_an_argument_is_exit_2(tmp_path: Path, row: str,
                                                                    args: tuple[str, ...], says: str) -> None:
    (tmp_path / "bad.py").write_text(f"from agent_eval.flags import Setting, register_setting\n"
                                     f"register_setting({row})\n")
    result = run_cli(*args, env=clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "bad.py")))
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert " ".join(result.stderr.split()) == f"error: {says.format(plugin=tmp_path / 'bad.py')}"


COUNT = '''
from agent_eval.flags import Setting, register_setting

register_setting(Setting("budget", int, ("--budget",), env="AGENT_EVAL_BUDGET", suite_key="budget"))
'''


@pytest.mark.parametrize(("where", "named"), [("env", "AGENT_EVAL_BUDGET"), ("suite", "the suite's budget")])
def test_a_plugin_setting_of_the_wrong_type_names_where_it_came_from(tmp_path: Path, where: str, named: str) -> None:
    (tmp_path / "count.py").write_text(COUNT)
    cases = one_case_suite(tmp_path)
    if where == "suite":
        cases = write_suite(tmp_path, [{"id": "a", "query": "hi", "expect": {"contains": "hello"}}],
                            {"agent": "agent.py:agent", "budget": "lots"})
    env = clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "count.py"), **({"AGENT_EVAL_BUDGET": "lots"} if where == "env"
                                                                     else {}))
    result = run_cli("run", "--cases", cases, "--output-dir", tmp_path / "reports", env=env)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"error: the setting 'budget' ({named}) must be an integer, not 'lots'."


def test_a_plugin_setting_s_suite_key_is_read_not_refused_as_an_unknown_field(tmp_path: Path) -> None:
    (tmp_path / "count.py").write_text(COUNT.replace('suite_key="budget"', 'suite_key="defaults.budget"'))
    one_case_suite(tmp_path)
    cases = write_suite(tmp_path, [{"id": "a", "query": "hi", "expect": {"contains": "hello"}}],
                        {"agent": "agent.py:agent", "defaults": {"repeat": 1, "budget": 5}})
    env = clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "count.py"))
    assert run_cli("validate", "--cases", cases, env=env).exit_code == 0
    result = run_cli("run", "--cases", cases, "--output-dir", tmp_path / "reports", "--no-html", env=env)
    assert result.exit_code == 0, result.stderr
    (path,) = (tmp_path / "reports").glob("*.json")
    settings = orjson.loads(path.read_bytes())["settings"]
    assert (settings["budget"], settings["sources"]["budget"]) == (5, "suite")
    # Without the plugin the key is unknown, as any other: a typo must not switch a rule off.
    refused = run_cli("validate", "--cases", cases)
    assert refused.exit_code == 2 and "field 'suite.defaults.budget': unknown field" in refused.stderr



def test_a_plugin_setting_reading_a_key_of_the_suite_block_leaves_it_checked(tmp_path: Path) -> None:
    (tmp_path / "count.py").write_text(COUNT.replace('suite_key="budget"', 'suite_key="max_steps"'))
    one_case_suite(tmp_path)
    cases = write_suite(tmp_path, [{"id": "a", "query": "hi", "expect": {"contains": "hello"}}],
                        {"agent": "agent.py:agent", "max_steps": 0})
    result = run_cli("validate", "--cases", cases, env=clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "count.py")))
    assert result.exit_code == 2 and "field 'suite.max_steps'" in result.stderr, result.stderr


def test_resume_without_the_plugin_whose_setting_the_run_had_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "switches.py").write_text(SWITCHES)
    cases = one_case_suite(tmp_path)
    out = tmp_path / "reports"
    first = run_cli("run", "--cases", cases, "--output-dir", out, "-q", "--no-html", "--tag", "a",
                    env=clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "switches.py")))
    assert first.exit_code == 0, first.stderr
    (path,) = out.glob("*.json")
    # Without the plugin the resumed report silently lost its settings (and would lose its metrics).
    resumed = run_cli("run", "--resume", path.stem, "--output-dir", out, "-q", env=clean_env())
    assert resumed.exit_code == 2 and "Traceback" not in resumed.stderr
    assert " ".join(resumed.stderr.split()) == (
        f"error: run {path.stem} was played with the settings fixture, label, loud, tag of a plugin that is not "
        "loaded now; load it as the run did (its installed package, or AGENT_EVAL_PLUGINS) and resume again.")
    assert orjson.loads(path.read_bytes())["settings"]["tag"] == ["a"]  # the report is as it was


def test_a_plugin_setting_s_default_is_in_its_help(tmp_path: Path) -> None:
    (tmp_path / "keys.py").write_text(
        "from agent_eval.flags import Setting, register_setting\n"
        "register_setting(Setting('tone', str, ('--tone',), default='plain', help='The tone.'))\n"
        "register_setting(Setting('mood', str, ('--mood',), help='No default.'))\n"
        "register_setting(Setting('style', str, ('--style',), default='[b]x', help='[red]Loud[/red] or quiet.'))\n")
    shown = run_cli("run", "--help", env={**clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "keys.py")),
                                          "COLUMNS": "1000"}).stdout
    # As the built-in rows write theirs (typer shows none for an option that is not eager): it showed none.
    assert "The tone. (default plain)" in shown and "No default. " in shown and "No default. (default" not in shown
    # A plugin's brackets are its text, not Rich markup for typer's help: "[red]Loud[/red]" showed "Loud".
    assert "[red]Loud[/red] or quiet. (default [b]x)" in shown


TYPED = '''
from agent_eval.flags import Setting, register_setting

register_setting(Setting("loud", bool, ("--loud",), env="AGENT_EVAL_LOUD"))
register_setting(Setting("patience", int, ("--patience",), suite_key="patience", default=1))
'''


@pytest.mark.parametrize(("env", "block", "says"), [
    # An environment variable's text for a switch: 'maybe' was silently off.
    ({"AGENT_EVAL_LOUD": "maybe"}, {}, "the setting 'loud' (AGENT_EVAL_LOUD) must be true or false (1, yes, on; 0, "
                                       "no, off), not 'maybe'."),
    # The suite's JSON for a count: true was 1, 2.5 was 2.
    ({}, {"patience": True}, "the setting 'patience' (the suite's patience) must be an integer, not True."),
    ({}, {"patience": 2.5}, "the setting 'patience' (the suite's patience) must be an integer, not 2.5."),
])
def test_a_plugin_setting_of_the_wrong_type_from_the_environment_or_the_suite_is_exit_2(
        tmp_path: Path, env: dict[str, str], block: dict, says: str) -> None:
    (tmp_path / "typed.py").write_text(TYPED)
    cases = write_suite(tmp_path, [{"id": "a", "query": "hi", "expect": {"contains": "hello"}}],
                        {"agent": "agent.py:agent", **block}, {"agent.py": HELLO})
    result = run_cli("run", "--cases", cases, "--output-dir", tmp_path / "r", "-q",
                     env=clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "typed.py"), **env))
    assert result.exit_code == 2 and " ".join(result.stderr.split()) == f"error: {says}"


def test_a_plugin_switch_reads_on_and_off_from_the_environment(tmp_path: Path) -> None:
    (tmp_path / "typed.py").write_text(TYPED)
    cases = one_case_suite(tmp_path)
    for text, value in (("on", True), ("No", False), ("1", True)):
        out = tmp_path / text
        result = run_cli("run", "--cases", cases, "--output-dir", out, "-q", "--no-html",
                         env=clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "typed.py"), AGENT_EVAL_LOUD=text))
        assert result.exit_code == 0, result.stderr
        (path,) = out.glob("*.json")
        assert orjson.loads(path.read_bytes())["settings"]["loud"] is value


_MAX = 2**31 - 1


@pytest.mark.parametrize(("given", "block", "message"), [
    ({"repeat": 0}, {}, f"--repeat must be at least 1 and at most {_MAX} (got 0)."),
    ({"concurrency": _MAX + 1}, {}, f"--concurrency must be at least 1 and at most {_MAX} (got {_MAX + 1})."),
    ({"max_steps": -3}, {}, f"--max-steps must be at least 1 and at most {_MAX} (got -3)."),
    ({"threshold": 0.0}, {}, "--threshold must be above 0 and at most 1 (got 0.0); a threshold of 0 passes a case "
                             "that never succeeds."),
    ({"timeout": float("inf")}, {}, "--timeout must be a positive, finite number of seconds (got inf)."),
    ({"judge_timeout": -1.0}, {}, "--judge-timeout must be a positive number of seconds (got -1.0); the default is "
                                  "120."),
    ({"retry_budget": 0.0}, {}, "--retry-budget must be a positive number of seconds (got 0.0); the default is 600."),
    ({"max_cost": float("nan")}, {}, "--max-cost must be a positive, finite number of US dollars (got nan), such as "
                                     "--max-cost 5 for $5.00."),
])
def test_a_value_out_of_its_rows_range_is_an_error_naming_where_it_came_from(tmp_path, given, block, message):
    from agent_eval.errors import ConfigError
    from agent_eval.run.config import resolve
    from agent_eval.suite.cases import load_suite

    path = write_suite(tmp_path, [{"id": "a", "query": "q", "expect": {"contains": "x"}}], block)
    with pytest.raises(ConfigError) as found:
        resolve(Flags(**given), load_suite(path), {})
    assert str(found.value) == message
