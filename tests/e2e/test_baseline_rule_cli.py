"""`--baseline last` picks a run that could itself be gated: never one with a case in error (a replay miss
ends its run in error too), every case skipped, or cut short; the verdict line names the actual cause.
In-process CLI against a loopback model that can be switched off (HTTP 400, not retried: each run errors)."""
from __future__ import annotations

import os
from pathlib import Path

import orjson

from tests.cli import CliResult, run_cli
from tests.loopback import status, text


def suite_file(tmp_path: Path) -> Path:
    cases = [{"id": i, "query": f"hello {i}", "expect": {"contains": "ok"}} for i in ("a", "b")]
    path = tmp_path / "cases.json"
    path.write_bytes(orjson.dumps({"suite": {"name": "greet"}, "cases": cases}))
    return path


def reports(out: Path) -> list[dict]:
    found = [orjson.loads(p.read_bytes()) for p in out.glob("2*.json")]
    return sorted(found, key=lambda r: (r["created_at"], r["run_id"]))


def flat(text_: str) -> str:
    return " ".join(text_.split())


def test_baseline_last_skips_an_all_errored_run_and_names_why_when_none_qualifies(loopback, tmp_path) -> None:
    down = {"on": False}
    srv = loopback(lambda request, index: status(400) if down["on"] else text("ok"))
    path, out = suite_file(tmp_path), tmp_path / "out"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "NO_COLOR": "1", "COLUMNS": "300"}

    def run(*extra: str, output: Path = out) -> CliResult:
        return run_cli("run", "--cases", str(path), "--agent", "openai", "--model", "m", "--base-url",
                       srv.base_url, "--output-dir", str(output), "--no-html", "--no-judge", *extra,
                       cwd=tmp_path, env=env)

    # No earlier run at all: a warning, and the run goes on ungated.
    first = run("--baseline", "last")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "warning: --baseline last" in first.stderr and "no earlier run" in flat(first.stderr)
    (good,) = reports(out)
    assert good["gate"] is None

    down["on"] = True
    broken = run()
    assert broken.returncode == 2, broken.stdout
    errored = reports(out)[-1]
    assert [c["status"] for c in errored["cases"]] == ["error", "error"]
    assert "ERROR (exit 2): 2 cases ended in an infrastructure error" in broken.stdout

    # The clean run after it gates against the good run, never the all-errored one.
    down["on"] = False
    gated = run("--baseline", "last")
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert reports(out)[-1]["gate"]["base_run_id"] == good["run_id"]
    assert "PASS (exit 0): every selected case passed" in gated.stdout

    # In a folder whose only earlier run errored: exit 2 before anything runs, naming that run and why.
    other = tmp_path / "other"
    down["on"] = True
    run(output=other)
    (only,) = reports(other)
    down["on"] = False
    refused = run("--baseline", "last", output=other)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    said = flat(refused.stderr)
    assert f"{only['run_id']}: 2 cases ended in error" in said and "Traceback" not in said
    assert len(reports(other)) == 1  # nothing ran


def test_baseline_last_names_at_most_three_rejected_runs(loopback, tmp_path) -> None:
    srv = loopback(lambda request, index: status(400))
    path, out = suite_file(tmp_path), tmp_path / "out"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "NO_COLOR": "1"}
    args = ("run", "--cases", str(path), "--agent", "openai", "--model", "m", "--base-url", srv.base_url,
            "--output-dir", str(out), "--no-html", "--no-judge", "--quiet")
    for _ in range(4):
        assert run_cli(*args, cwd=tmp_path, env=env).returncode == 2
    ids = [r["run_id"] for r in reports(out)]
    refused = run_cli(*args, "--baseline", "last", cwd=tmp_path, env=env)
    said = flat(refused.stderr)
    assert refused.returncode == 2 and "none of the 4 earlier run(s)" in said
    assert all(run_id in said for run_id in ids[1:]) and ids[0] not in said and "1 older run(s)" in said
