"""docs/tutorial.md works as written: its files, saved where it says, validate, pass against a model, and
the change it describes fails the run with the reason it quotes."""
from __future__ import annotations

import json
import re
from pathlib import Path

from tests.builders import ROOT, clean_env
from tests.cli import run_cli
from tests.loopback import router, text, tool_calls

TUTORIAL = ROOT / "docs" / "tutorial.md"
_SAVED = re.compile(r"Save this as\s+`([^`]+)`[^\n]*:\n\n```[a-z]*\n(.*?)\n```", re.S)


def _save_files(folder: Path) -> dict[str, str]:
    files = dict(_SAVED.findall(TUTORIAL.read_text(encoding="utf-8")))
    for name, body in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body + "\n", encoding="utf-8")
    return files


def _model(messages: list[dict]) -> object:
    """A stand-in for a capable model: looks the order up, refunds only a delivered one, answers."""
    user = [m for m in messages if m["role"] == "user"][-1]["content"]
    seen = [m["content"] for m in messages if m["role"] == "tool"]
    order = re.findall(r"ORD_\d+", user)[0]
    if not seen:
        return tool_calls([("get_order", {"order_id": order})])
    if "refund" in user.lower() and '"delivered"' in seen[-1]:
        return tool_calls([("refund_order", {"order_id": order, "reason": "broken on arrival"})])
    if "refunded" in seen[-1]:
        return text(f"Done: {seen[-1]}.")
    status = json.loads(seen[-1])["status"]
    return text(f"Sorry, {order} cannot be refunded: it is {status}." if "refund" in user.lower()
                else f"Your order {order} is {status}.")


def test_the_tutorial_suite_validates_passes_and_gates_the_change_it_describes(tmp_path, loopback):
    files = _save_files(tmp_path)
    assert set(files) == {"evals/tools.py", "evals/cases.json", "agent.py"}
    assert run_cli("validate", "--cases", "evals/cases.json", cwd=tmp_path).exit_code == 0

    srv = loopback(router(_model))
    env = clean_env(OPENAI_BASE_URL=srv.base_url)
    args = ("run", "--cases", "evals/cases.json", "--model", "gpt-4o-mini", "-k", "3",
            "--output-dir", "evals/reports")
    good = run_cli(*args, cwd=tmp_path, env=env)
    assert good.exit_code == 0, good.stdout + good.stderr
    reports = sorted((tmp_path / "evals" / "reports").glob("*.json"))
    assert len(reports) == 1
    assert json.loads(reports[0].read_bytes())["summary"]["cases_passed"] == 3
    # Every file the run wrote is named where the tutorial says what lands in evals/reports/.
    said = re.search(r"These files land in `evals/reports/`:(.*?)\n\n", TUTORIAL.read_text(), re.S)
    assert said is not None
    run_id = reports[0].stem
    written = {p.name.replace(run_id, "<run_id>") for p in (tmp_path / "evals" / "reports").iterdir()}
    assert written and all(f"`{name}`" in said.group(1) for name in written), written

    agent = tmp_path / "agent.py"
    agent.write_text(agent.read_text().replace("range(8)", "range(2)"))
    worse = run_cli(*args, "--baseline", str(reports[0]), cwd=tmp_path, env=env)
    assert worse.exit_code == 1
    quoted = re.search(r"reason `(expect:icontains: .*?)`", TUTORIAL.read_text(), re.S)
    assert quoted is not None
    assert " ".join(quoted.group(1).split()) in " ".join(worse.stdout.split())


def test_the_ci_job_installs_the_wheel_the_tutorial_says_to_keep():
    text = TUTORIAL.read_text(encoding="utf-8")
    installed = re.search(r"- run: pip install \./(\S+\.whl)", text)
    assert installed is not None
    folder, wheel = installed.group(1).rsplit("/", 1)
    kept = text[:installed.start()]
    assert re.search(rf"cp \S*/dist/{re.escape(wheel)} {re.escape(folder)}/", kept), "copy the wheel first"
    assert f"Commit `{folder}/`" in kept
