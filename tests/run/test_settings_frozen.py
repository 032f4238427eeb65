"""The resolved settings are one frozen value: nothing holding it (a plugin's output, a listener, a second
`run_suite`) can change what the next reader sees, and it still pickles to the `--workers` processes."""
from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

from agent_eval.flags.rows import FILTER, RAY_RUNTIME_ENV
from agent_eval.run.config import Settings, resolve
from agent_eval.run.ray_hosts import runtime_env
from agent_eval.suite.cases import load_suite
from tests.builders import flags_of, write_suite

ENV = '{"env_vars": {"A": "1"}, "pip": ["httpx"]}'


@pytest.fixture
def cfg(tmp_path: Path) -> Settings:
    path = write_suite(tmp_path / "suite", [{"id": "a", "query": "q", "expect": {"contains": "x"}}],
                       {"name": "s", "agent": "agent.py:agent"}, {"agent.py": "def agent(task):\n    return 'x'\n"})
    flags = flags_of(filter=["a", "b"], user_model="sim", ray_runtime_env=ENV, model="m")
    return resolve(flags, load_suite(path), {"OPENAI_API_KEY": "sk-1"}).replace(
        last_failed=["a"], source={"traces": "t.jsonl", "format": "otlp"})


def test_no_part_of_resolved_settings_can_be_changed(cfg: Settings) -> None:
    with pytest.raises(TypeError):
        cfg.values["model"] = "other"  # type: ignore[index]
    with pytest.raises(TypeError):
        cfg.sources["model"] = "flag"  # type: ignore[index]
    with pytest.raises(AttributeError):
        cfg.values.pop("model")  # type: ignore[attr-defined]
    assert cfg[FILTER] == ("a", "b")  # a repeatable value is a tuple
    with pytest.raises(TypeError):
        cfg[RAY_RUNTIME_ENV]["env_vars"]["A"] = "2"  # type: ignore[index]
    assert cfg[RAY_RUNTIME_ENV]["pip"] == ("httpx",)  # nested: a list is a tuple
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.user_sim.model = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.values = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        cfg.source["format"] = "x"  # type: ignore[index]
    assert cfg.last_failed == ("a",)
    assert (cfg[FILTER], cfg.user_sim.model, cfg.get("model")) == (("a", "b"), "sim", "m")


def test_replace_gives_a_new_value_and_leaves_the_old_one(cfg: Settings) -> None:
    changed = cfg.replace({"model": "recording"}, model="other", filter=["c"])
    assert (changed.get("model"), changed.sources["model"], changed[FILTER]) == ("other", "recording", ("c",))
    assert (cfg.get("model"), cfg.sources["model"], cfg[FILTER]) == ("m", "flag", ("a", "b"))
    with pytest.raises(TypeError):
        changed.values["model"] = "x"  # type: ignore[index]


def test_it_pickles_and_unpickles_equal_and_still_frozen(cfg: Settings) -> None:
    back = pickle.loads(pickle.dumps(cfg))
    assert back == cfg and back.values == cfg.values and back.user_sim.api_key == "sk-1"
    with pytest.raises(TypeError):
        back.values["model"] = "other"


def test_the_report_and_ray_get_plain_json_back(cfg: Settings, tmp_path: Path) -> None:
    block = cfg.settings()
    assert block["filter"] == ["a", "b"] and block["last_failed"] == ["a"]
    assert type(block["sources"]) is dict and block["scored_from"] == {"traces": "t.jsonl", "format": "otlp"}
    assert type(block["scored_from"]) is dict
    env = runtime_env(cfg, tmp_path, tmp_path / "out")
    assert env["env_vars"] == {"A": "1"} and type(env["env_vars"]) is dict and env["pip"] == ["httpx"]
