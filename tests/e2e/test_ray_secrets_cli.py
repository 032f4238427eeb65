"""--ray and secrets (docs/scale.md): keys reach the actors as constructor arguments, never a runtime
environment, and env_vars that look like secrets get a warning that Ray writes runtime environments to
its logs. `agent-eval run --ray` is a subprocess against the loopback provider."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.builders import clean_env, write_suite
from tests.cli import run_cli
from tests.hostile import SECRET, assert_clean
from tests.loopback import router, text

pytest.importorskip("ray")


def test_keys_reach_ray_actors_as_arguments_and_secret_env_vars_are_warned_about(loopback, tmp_path: Path) -> None:
    provider = loopback(router(lambda messages: text("done")))
    path = write_suite(tmp_path / "suite", [{"id": "c", "query": "q", "expect": {"contains": "done"}}],
                       {"name": "ray-secrets"})
    out = tmp_path / "out"
    runtime_env = {"env_vars": {"MY_API_KEY": "x", "DB_PASSWORD": "y", "MY_FLAG": "1"}}
    done = run_cli("run", "--cases", path, "--output-dir", out, "--no-html", "--quiet", "--agent", "openai",
                   "--model", "m", "--base-url", provider.base_url, "--ray", "--workers", "1",
                   "--ray-runtime-env", orjson.dumps(runtime_env).decode(), timeout=600,
                   env=clean_env(OPENAI_API_KEY=SECRET))
    assert done.returncode == 0, done.stdout + done.stderr
    assert_clean(done, tmp_path)
    # The actor called the provider with the key it was handed.
    assert {h.get("authorization") for h in provider.request_headers} == {f"Bearer {SECRET}"}
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: --ray-runtime-env")]
    assert len(warnings) == 2
    assert "MY_API_KEY" in warnings[0] and "DB_PASSWORD" in warnings[1]
    assert all("Ray writes runtime environments to its logs" in w for w in warnings)
