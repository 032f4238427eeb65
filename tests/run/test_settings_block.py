"""The report's `settings` block, pinned key by key and in order (the JSON report keeps dict order), so a
change in how settings are declared or resolved cannot move, rename or re-spell a key."""
from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from agent_eval.commands.run import run_command
from agent_eval.run.config import resolve
from agent_eval.suite.cases import load_suite
from tests.builders import flags_of, write_suite

AGENT = "def agent(task):\n    return 'x'\n"
BLOCK = {"name": "s", "agent": "agent.py:agent", "max_steps": 5, "defaults": {"repeat": 3},
         "judge": {"model": "suite-judge"}, "rate_limit": "60:5"}


@pytest.fixture
def suite_path(tmp_path: Path) -> Path:
    return write_suite(tmp_path / "suite", [{"id": "a", "query": "q", "expect": {"contains": "x"}}], BLOCK,
                       {"agent.py": AGENT})


def test_the_settings_block_of_a_run_with_no_flag(suite_path: Path) -> None:
    settings = resolve(flags_of(), load_suite(suite_path), {}).settings()
    assert list(settings.items()) == [
        ("repeat", 3), ("threshold", 1.0), ("filter", []), ("judge", True), ("judge_model", "suite-judge"),
        ("judge_base_url", None), ("no_cache", False), ("concurrency", 8), ("max_steps", 5), ("timeout", None),
        ("judge_timeout", 120.0), ("base_url", None), ("user", None), ("agent", "agent.py:agent"), ("model", None),
        ("sources", {"filter": "default", "repeat": "suite", "threshold": "default", "judge": "default",
                     "agent": "suite", "model": "default", "base_url": "default", "judge_model": "suite",
                     "judge_base_url": "default", "judge_timeout": "default", "no_cache": "default",
                     "concurrency": "default", "max_steps": "suite", "timeout": "default", "user": "default",
                     "max_cost": "default", "workers": "default", "ray": "default", "rate_limit": "suite",
                     "judge_rate_limit": "default", "retry_budget": "default"}),
        ("last_failed", None), ("workers", 1), ("ray", None), ("otel", None), ("otlp_endpoint", None),
        ("rate_limit", "60:5"), ("judge_rate_limit", None), ("retry_budget", 600.0), ("max_cost", None),
        ("record", None), ("replay", None)]
    assert list(settings["sources"]) == ["filter", "repeat", "threshold", "judge", "agent", "model", "base_url",
                                         "judge_model", "judge_base_url", "judge_timeout", "no_cache",
                                         "concurrency", "max_steps", "timeout", "user", "max_cost", "workers",
                                         "ray", "rate_limit", "judge_rate_limit", "retry_budget"]


def test_the_settings_block_of_a_run_with_flags_environment_and_suite(suite_path: Path, tmp_path: Path) -> None:
    env = {"AGENT_EVAL_MODEL": "env-model", "AGENT_EVAL_JUDGE_BASE_URL": "http://judge.local/v1",
           "OPENAI_API_KEY": "sk"}
    flags = flags_of(filter=["a"], threshold=0.5, no_cache=True, concurrency=4, timeout=30.0, judge_timeout=60.0,
                     base_url="https://user:pw@agent.example/v1", user_model="sim-m", otel=tmp_path / "o.jsonl",
                     otlp_endpoint="https://k:s@otlp.example/v1/traces", judge_rate_limit="30", retry_budget=100.0,
                     max_cost=2.5, record=tmp_path / "rec", workers=2)
    settings = resolve(flags, load_suite(suite_path), env).settings()
    assert list(settings.items()) == [
        ("repeat", 3), ("threshold", 0.5), ("filter", ["a"]), ("judge", True), ("judge_model", "suite-judge"),
        ("judge_base_url", "http://judge.local/v1"), ("no_cache", True), ("concurrency", 4), ("max_steps", 5),
        ("timeout", 30.0), ("judge_timeout", 60.0), ("base_url", "https://***@agent.example/v1"), ("user", "sim-m"),
        ("agent", "agent.py:agent"), ("model", "env-model"),
        ("sources", {"filter": "flag", "repeat": "suite", "threshold": "flag", "judge": "default", "agent": "suite",
                     "model": "env", "base_url": "flag", "judge_model": "suite", "judge_base_url": "env",
                     "judge_timeout": "flag", "no_cache": "flag", "concurrency": "flag", "max_steps": "suite",
                     "timeout": "flag", "user": "flag", "max_cost": "flag", "workers": "flag", "ray": "default",
                     "rate_limit": "suite", "judge_rate_limit": "flag", "retry_budget": "flag"}),
        ("last_failed", None), ("workers", 2), ("ray", None), ("otel", str(tmp_path / "o.jsonl")),
        ("otlp_endpoint", "https://***@otlp.example/v1/traces"), ("rate_limit", "60:5"), ("judge_rate_limit", "30"),
        ("retry_budget", 100.0), ("max_cost", 2.5), ("record", str(tmp_path / "rec")), ("replay", None)]
    assert list(settings["sources"])[:4] == ["filter", "repeat", "threshold", "judge"]


def test_without_the_judge_its_model_and_endpoint_are_null(suite_path: Path) -> None:
    settings = resolve(flags_of(no_judge=True, model="m", repeat=2), load_suite(suite_path), {}).settings()
    assert [(k, settings[k]) for k in ("repeat", "judge", "judge_model", "judge_base_url", "model")] == [
        ("repeat", 2), ("judge", False), ("judge_model", None), ("judge_base_url", None), ("model", "m")]
    assert (settings["sources"]["judge"], settings["sources"]["repeat"]) == ("flag", "flag")


def test_a_resumed_run_reports_the_settings_block_of_the_run_it_finishes(suite_path: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "reports"
    quiet = (Console(file=io.StringIO()), Console(file=io.StringIO()))
    assert run_command(flags_of(cases=suite_path, output_dir=out, quiet=True, filter=["a"], timeout=30.0,
                                no_html=True, explicit={"filter", "timeout"}), *quiet) == 0
    (path,) = out.glob("*.json")
    first = orjson.loads(path.read_bytes())["settings"]
    monkeypatch.setenv("AGENT_EVAL_MODEL", "another-model")  # stored settings win over the environment
    assert run_command(flags_of(output_dir=out, quiet=True, resume=path.stem, judge_timeout=5.0,
                                explicit={"resume", "judge_timeout"}), *quiet) == 0
    again = orjson.loads(path.read_bytes())["settings"]
    assert list(again) == list(first) and list(again["sources"]) == list(first["sources"])
    # A setting --resume renews (the stored value unless given again) comes, when given, from the command
    # line, and so does its source.
    assert again == {**first, "judge_timeout": 5.0, "sources": {**first["sources"], "judge_timeout": "flag"}}
