"""A file a report names is data: `label`, `calibrate`, `rescore` and `compare --pairwise` read a report's
cases_file only when it is a regular case file under the cap, and `compare --cases` chooses another."""
from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from tests.builders import clean_env, write_suite
from tests.cli import run_cli
from tests.loopback import text


def bare_report(path: Path, cases_file: str, run_id: str = "20260101-000000-aaaaaa") -> Path:
    path.write_bytes(orjson.dumps({"schema_version": 1, "run_id": run_id, "cases_file": cases_file,
                                   "settings": {"repeat": 1}, "summary": {}, "cases": []}))
    return path


def hostile_targets(tmp_path: Path) -> list[tuple[str, str]]:
    """(cases_file a report names, the word the refusal says): devices, a FIFO, /proc, a folder, links to them."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "to-zero").symlink_to("/dev/zero")
    (tmp_path / "to-environ").symlink_to("/proc/self/environ")
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(300 * 2**20)  # sparse: 300 MiB on paper, no disk used
    return [("/dev/zero", "system file"), ("/dev/urandom", "system file"), (str(fifo), "FIFO"),
            ("/proc/self/environ", "system file"), ("/proc/self/fd/0", "system file"), (str(tmp_path), "folder"),
            (str(tmp_path / "to-zero"), "system file"), (str(tmp_path / "to-environ"), "system file"),
            (str(huge), "bytes, more than")]


def test_label_and_calibrate_refuse_a_cases_file_that_is_no_case_file(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"run_id": "20260101-000000-aaaaaa", "case_id": "a", "trial": 0, "label": "pass"}\n')
    for target, word in hostile_targets(tmp_path):
        report = bare_report(tmp_path / "r.json", target)
        for args in (("label", report), ("calibrate", report, "--labels", labels, "--judge-repeat", "1"),
                     ("rescore", report)):
            done = run_cli(*args, input="q\n", timeout=30, env=clean_env(AGENT_EVAL_JUDGE_MODEL="m",
                                                                        AGENT_EVAL_JUDGE_API_KEY="k"))
            assert done.exit_code == 2, (args, target, done.stdout + done.stderr)
            assert word in done.stderr and "its cases_file" in done.stderr and "--cases" in done.stderr, done.stderr
            assert "Traceback" not in done.stderr


def test_compare_pairwise_refuses_a_cases_file_that_is_no_case_file(tmp_path: Path) -> None:
    base = bare_report(tmp_path / "base.json", "cases.json", "20260101-000000-bbbbbb")
    env = clean_env(AGENT_EVAL_JUDGE_MODEL="m", AGENT_EVAL_JUDGE_BASE_URL="http://127.0.0.1:9/v1")
    for target, word in hostile_targets(tmp_path):
        new = bare_report(tmp_path / "new.json", target)
        done = run_cli("compare", base, new, "--gate", "pairwise", env=env, timeout=30)
        assert done.exit_code == 2, (target, done.stdout + done.stderr)
        assert word in done.stderr and "--cases" in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("stored", ["", None, 5, ["cases.json"]])
def test_a_report_naming_no_cases_file_points_at_an_option_that_exists(tmp_path: Path, stored) -> None:
    base = bare_report(tmp_path / "base.json", "cases.json", "20260101-000000-bbbbbb")
    new = tmp_path / "new.json"
    new.write_bytes(orjson.dumps({**orjson.loads(base.read_bytes()), "cases_file": stored}))
    env = clean_env(AGENT_EVAL_JUDGE_MODEL="m", AGENT_EVAL_JUDGE_BASE_URL="http://127.0.0.1:9/v1")
    done = run_cli("compare", base, new, "--gate", "pairwise", env=env)
    assert done.exit_code == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert "--cases" in done.stderr
    assert "--cases" in run_cli("compare", "--help", env={**clean_env(), "COLUMNS": "200"}).stdout


def test_compare_cases_gives_pairwise_its_rubrics(tmp_path: Path, loopback) -> None:
    rows = [{"id": f"c{n}", "query": "q", "expect": {"contains": "answer"}, "rubric": "OLD RUBRIC"}
            for n in range(2)]
    suite = tmp_path / "suite"
    cases = write_suite(suite, rows, {"name": "pairs"}, {"agent.py": "def agent(task):\n    return 'the answer'\n"})
    paths = []
    for name in ("base", "new"):
        done = run_cli("run", "--cases", cases, "--agent", f"{suite / 'agent.py'}:agent", "--output-dir",
                       tmp_path / name, "--no-html", "--no-judge")
        assert done.exit_code == 0, done.stdout + done.stderr
        paths.append(next((tmp_path / name).glob("*.json")))
    other = tmp_path / "other.json"
    other.write_bytes(orjson.dumps([{**row, "rubric": "NEW RUBRIC"} for row in rows]))
    cases.unlink()  # the report's own cases_file is gone: --cases alone supplies the rubrics
    judge = loopback([text("TIE\nthe same")] * 8)
    env = clean_env(AGENT_EVAL_JUDGE_BASE_URL=judge.base_url, AGENT_EVAL_JUDGE_MODEL="judge-m")
    done = run_cli("compare", *paths, "--pairwise", "--cases", other, env=env)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert judge.requests and all("NEW RUBRIC" in r["messages"][-1]["content"] for r in judge.requests)
