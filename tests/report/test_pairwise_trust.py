"""`compare --pairwise` runs no code of a report's: the case file the NEW report names is read for its
rubrics and the judge's settings only; its tools module and scorers are never imported."""
from __future__ import annotations

from pathlib import Path

import orjson

from tests.builders import clean_env, write_suite
from tests.cli import run_cli
from tests.loopback import text

TOOLS = '''
from pathlib import Path

Path(__file__).with_name("RAN").write_text("the tools module ran")

from agent_eval import tool


@tool
def noop(env: dict) -> str:
    """Nothing."""
    return "ok"
'''
SCORERS = '''
from pathlib import Path

Path(__file__).with_name("SCORER_RAN").write_text("the scorer module ran")


def words(trace, case):
    return 1.0
'''
AGENT = "def agent(task):\n    return 'the answer'\n"


def test_compare_pairwise_imports_nothing_the_reports_case_file_names(tmp_path: Path, loopback) -> None:
    rows = [{"id": f"c{n}", "query": "q", "expect": {"contains": "answer"}, "rubric": "It answers."}
            for n in range(2)]
    suite = tmp_path / "suite"
    cases = write_suite(suite, rows, {"name": "pairs", "tools": "tools.py", "scorers": ["scorers.py:words"]},
                        {"tools.py": TOOLS, "scorers.py": SCORERS, "agent.py": AGENT})
    paths = []
    for name in ("base", "new"):
        out = tmp_path / name
        done = run_cli("run", "--cases", cases, "--agent", f"{suite / 'agent.py'}:agent", "--output-dir", out,
                       "--no-html", "--no-judge", env=clean_env())
        assert done.exit_code == 0, done.stdout + done.stderr
        paths.append(next(out.glob("*.json")))
    (suite / "RAN").unlink()
    (suite / "SCORER_RAN").unlink()
    judge = loopback([text("TIE\nthe same")] * 8)
    env = clean_env(AGENT_EVAL_JUDGE_BASE_URL=judge.base_url, AGENT_EVAL_JUDGE_MODEL="judge-m")
    done = run_cli("compare", *paths, "--pairwise", env=env, cwd=tmp_path)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert not (suite / "RAN").exists() and not (suite / "SCORER_RAN").exists()
    assert judge.count >= 1  # (identical sides give identical prompts: the cache answers the rest)
    assert all("It answers." in request["messages"][-1]["content"] for request in judge.requests)
    assert "Traceback" not in done.stderr and orjson.loads(paths[1].read_bytes())["cases_file"] == str(cases)
