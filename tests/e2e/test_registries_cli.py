"""One row added to each of agent-eval's tables by a plugin module (AGENT_EVAL_PLUGINS), used end to end.

The plugin is written by the test: an agent kind (`echo:TEXT`), an import and score format (`lines`, which
`score` also detects), a check family (`max_words`, reading a case field of its own) and an output
(`<report>.words.txt`). The package is not
edited; the CLI imports the plugin before each command, and each worker imports it too.
"""
from __future__ import annotations

from pathlib import Path

import orjson

from tests.builders import clean_env
from tests.cli import run_cli

PLUGIN = '''
"""Adds one row to each table: an agent kind, a check family, an import format, an output."""
from agent_eval.errors import ConfigError
from agent_eval.ingest.formats import FORMATS, Format
from agent_eval.report.outputs import OUTPUTS, Output
from agent_eval.run.agents import AgentKind, Reply, register_agent_kind
from agent_eval.score.checks import CHECK_FAMILIES, CheckFamily

PREFIX = "echo:"


class EchoAgent:
    """Answers every user message with the text after `echo:`."""

    def __init__(self, spec):
        self.name = spec
        self.text = spec[len(PREFIX):]

    async def respond(self, ctx):
        return Reply(answer=self.text)


def check_echo(spec, base_dir, cases_dir):
    if not spec[len(PREFIX):]:
        raise ConfigError(f"agent {spec!r} gives no text: write echo:TEXT")


register_agent_kind(AgentKind("echo", lambda spec: spec.startswith(PREFIX),
                              lambda spec, base_dir, settings: EchoAgent(spec), check_echo))


def max_words_checks(case, trace, final_env, expected_env):
    limit = case.get("max_words")
    if limit is None:
        return []
    words = len((trace.get("final_answer") or "").split())
    return [{"name": "max_words", "passed": words <= limit, "detail": f"{words} words, at most {limit}"}]


def validate_max_words(case):
    value = case.get("max_words")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return []
    return [("max_words", "must be an integer >= 1")]


CHECK_FAMILIES.append(CheckFamily("max_words", ("max_words",), max_words_checks, validate=validate_max_words))


def line_cases(source, logs):
    """One case per line `QUESTION|MAX_WORDS`."""
    rows = [line.split("|") for line in source.read_text().splitlines() if line.strip()]
    cases = [(f"line {i}", {"id": f"line-{i}", "query": q, "max_words": int(n)}) for i, (q, n) in enumerate(rows, 1)]
    return cases, [], []


def line_runs(source, tools, logs):
    """One recorded run per line `CASE_ID|ANSWER` after the `#lines` header."""
    from agent_eval.ingest.recordings import Recording

    rows = [line.split("|") for line in source.read_text().splitlines()[1:] if line.strip()]
    recordings = [Recording(f"line {i}", {
        "user_messages": [], "replies": [answer], "final_answer": answer, "cards": [], "final_agent": None,
        "stop_reason": "completed", "agent_error": None, "agent_error_traceback": None, "steps": [],
        "llm_calls": [], "latency_s": 0.0, "ttfa_s": None, "rate_limit_wait_s": 0.0, "final_env_diff": []},
        case_id=case_id, trial=0) for i, (case_id, answer) in enumerate(rows, 1)]
    return recordings, [], {"agent": "lines", "model": None}


FORMATS["lines"] = Format(cases=line_cases, runs=line_runs, detect=lambda data: data.startswith(b"#lines"))


def write_words(job):
    job.target.write_text("".join(f"{case['id']} {case['status']}\\n" for case in job.report["cases"]))


OUTPUTS.append(Output("Words", lambda cfg, report_path: report_path.with_suffix(".words.txt"), write_words))
'''


def _setup(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "rows_plugin.py").write_text(PLUGIN)
    (tmp_path / "questions.txt").write_text("What is two plus two?|3\nName a colour.|1\n")
    return clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "rows_plugin.py"))


def _report(out: Path) -> dict:
    (path,) = out.glob("*.json")
    return orjson.loads(path.read_bytes())


def test_a_plugin_adds_an_agent_kind_a_format_a_check_family_and_an_output(tmp_path: Path) -> None:
    env = _setup(tmp_path)
    cases = tmp_path / "cases.json"
    imported = run_cli("import", "lines", tmp_path / "questions.txt", "--out", cases, cwd=tmp_path, env=env)
    assert imported.returncode == 0, imported.stderr
    # The family's own field is a case field: it validates, with no "no check" error and no warning.
    assert [(c["id"], c["max_words"]) for c in orjson.loads(cases.read_bytes())] == [("line-1", 3), ("line-2", 1)]

    valid = run_cli("validate", "--cases", cases, "--agent", "echo:four", cwd=tmp_path, env=env)
    assert valid.returncode == 0, valid.stderr
    assert "2 cases, valid" in valid.stdout and "only kept" not in valid.stderr
    bad_agent = run_cli("validate", "--cases", cases, "--agent", "echo:", cwd=tmp_path, env=env)
    assert bad_agent.returncode == 2 and "gives no text: write echo:TEXT" in bad_agent.stderr
    assert "Traceback" not in bad_agent.stderr

    out = tmp_path / "reports"
    run = run_cli("run", "--cases", cases, "--agent", "echo:two words", "--no-html", "--output-dir", out,
                  cwd=tmp_path, env=env)
    # "two words" is 2 words: within line-1's 3, over line-2's 1, so one case fails and the exit code is 1.
    assert run.returncode == 1, run.stderr
    report = _report(out)
    assert report["agent"] == "echo:two words"
    checks = {c["id"]: c["runs"][0]["checks"] for c in report["cases"]}
    assert checks == {"line-1": [{"name": "max_words", "passed": True, "detail": "2 words, at most 3"}],
                      "line-2": [{"name": "max_words", "passed": False, "detail": "2 words, at most 1"}]}
    assert [(c["id"], c["status"]) for c in report["cases"]] == [("line-1", "passed"), ("line-2", "failed")]
    words = out / f"{report['run_id']}.words.txt"
    assert words.read_text() == "line-1 passed\nline-2 failed\n"
    assert f"Words: {words}" in run.stdout


def test_score_reads_recorded_runs_in_the_plugin_format_detected_without_format(tmp_path: Path) -> None:
    env = _setup(tmp_path)
    cases = tmp_path / "cases.json"
    assert run_cli("import", "lines", tmp_path / "questions.txt", "--out", cases, cwd=tmp_path,
                   env=env).returncode == 0
    (tmp_path / "answers.txt").write_text("#lines\nline-1|Four.\nline-2|It is blue.\n")
    out = tmp_path / "reports"
    proc = run_cli("score", tmp_path / "answers.txt", "--cases", cases, "--no-html", "--output-dir", out,
                   cwd=tmp_path, env=env)
    # "Four." is 1 word (at most 3: passed); "It is blue." is 3 words (at most 1: failed): exit 1.
    assert proc.returncode == 1, proc.stderr
    report = _report(out)
    assert [(c["id"], c["status"], c["runs"][0]["checks"][0]["detail"]) for c in report["cases"]] == [
        ("line-1", "passed", "1 words, at most 3"), ("line-2", "failed", "3 words, at most 1")]
    assert (out / f"{report['run_id']}.words.txt").read_text() == "line-1 passed\nline-2 failed\n"


def test_a_bad_value_of_the_plugin_family_is_exit_2_naming_the_field(tmp_path: Path) -> None:
    env = _setup(tmp_path)
    cases = tmp_path / "cases.json"
    cases.write_bytes(orjson.dumps([{"id": "c1", "query": "hi", "max_words": 0}]))
    proc = run_cli("validate", "--cases", cases, cwd=tmp_path, env=env)
    assert proc.returncode == 2
    assert "c1" in proc.stderr and "max_words" in proc.stderr and "must be an integer >= 1" in proc.stderr


def test_workers_import_the_plugin_too(tmp_path: Path) -> None:
    env = _setup(tmp_path)
    cases = tmp_path / "cases.json"
    cases.write_bytes(orjson.dumps([{"id": f"c{i}", "query": "hi", "max_words": 2} for i in range(4)]))
    out = tmp_path / "reports"
    proc = run_cli("run", "--cases", cases, "--agent", "echo:one two", "--workers", "2", "--no-html",
                   "--output-dir", out, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    report = _report(out)
    # "one two" is 2 words, at most 2: every case passes, each judged by the plugin's family in a worker.
    assert {c["status"] for c in report["cases"]} == {"passed"}
    assert all(c["runs"][0]["checks"][0]["name"] == "max_words" for c in report["cases"])
    assert (out / f"{report['run_id']}.words.txt").read_text().count("passed") == 4


def test_a_plugin_that_cannot_be_imported_is_exit_2(tmp_path: Path) -> None:
    env = clean_env(AGENT_EVAL_PLUGINS=str(tmp_path / "missing.py"))
    proc = run_cli("list", "--cases", tmp_path / "none.json", cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "AGENT_EVAL_PLUGINS" in proc.stderr and "Traceback" not in proc.stderr
