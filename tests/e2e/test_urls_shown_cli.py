"""Every URL agent-eval shows or stores has its secrets removed (userinfo, key-like query values), wherever
it came from: --base-url, --otlp-endpoint, an argument of a cmd: agent, a warning."""
from __future__ import annotations

import sys
from pathlib import Path

from tests.builders import run_cli, write_suite

SCRIPT = "import sys\nsys.stdin.readline()\nprint('done')\n"


def test_no_secret_of_any_url_is_shown_or_stored(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a collector nobody listens on: its warning names the URL
        probe.bind(("127.0.0.1", 0))
        collector = f"http://bob:collector-pw@127.0.0.1:{probe.getsockname()[1]}/v1/traces?token=otlp-tok"
    cases = write_suite(tmp_path, [{"id": "c0", "query": "go", "expect": {"icontains": "done"}}], {"name": "urls"},
                        files={"agent_script.py": SCRIPT})
    out = tmp_path / "out"
    agent = f"cmd:{sys.executable} agent_script.py https://alice:agent-pw@example.com/hook?sig=agent-sig"
    done = run_cli("run", "--cases", cases, "--output-dir", out, "--no-html", "--agent", agent,
                   "--base-url", "http://carol:base-pw@127.0.0.1:9/v1?api_key=base-key", "--model", "m1",
                   "--otlp-endpoint", collector, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = done.stdout + done.stderr + "".join(p.read_text() for p in out.rglob("*") if p.is_file()
                                                 and p.suffix in (".json", ".jsonl", ".ndjson"))
    for secret in ("agent-pw", "agent-sig", "base-pw", "base-key", "collector-pw", "otlp-tok"):
        assert secret not in shown, secret
    assert "--otlp-endpoint http://***@127.0.0.1" in done.stderr


def test_a_resumed_run_asks_again_for_an_agent_whose_url_lost_its_secret() -> None:
    import pytest

    from agent_eval.errors import ConfigError
    from agent_eval.run.resume import full_agent

    given = "cmd:agent --hook https://alice:pw@example.com/x"
    stored = "cmd:agent --hook https://***@example.com/x"
    assert full_agent(stored, given) == given
    assert full_agent("cmd:agent --plain", None) == "cmd:agent --plain"
    with pytest.raises(ConfigError, match="give the whole --agent again"):
        full_agent(stored, None)


def test_a_ray_address_with_a_secret_is_shown_redacted_when_it_cannot_be_joined(tmp_path: Path) -> None:
    from agent_eval.run.config import Settings
    from agent_eval.run.ray_hosts import start_failure

    address = "ray://alice:ray-password@10.0.0.1:10001"
    cfg = Settings(tmp_path / "cases.json", {"ray_address": address})
    message = start_failure(ConnectionError(f"failed to connect to {address}"), cfg, tmp_path, tmp_path)
    assert "ray-password" not in message and "ray://***@10.0.0.1:10001" in message
