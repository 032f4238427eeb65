"""A replay follows its recording (section 20b): its models, its simulated user, its paths; what a miss,
a live fill, the page and the provider summary say about it. In process, against the loopback model."""
from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from tests.builders import write_suite
from tests.loopback import LoopbackServer
from tests.run.test_replay import CASES, ENV, TOOLS, keyed_env, reply, run  # noqa: F401  (keyed_env: the fixture)

pytestmark = pytest.mark.usefixtures("keyed_env")
SCRIPTED_USER = "def user(sim):\n    return None if sim.messages else 'I forgot my password.'\n"


def clinic(folder: Path, scenario: str = "You are u2 and forgot your password.", **block: object) -> Path:
    cases = [{**case, "scenario": scenario} if "scenario" in case else case for case in CASES]
    suite_block = {"name": "helpdesk", "tools": "tools.py", "initial_env": ENV, "system_prompt": "You help.",
                   **block}
    return write_suite(folder, cases, suite_block, {"tools.py": TOOLS, "scripted.py": SCRIPTED_USER})


def recorded(tmp_path: Path, cases: Path, **flags: object) -> tuple[Path, dict]:
    tape = tmp_path / "tape"
    with LoopbackServer(reply) as srv:
        code, report, out = run(tmp_path, cases, base_url=srv.base_url, record=tape, **flags)
        assert code == 0, out
    for name in ("OPENAI_API_KEY", "AGENT_EVAL_JUDGE_API_KEY", "AGENT_EVAL_USER_API_KEY", "AGENT_EVAL_JUDGE_MODEL",
                 "AGENT_EVAL_USER_MODEL"):
        os.environ.pop(name, None)
    return tape, report


def test_the_recordings_models_beat_the_suites_and_the_environments(tmp_path: Path) -> None:
    cases = clinic(tmp_path)
    tape, _ = recorded(tmp_path, cases)
    header_text = (tape / "cassette.json").read_text()
    assert orjson.loads(header_text)["cases_file"] == "../cases.json" and str(tmp_path) not in header_text
    # The suite and the environment now name other models: the recording's still answer, all hits.
    clinic(tmp_path, model="suite-m", judge={"model": "suite-judge-m"}, user={"agent": "scripted.py:user"})
    os.environ["AGENT_EVAL_JUDGE_MODEL"] = "env-judge-m"
    code, report, out = run(tmp_path, cases, replay=tape, model=None)
    assert code == 0, out
    settings = report["settings"]
    assert (settings["model"], settings["judge_model"], settings["user"]) == ("agent-m", "judge-m", "user-m")
    assert {k: settings["sources"][k] for k in ("model", "judge_model", "user")} == dict.fromkeys(
        ("model", "judge_model", "user"), "recording")
    assert report["summary"]["replay"]["misses"] == 0
    # A flag still beats the recording.
    code, report, out = run(tmp_path, cases, replay=tape, model="flag-m", filter=["reset"])
    assert report["settings"]["model"] == "flag-m" and report["settings"]["sources"]["model"] == "flag"
    assert code == 2 and 'at model: now "flag-m", recorded "agent-m"' in report["cases"][0]["runs"][0]["error"]
    assert "error: error:" not in out


def test_an_llm_users_recording_replays_with_it_and_a_miss_names_the_user(tmp_path: Path) -> None:
    cases = clinic(tmp_path, user={"agent": "scripted.py:user"})
    tape, _ = recorded(tmp_path, cases, user_model="user-m", filter=["chat"])  # the flag beat the suite's user
    code, report, out = run(tmp_path, cases, replay=tape, filter=["chat"])  # no --user-model
    assert code == 0, out
    assert report["settings"]["user"] == "user-m" and report["settings"]["sources"]["user"] == "recording"
    assert report["summary"]["user_sim"]["calls"] >= 2 and report["summary"]["replay"]["misses"] == 0
    assert "user-m" in out and "api.openai.com" not in out  # the recorded user, not a default endpoint
    # The scenario changed: the user's first request is not the recorded one.
    changed = clinic(tmp_path, "You are u2; you lost your password.", user={"agent": "scripted.py:user"})
    code, report, out = run(tmp_path, changed, replay=tape, filter=["chat"])
    assert code == 2
    assert "replay miss: user request 1 (/chat/completions)" in report["cases"][0]["runs"][0]["error"]
    assert "error: error:" not in out
    # --replay-miss live asks for it with the key that is set (the agent's: no user key is set).
    os.environ["OPENAI_API_KEY"] = "sk-liveKeyForTheFill0123456"
    with LoopbackServer(reply) as srv:
        code, report, out = run(tmp_path, changed, replay=tape, filter=["chat"], replay_miss="live",
                                base_url=srv.base_url, no_html=False)
        assert srv.count >= 1
    assert code == 0, out
    live = report["summary"]["replay"]["live"]
    assert live >= 1 and f"note: {live} request" in out and "chat/0.jsonl" in out  # the live fill, named
    provider = {(p["role"], p["model"]): p["requests"] for p in report["summary"]["provider"]}
    assert sum(provider.values()) == live  # the provider saw the live requests only
    assert f"replaying {tape}" in (tmp_path / "reports" / f"{report['run_id']}.html").read_text()  # the page


def test_replayed_steps_start_after_the_credited_latency(tmp_path: Path) -> None:
    cases = clinic(tmp_path)
    tape, live = recorded(tmp_path, cases, filter=["reset"])
    path = tape / "reset" / "0.jsonl"
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    lines[0]["latency_s"], lines[1]["latency_s"] = 2.0, 3.0  # the model took its time when it was recorded
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    code, report, out = run(tmp_path, cases, replay=tape, filter=["reset"])
    assert code == 0, out
    trace = report["cases"][0]["runs"][0]["trace"]
    first_call, second_call = trace["llm_calls"]
    step = trace["steps"][0]
    # call 1 from ~0 for 2.0 s; the tool after it; call 2 after both; nothing overlaps
    assert first_call["t_start_s"] < 0.5 and first_call["latency_s"] >= 2.0
    assert step["t_start_s"] >= first_call["t_start_s"] + 2.0
    assert second_call["t_start_s"] >= step["t_start_s"] + (step.get("latency_s") or 0.0)
    assert trace["latency_s"] >= 5.0
    assert report["summary"]["provider"] == []  # nothing reached a provider
