"""`import --into CASEFILE` appends to an existing suite; `import --out` writes the suite block the source
gives, and warns when the cases would run on an empty env. The CLI is called in-process."""
from __future__ import annotations

from pathlib import Path

import orjson

from tests.builders import imported_cases, write_suite
from tests.cli import run_cli
from tests.otlp_gen import Trace, assistant, calls, export_request, jsonl, system, user

TID_A = "aaaa0000000000000000000000000001"
TID_B = "bbbb0000000000000000000000000002"
PROMPT = "You are the shop's support agent."

TOOLS = '''
from agent_eval import tool


@tool
def get_order(order_id: str, env: dict) -> str:
    """Look an order up."""
    return env["orders"][order_id]
'''

AGENT = """
def agent(task):
    order = task.input.split()[-1].rstrip("?")
    return "It has " + task.call_tool("get_order", order_id=order) + "."
"""


def traces(tmp_path: Path) -> Path:
    """Two production traces of one model and one system prompt, each a get_order call and an answer."""
    spans = []
    for offset, (tid, order) in enumerate([(TID_A, "42"), (TID_B, "7")]):
        t = Trace(tid, offset_ms=offset * 5000)
        t.chat(0, 50, [system(PROMPT), user(f"Where is order {order}?")],
               [calls(("c1", "get_order", {"order_id": order}))], model="gpt-prod")
        t.tool(60, 80, "get_order", "c1", arguments={"order_id": order}, result="shipped")
        t.chat(90, 200, [system(PROMPT), user(f"Where is order {order}?")], [assistant("It has shipped.")],
               model="gpt-prod")
        spans += t.spans
    path = tmp_path / "prod.jsonl"
    path.write_bytes(jsonl([export_request(spans)]))
    return path


def shop(tmp_path: Path) -> Path:
    block = {"name": "shop", "tools": "tools.py", "initial_env": {"orders": {"42": "shipped", "7": "shipped"}}}
    cases = [{"id": f"trace-{TID_A[:12]}", "query": "Where is order 42?", "expect": {"icontains": "shipped"}}]
    return write_suite(tmp_path / "shop", cases, block, files={"tools.py": TOOLS})


def test_into_appends_renames_taken_ids_keeps_the_suite_and_a_backup(tmp_path):
    source, target = traces(tmp_path), shop(tmp_path)
    original = target.read_bytes()
    done = run_cli("import", "otel", source, "--into", target, cwd=tmp_path)
    assert done.exit_code == 0, done.stderr
    assert f"appended 2 cases from {source} to {target}" in " ".join(done.stderr.split())
    assert (target.with_name("cases.json.bak")).read_bytes() == original
    doc = orjson.loads(target.read_bytes())
    assert doc["suite"] == orjson.loads(original)["suite"]  # the suite block kept as it was
    a, b = f"trace-{TID_A[:12]}", f"trace-{TID_B[:12]}"
    assert [c["id"] for c in doc["cases"]] == [a, f"{a}-2", b]
    assert run_cli("validate", "--cases", target).exit_code == 0
    # the imported cases run on the suite's env: the recorded calls succeed and every case passes
    (target.parent / "agent.py").write_text(AGENT)
    ran = run_cli("run", "--cases", target, "--agent", target.parent / "agent.py:agent", "--output-dir",
                  tmp_path / "reports", "-q", cwd=tmp_path)
    assert ran.exit_code == 0, ran.stdout + ran.stderr

    again = run_cli("import", "otel", source, "--into", target, cwd=tmp_path)
    assert again.exit_code == 0, again.stderr
    assert [c["id"] for c in imported_cases(target)] == [a, f"{a}-2", b, f"{a}-3", f"{b}-2"]
    assert len(imported_cases(target.with_name("cases.json.bak"))) == 1  # the first original, kept
    assert len(imported_cases(target.with_name("cases.json.bak.1"))) == 3  # the file as it was before this import


def test_into_a_bare_list_stays_a_bare_list(tmp_path):
    source = traces(tmp_path)
    target = tmp_path / "list.json"
    target.write_bytes(orjson.dumps([{"id": "mine", "query": "hi", "expect": {"contains": "hello"}}]))
    done = run_cli("import", "otel", source, "--into", target, cwd=tmp_path)
    assert done.exit_code == 0, done.stderr
    doc = orjson.loads(target.read_bytes())
    assert isinstance(doc, list) and [c["id"] for c in doc][0] == "mine" and len(doc) == 3


def test_into_mistakes_are_exit_2_and_leave_the_file_alone(tmp_path):
    source, target = traces(tmp_path), shop(tmp_path)
    original = target.read_bytes()
    missing = run_cli("import", "otel", source, "--into", tmp_path / "nope.json", cwd=tmp_path)
    assert missing.exit_code == 2 and "--out" in missing.stderr and "Traceback" not in missing.stderr
    both = run_cli("import", "otel", source, "--into", target, "--out", tmp_path / "x.json", cwd=tmp_path)
    assert both.exit_code == 2 and "--into" in both.stderr
    (tmp_path / "junk.json").write_text("{not json")
    junk = run_cli("import", "otel", source, "--into", tmp_path / "junk.json", cwd=tmp_path)
    assert junk.exit_code == 2 and "not JSON" in junk.stderr
    assert target.read_bytes() == original and not target.with_name("cases.json.bak").exists()


def test_out_writes_what_the_source_gives_and_warns_of_an_empty_env(tmp_path):
    source = traces(tmp_path)
    (tmp_path / "tools.py").write_text(TOOLS)
    done = run_cli("import", "otel", source, "--out", tmp_path / "new" / "cases.json", "--tools", "tools.py",
                   cwd=tmp_path)
    assert done.exit_code == 0, done.stderr
    doc = orjson.loads((tmp_path / "new" / "cases.json").read_bytes())
    assert doc["suite"] == {"tools": "../tools.py", "system_prompt": PROMPT, "model": "gpt-prod"}
    assert all("recorded_system_prompt" not in c["metadata"] for c in doc["cases"])  # said once, in the suite
    warning = " ".join(done.stderr.split())
    assert "get_order take the run's env" in warning and "empty env" in warning and "--into CASEFILE" in warning

    # without tools that read the env there is nothing to warn of
    (tmp_path / "plain.py").write_text(TOOLS.replace(", env: dict", "").replace('env["orders"][order_id]', "'x'"))
    quiet = run_cli("import", "otel", source, "--out", tmp_path / "p.json", "--tools", "plain.py", cwd=tmp_path)
    assert quiet.exit_code == 0 and "empty env" not in quiet.stderr
