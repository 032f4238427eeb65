"""The tools of an imported tau2 suite against tau2's own environment: the same observations (errors as
`Error: ...`), the same database after the same calls, and a run's database never writing into the pristine
one that later runs share."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_eval.suite.tool_loading import load_tools


def _play_upstream(domain: str, calls: list[dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    from tau2.data_model.message import ToolCall

    from agent_eval.bench.tau2 import upstream as up

    env = up.module(f"domains.{domain}.environment").get_environment()
    seen = [env.get_response(ToolCall(id="c", name=c["name"], arguments=c["args"])).content for c in calls]
    return seen, env.tools.db.model_dump(mode="json")


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_observations_and_database_equal_tau2s_own_environment(tau2_suites: dict[str, Path], domain: str) -> None:
    folder = tau2_suites[domain].parent
    tools = load_tools("tools.py", folder)
    backend = tools.backend
    assert backend is not None
    pristine = orjson.loads((folder / "db.json").read_bytes())
    for case in orjson.loads(tau2_suites[domain].read_bytes())["cases"]:
        # the gold calls, then each again with a wrong id: a write that now fails, a lookup of nothing
        calls = case["expected_tools"] + [{"name": c["name"], "args": {**c["args"], next(iter(c["args"])): "NOPE"}}
                                          for c in case["expected_tools"] if c["args"]]
        world = backend.build({"db": "db.json"})
        seen = []
        for call in calls:
            try:
                seen.append(tools.invoke(call["name"], dict(call["args"]), world))
            except Exception as exc:  # noqa: BLE001 - the error text the agent is shown
                seen.append(f"{type(exc).__name__}: {exc}")
        upstream_seen, upstream_db = _play_upstream(domain, calls)
        assert seen == upstream_seen, case["id"]
        assert any(text.startswith("Error: ") for text in seen)
        assert backend.state(world) == upstream_db, case["id"]
        assert backend.state(backend.build({"db": "db.json"})) == pristine  # the next run starts clean


def test_calculate_refuses_a_power_too_large_to_compute_with_upstreams_own_error(tau2_suites: dict[str, Path]) -> None:
    tools = load_tools("tools.py", tau2_suites["airline"].parent)
    assert tools.backend is not None
    world = tools.backend.build({"db": "db.json"})
    assert tools.invoke("calculate", {"expression": "2 ** 10 + (3 - 1) / 4"}, world) == "1024.5"
    upstream_seen, _ = _play_upstream("airline", [{"name": "calculate", "args": {"expression": "10 ** 400"}}])
    assert upstream_seen == ["Error: int too large to convert to float"]  # what tau2 gives a result this large
    for hostile in ("9**9**9**9", "(99999**99999)**99999", "10 ** 400"):
        with pytest.raises(Exception) as refused:
            tools.invoke("calculate", {"expression": hostile}, world)
        assert f"{type(refused.value).__name__}: {refused.value}" == "Error: int too large to convert to float"
