"""docs/tutorial.md works as written: its files, saved where it says, validate, pass against the scripted
model it starts (no key, no server of one's own), and the change it describes fails the run with the reason
it quotes."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from tests.builders import ROOT, clean_env
from tests.cli import run_cli
from agent_eval import scripted_model

TUTORIAL = ROOT / "docs" / "tutorial.md"
_SAVED = re.compile(r"Save this as\s+`([^`]+)`[^\n]*:\n\n```[a-z]*\n(.*?)\n```", re.S)


def _save_files(folder: Path) -> dict[str, str]:
    files = dict(_SAVED.findall(TUTORIAL.read_text(encoding="utf-8")))
    for name, body in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body + "\n", encoding="utf-8")
    return files


def _commands(text: str, start: str) -> list[list[str]]:
    """Every command of the tutorial's code blocks that starts with `start`, split as a shell would."""
    blocks = re.findall(r"```[a-z]*\n(.*?)\n```", text, re.S)
    return [shlex.split(line) for block in blocks for line in block.splitlines() if line.startswith(start)]


def test_the_tutorial_suite_validates_passes_and_gates_the_change_it_describes(tmp_path):
    """Word for word, with the scripted model it says to start: no key and no server of one's own."""
    text_ = TUTORIAL.read_text(encoding="utf-8")
    files = _save_files(tmp_path)
    assert set(files) == {"evals/tools.py", "evals/cases.json", "agent.py", "evals/script.json"}
    assert run_cli("validate", "--cases", "evals/cases.json", cwd=tmp_path).exit_code == 0

    (serve,) = _commands(text_, "agent-eval scripted-model ")
    script, said_url = serve[2], f"http://127.0.0.1:{serve[serve.index('--port') + 1]}/v1"
    good_run, gated_run = (cmd[1:] for cmd in _commands(text_, "agent-eval run ") if "--base-url" in cmd)
    with scripted_model(tmp_path / script) as base_url:  # any free port: the tutorial's may be taken here
        def run(args: list[str]):
            return run_cli(*[base_url if a == said_url else a for a in args], cwd=tmp_path, env=clean_env())

        good = run(good_run)
        assert good.exit_code == 0, good.stdout + good.stderr
        reports = sorted((tmp_path / "evals" / "reports").glob("*.json"))
        assert len(reports) == 1
        assert json.loads(reports[0].read_bytes())["summary"]["cases_passed"] == 3
        # Every file the run wrote is named where the tutorial says what lands in evals/reports/.
        said = re.search(r"These files land in `evals/reports/`:(.*?)\n\n", text_, re.S)
        assert said is not None
        run_id = reports[0].stem
        written = {p.name.replace(run_id, "<run_id>") for p in (tmp_path / "evals" / "reports").iterdir()}
        assert written and all(f"`{name}`" in said.group(1) for name in written), written

        (copy,) = _commands(text_, "cp evals/reports/")
        (tmp_path / copy[2]).write_bytes(reports[0].read_bytes())
        agent = tmp_path / "agent.py"
        agent.write_text(agent.read_text().replace("range(8)", "range(2)"))
        worse = run(gated_run)
    assert worse.exit_code == 1, worse.stdout + worse.stderr
    quoted = re.search(r"reason `(expect:icontains: .*?)`", text_, re.S)
    assert quoted is not None
    assert " ".join(quoted.group(1).split()) in " ".join(worse.stdout.split())

    # Then the first CI job of docs/ci-without-a-key.md, in the same folder, word for word: no key, a gate;
    # and the first test of docs/pytest.md, run by pytest in that folder.
    agent.write_text(agent.read_text().replace("range(2)", "range(8)"))
    _follow_the_scripted_ci_job(tmp_path)
    _run_the_first_pytest_test(tmp_path)


def _run_the_first_pytest_test(folder):
    import subprocess
    import sys

    page = (ROOT / "docs" / "pytest.md").read_text(encoding="utf-8")
    test = re.search(r"```python\n# (tests/test_shop_suite\.py)\n(.*?)\n```", page, re.S)
    assert test is not None
    path = folder / test.group(1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(test.group(2) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           str(path)], cwd=folder, env=clean_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def _follow_the_scripted_ci_job(folder):
    page = (ROOT / "docs" / "ci-without-a-key.md").read_text(encoding="utf-8")
    job = re.search(r"```yaml\n# \.github/workflows/agent-eval-scripted\.yml\n(.*?)\n```", page, re.S)
    assert job is not None
    lines = [line.strip() for line in job.group(1).splitlines()]
    (serve,) = [shlex.split(line.rstrip("&")) for line in lines if line.startswith("agent-eval scripted-model ")]
    (gate,) = [shlex.split(line) for line in lines if line.startswith("agent-eval run ")]
    said_url = f"http://127.0.0.1:{serve[serve.index('--port') + 1]}/v1"
    summary = folder / "step-summary.md"
    with scripted_model(folder / serve[2]) as base_url:
        args = [base_url if a == said_url else str(summary) if a == "$GITHUB_STEP_SUMMARY" else a
                for a in gate[1:]]
        gated = run_cli(*args, cwd=folder, env=clean_env())  # clean_env: no OPENAI_* key of any kind
    assert gated.exit_code == 0, gated.stdout + gated.stderr
    newest = max((folder / "evals" / "reports").glob("2*.json"), key=lambda p: p.stat().st_mtime)
    report = json.loads(newest.read_bytes())
    assert report["gate"] is not None and report["gate"]["regression"] is False
    assert summary.read_text().splitlines()[2] == "**PASS (exit 0): every selected case passed**"
    assert (folder / "evals" / "results.xml").is_file()


def test_the_ci_job_installs_the_wheel_the_tutorial_says_to_keep():
    text = TUTORIAL.read_text(encoding="utf-8")
    installed = re.search(r"- run: pip install \./(\S+\.whl)", text)
    assert installed is not None
    folder, wheel = installed.group(1).rsplit("/", 1)
    kept = text[:installed.start()]
    assert re.search(rf"cp \S*/dist/{re.escape(wheel)} {re.escape(folder)}/", kept), "copy the wheel first"
    assert f"Commit `{folder}/`" in kept
