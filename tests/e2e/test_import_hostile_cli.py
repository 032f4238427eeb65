"""`agent-eval import` of hostile records (docs/reference.md, "What agent-eval guarantees"): a record nested
too deep or whose id or tool name holds a control character is left out by number, the rest import, and
without --tools no code is loaded from anywhere."""
from __future__ import annotations

import json
from pathlib import Path

import orjson

from tests.builders import imported_cases
from tests.cli import run_cli
from tests.hostile import assert_clean

# A tools.py that leaves a mark when anything imports it.
TRAP = '''
import json
from pathlib import Path

Path(__file__).with_name("imported").touch()
TOOL_REGISTRY, TOOLS_SCHEMA = {}, []
'''


def nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


def test_deep_records_and_control_characters_are_left_out_by_number(tmp_path: Path) -> None:
    goldens = [
        {"input": "deep", "expected_output": "x", "additional_metadata": {"d": nested(300)}},
        {"input": "fine", "expected_output": "ok"},
        {"input": "tab", "expected_output": "x", "name": "a\tb"},
        {"input": "newline", "expected_output": "x", "name": "line\nbreak"},
        {"input": "tool", "expected_output": "x", "tools_called": [{"name": "look\nup"}]},
        {"input": "deeper", "expected_output": "x", "additional_metadata": {"d": nested(600)}},
    ]
    source = tmp_path / "goldens.json"
    source.write_text(json.dumps(goldens))  # orjson refuses past 254 levels
    out = tmp_path / "cases.json"
    done = run_cli("import", "deepeval", source, "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_clean(done, tmp_path)
    cases = imported_cases(out)
    assert [c["query"] for c in cases] == ["fine"]
    assert "5 records of" in done.stderr and "left out" in done.stderr
    for number in (0, 2, 3, 4, 5):
        assert f"index {number}: " in done.stderr
    assert done.stderr.count("nested deeper than 100 levels") == 2
    assert done.stderr.count("control character") == 3


def test_import_without_tools_loads_no_code(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TRAP)
    source = tmp_path / "goldens.jsonl"
    source.write_bytes(orjson.dumps({"input": "hello", "expected_output": "hi"}) + b"\n")
    done = run_cli("import", "deepeval", source, cwd=tmp_path)  # written to stdout, validated in the cwd
    assert done.returncode == 0, done.stderr
    assert_clean(done, tmp_path)
    assert orjson.loads(done.stdout)[0]["query"] == "hello"
    assert not (tmp_path / "imported").exists()
    done = run_cli("import", "deepeval", source, "--out", tmp_path / "cases.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "imported").exists()
