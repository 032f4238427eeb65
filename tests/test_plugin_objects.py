"""A plugin is an object the host calls: the entry point (or an AGENT_EVAL_PLUGINS name) names a module or
`module:object`, and the host calls its `register(host)`; the rows it registers there are its own (a name
held twice is exit 2 naming it), its listeners hear every finished run's RunRecord in a real `agent-eval
run`, and the plugin example of docs/architecture.md works as written."""
from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from tests.builders import ROOT, clean_env, write_suite
from tests.cli import run_cli
from tests.loopback import router, text


def installed(folder: Path, name: str, source: str, value: str) -> Path:
    """`name`.py and a dist-info declaring the entry point `name = value` in the group agent_eval.plugins."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(source)
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[agent_eval.plugins]\n{name} = {value}\n")
    return folder


LISTENING = '''
import os
from pathlib import Path

from agent_eval.provider.events import RunListener
from agent_eval.score.metric_registry import SuiteMetric, mean, register_metric


class Seen(RunListener):
    def run_finished(self, case_id, run):
        with Path(os.environ["SEEN_LOG"]).open("a") as log:
            log.write(f"{case_id} {run['trial']} {run['status']} {run['metrics']['answer_chars']}\\n")
        run.update(status="passed", success=True)  # the plugin's copy: the report keeps the run's own


class Plugin:
    def register(self, host):
        register_metric(SuiteMetric("answer_chars", "answer characters", fmt="number",
                                    statistic=mean("answer_chars"),
                                    run_value=lambda case, trace, checks, success, cost: len(trace["final_answer"])))
        host.add_listener(Seen())


plugin = Plugin()
'''


@pytest.mark.parametrize("where", [(), ("--workers", "2")])  # played here, or by worker processes
def test_a_plugin_objects_listener_sees_each_finished_runs_record(tmp_path: Path, loopback: object,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  where: tuple[str, ...]) -> None:
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "listening", LISTENING, "listening:plugin")))
    srv = loopback(router(lambda messages: text("hello" if messages[-1]["content"] == "say a" else "bye")))  # type: ignore[operator]
    cases = [{"id": "a", "query": "say a", "expect": {"contains": "hello"}},
             {"id": "b", "query": "say b", "expect": {"contains": "hello"}}]
    suite = write_suite(tmp_path / "suite", cases, {"agent": "openai", "model": "loopback"})
    log, out = tmp_path / "seen.log", tmp_path / "reports"
    result = run_cli("run", "--cases", suite, "-k", "2", "--base-url", srv.base_url, "--output-dir", out,
                     "--no-html", *where, env=clean_env(OPENAI_API_KEY="test", SEEN_LOG=str(log)))
    assert result.exit_code == 1, result.stderr  # b fails
    # Each run once, with its record's trial, status and metrics (the plugin's run value: len("hello") = 5,
    # len("bye") = 3); the order the runs finish in is the scheduler's.
    assert sorted(log.read_text().splitlines()) == ["a 0 passed 5", "a 1 passed 5", "b 0 failed 3", "b 1 failed 3"]
    (path,) = out.glob("*.json")
    report = orjson.loads(path.read_bytes())
    assert report["summary"]["answer_chars"] == 4.0  # (5 + 5 + 3 + 3) / 4
    # The listener made its copy of each run a success: the report keeps b's failed runs.
    assert [r["status"] for c in report["cases"] for r in c["runs"]] == ["passed", "passed", "failed", "failed"]
    assert [c["status"] for c in report["cases"]] == ["passed", "failed"] and "FAIL" in result.stdout


LOUD = '''
from agent_eval.provider.events import RunListener


class Loud(RunListener):
    def run_finished(self, case_id, run):
        raise ValueError("no log for " + case_id)


def register(host):
    host.add_listener(Loud())
'''


def test_a_plugin_listener_that_raises_is_one_warning_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "loud.py").write_text(LOUD)
    agent = "def agent(task):\n    return 'hello'\n"
    cases = [{"id": f"c{n}", "query": "q", "expect": {"contains": "hello"}} for n in range(3)]
    suite = write_suite(tmp_path / "suite", cases, {"agent": "agent.py:agent"}, {"agent.py": agent})
    result = run_cli("run", "--cases", suite, "--output-dir", tmp_path / "out", "--no-html", cwd=tmp_path,
                     env=clean_env(AGENT_EVAL_PLUGINS="loud.py"))
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count("warning: the listener Loud of the plugin") == 1  # told no more after the first
    assert f"of the plugin {tmp_path / 'loud.py'} raised ValueError: no log for c" in result.stderr
    assert "in run_finished; it is told no more, and the run goes on." in result.stderr
    assert "Traceback" not in result.stderr
    (path,) = (tmp_path / "out").glob("*.json")
    assert [c["status"] for c in orjson.loads(path.read_bytes())["cases"]] == ["passed"] * 3


CLASHING = '''
from agent_eval.run.agents import AgentKind, register_agent_kind


def register(host):
    register_agent_kind(AgentKind("gold", lambda spec: spec == "x", lambda spec, base, settings: None))
'''
RAISING = '''
class Plugin:
    def register(self, host):
        raise RuntimeError("no config for " + host.name)


plugin = Plugin()
'''
ASYNC = '''
from agent_eval.run.agents import AgentKind, register_agent_kind


async def register(host):
    register_agent_kind(AgentKind("gold", lambda spec: spec == "gold", lambda spec, base, settings: None))
'''


@pytest.mark.parametrize(("source", "ref", "says"), [
    (CLASHING, "mine.py", "the agent kind 'gold' is registered twice: by agent_eval.run.agents and by {path}. "),
    (RAISING, "mine.py:plugin", "mine.py:plugin: the plugin (in AGENT_EVAL_PLUGINS) raised RuntimeError: no config "
                                "for {path}:plugin in register(host). Fix the plugin."),
    (RAISING, "mine.py:nothing", "mine.py:nothing: the plugin (in AGENT_EVAL_PLUGINS)'s module has no attribute "
                                 "'nothing'."),
    # an async register was never awaited: nothing registered, a RuntimeWarning, and the run went on without it
    (ASYNC, "mine.py", "mine.py: the plugin (in AGENT_EVAL_PLUGINS)'s register(host) is a coroutine function (async "
                       "def); the host calls it once, before the command starts: make it a plain def."),
])
def test_a_plugin_the_host_cannot_load_is_exit_2_naming_it(tmp_path: Path, source: str, ref: str, says: str) -> None:
    (tmp_path / "mine.py").write_text(source)
    suite = write_suite(tmp_path / "suite", [{"id": "c", "query": "q", "expect": {"contains": "x"}}],
                        {"agent": "gold"})
    result = run_cli("validate", "--cases", suite, cwd=tmp_path, env=clean_env(AGENT_EVAL_PLUGINS=ref))
    assert result.exit_code == 2
    assert says.format(path=tmp_path / "mine.py") in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr


def test_an_entry_points_object_may_be_an_attribute_of_an_object(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # `module:holder.plugin` is an entry point's object reference as packaging writes it: it was taken for a
    # module name, "not found on sys.path".
    holder = "from types import SimpleNamespace\n\n" + RAISING.replace("plugin = Plugin()", "holder = SimpleNamespace("
                                                                          "plugin=Plugin())")
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", "held", holder, "held:holder.plugin")))
    result = run_cli("list", "--cases", write_suite(tmp_path / "suite", [{"id": "c", "query": "q",
                                                                           "expect": {"contains": "x"}}], {}))
    assert result.exit_code == 2, result.stderr
    assert "raised RuntimeError: no config for held:holder.plugin in register(host)" in " ".join(result.stderr.split())


def test_the_plugin_example_of_the_architecture_doc_runs_as_written(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    example = doc.split("A plugin that adds a metric", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    file_name, name, value = re.search(r"# (\w+)\.py, declared.*\n.*\n#\s+(\w+) = \"([\w.:]+)\"", example).groups()  # type: ignore[union-attr]
    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", file_name, example, value)))
    agent = "def agent(task):\n    return 'hello there' if task.case_id == 'short' else 'hello there my friend'\n"
    cases = [{"id": "short", "query": "hi", "expect": {"contains": "hello"}},
             {"id": "long", "query": "hi", "expect": {"contains": "hello"}}]
    suite = write_suite(tmp_path / "suite", cases, {"agent": "agent.py:agent", "tone": "warm"}, {"agent.py": agent})
    out = tmp_path / "reports"
    result = run_cli("run", "--cases", suite, "--output-dir", out, "--no-html")
    assert result.exit_code == 0, result.stderr
    (path,) = out.glob("*.json")
    report = orjson.loads(path.read_bytes())
    # answer_words: "hello there" 2 words, "hello there my friend" 4: (2 + 4) / 2 = 3.0
    assert report["summary"]["answer_words"] == 3.0
    assert (report["settings"]["tone"], report["settings"]["sources"]["tone"]) == ("warm", "suite")
    assert name == "tone"


HEARS_ONE_EVENT = '''
import os
from pathlib import Path


class Finished:  # no RunListener base: it hears run_finished and has no method for the other events
    def run_finished(self, case_id, run):
        with Path(os.environ["SEEN_LOG"]).open("a") as log:
            log.write(f"{case_id} {run['status']}\\n")


def register(host):
    host.add_listener(Finished())
'''


def test_a_plugin_listener_without_the_other_events_hears_the_ones_it_has(tmp_path: Path) -> None:
    # The guard looked each event's method up outside itself: a listener with run_finished only was a
    # traceback (AttributeError: no attribute 'run_started') and the command crashed.
    (tmp_path / "finished.py").write_text(HEARS_ONE_EVENT)
    agent = "def agent(task):\n    return 'hello'\n"
    cases = [{"id": f"c{n}", "query": "q", "expect": {"contains": "hello"}} for n in range(2)]
    suite = write_suite(tmp_path / "suite", cases, {"agent": "agent.py:agent"}, {"agent.py": agent})
    log = tmp_path / "seen.log"
    result = run_cli("run", "--cases", suite, "--output-dir", tmp_path / "out", "--no-html", cwd=tmp_path,
                     env=clean_env(AGENT_EVAL_PLUGINS="finished.py", SEEN_LOG=str(log)))
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr and "warning" not in result.stderr
    assert sorted(log.read_text().splitlines()) == ["c0 passed", "c1 passed"]


TWO_OBJECTS = '''
from agent_eval.flags import Setting, register_setting

register_setting(Setting("shared_tone", str, ("--shared-tone",)))  # the module's own row, registered when imported


class Tone:
    def register(self, host):
        register_setting(Setting("tone", str, ("--tone",)))


class Style:
    def register(self, host):
        register_setting(Setting("style", str, ("--style",)))


tone, style = Tone(), Style()
'''


def test_two_plugin_objects_of_one_file_import_it_once(tmp_path: Path) -> None:
    # A file named twice with two objects was imported twice (as its dotted name is not): the row it registers
    # when imported was claimed again by the second object, exit 2 "registered twice".
    (tmp_path / "two.py").write_text(TWO_OBJECTS)
    agent = "def agent(task):\n    return 'hello'\n"
    suite = write_suite(tmp_path / "suite", [{"id": "c", "query": "q", "expect": {"contains": "hello"}}],
                        {"agent": "agent.py:agent"}, {"agent.py": agent})
    result = run_cli("run", "--cases", suite, "--output-dir", tmp_path / "out", "--no-html", "--tone", "warm",
                     "--style", "terse", "--shared-tone", "both", cwd=tmp_path,
                     env=clean_env(AGENT_EVAL_PLUGINS="two.py:tone,two.py:style"))
    assert result.exit_code == 0, result.stderr
    (path,) = (tmp_path / "out").glob("*.json")
    settings = orjson.loads(path.read_bytes())["settings"]
    assert (settings["shared_tone"], settings["tone"], settings["style"]) == ("both", "warm", "terse")


def test_a_listener_that_hears_no_event_is_exit_2_naming_the_plugin(tmp_path: Path) -> None:
    # A function (or any object with none of RunListener's methods) would never be told anything: say so.
    (tmp_path / "deaf.py").write_text("def register(host):\n    host.add_listener(lambda case_id, run: None)\n")
    suite = write_suite(tmp_path / "suite", [{"id": "c", "query": "q", "expect": {"contains": "x"}}],
                        {"agent": "agent.py:agent"}, {"agent.py": "def agent(task):\n    return 'x'\n"})
    result = run_cli("run", "--cases", suite, "--output-dir", tmp_path / "out", cwd=tmp_path,
                     env=clean_env(AGENT_EVAL_PLUGINS="deaf.py"))
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert (f"the plugin {tmp_path / 'deaf.py'} added a listener (a function) with none of the run events' methods "
            "(run_finished, run_started, ") in " ".join(result.stderr.split())


def test_a_listener_whose_event_is_async_is_exit_2_naming_it(tmp_path: Path) -> None:
    # An async run_finished was called and never awaited: the plugin heard nothing, and Python warned on stderr.
    (tmp_path / "asyncl.py").write_text(
        "from agent_eval.provider.events import RunListener\n\n\nclass Late(RunListener):\n"
        "    async def run_finished(self, case_id, run):\n        pass\n\n\n"
        "def register(host):\n    host.add_listener(Late())\n")
    suite = write_suite(tmp_path / "suite", [{"id": "c", "query": "q", "expect": {"contains": "x"}}],
                        {"agent": "agent.py:agent"}, {"agent.py": "def agent(task):\n    return 'x'\n"})
    result = run_cli("run", "--cases", suite, "--output-dir", tmp_path / "out", cwd=tmp_path,
                     env=clean_env(AGENT_EVAL_PLUGINS="asyncl.py"))
    assert result.exit_code == 2, result.stderr
    assert (f"the plugin {tmp_path / 'asyncl.py'} added a listener (a Late) whose run_finished is a coroutine "
            "function (async def); the events are told as they happen: make it a plain def.") in " ".join(
                result.stderr.split())


SLOW = '''
import os
import time
from pathlib import Path

from agent_eval.provider.events import RunListener


class Slow(RunListener):
    def run_finished(self, case_id, run):
        time.sleep(4 if case_id == "quick" else 0)
        with Path(os.environ["SEEN_LOG"]).open("a") as log:
            log.write(f"{case_id} {run['status']}\\n")


def register(host):
    host.add_listener(Slow())
'''
PATIENT = '''
import asyncio


async def agent(task):
    await asyncio.sleep(0 if task.case_id == "quick" else 0.5)
    return "hello"
'''


def test_a_slow_listener_never_stalls_the_runs_still_playing(tmp_path: Path) -> None:
    # A listener was told on the runs' event loop: 4 s in run_finished of "quick" stalled "patient" past its
    # --timeout (it needs 0.5 s), and the plugin turned its run into a failure.
    (tmp_path / "slow.py").write_text(SLOW)
    cases = [{"id": "quick", "query": "q", "expect": {"contains": "hello"}},
             {"id": "patient", "query": "q", "expect": {"contains": "hello"}}]
    suite = write_suite(tmp_path / "suite", cases, {"agent": "agent.py:agent"}, {"agent.py": PATIENT})
    log = tmp_path / "seen.log"
    result = run_cli("run", "--cases", suite, "--output-dir", tmp_path / "out", "--no-html", "--timeout", "3",
                     cwd=tmp_path, env=clean_env(AGENT_EVAL_PLUGINS="slow.py", SEEN_LOG=str(log)))
    assert result.exit_code == 0, result.stdout + result.stderr
    (path,) = (tmp_path / "out").glob("*.json")
    assert [c["status"] for c in orjson.loads(path.read_bytes())["cases"]] == ["passed", "passed"]
    # told in order, every event before the command ended
    assert log.read_text().splitlines() == ["quick passed", "patient passed"]
