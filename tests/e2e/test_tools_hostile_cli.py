"""Hostile Python tools, with `agent-eval` as a subprocess: schemas whose `$ref`s loop or leave the file,
an argument check that still breaks, async tools, BaseException from a tool, and odd return values."""
from __future__ import annotations

import json
from pathlib import Path

import orjson

from tests.builders import clean_env, write_suite
from tests.cli import run_cli
from tests.hostile import SECRET, assert_clean

TREE = {"type": "object", "properties": {"tree": {"$ref": "#/$defs/Node"}}, "required": ["tree"],
        "$defs": {"Node": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
SCHEMAS = {
    "self": {"$ref": "#"},
    "ping_pong": {"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"allOf": [{"$ref": "#/$defs/A"}]}}},
    "remote": {"type": "object", "properties": {"x": {"$ref": "https://example.com/schema.json"}}},
    "dangling": {"type": "object", "properties": {"x": {"$ref": "#/$defs/Missing"}}},
    # Variants: draft-07 `definitions`, an anchor, `anyOf` at the root, a URN, a `$dynamicRef` loop.
    "definitions": {"$ref": "#/definitions/A",
                    "definitions": {"A": {"$ref": "#/definitions/B"}, "B": {"anyOf": [{"$ref": "#/definitions/A"}]}}},
    "anchor": {"$ref": "#node", "$defs": {"n": {"$anchor": "node", "$ref": "#node"}}},
    "root_anyof": {"anyOf": [{"$ref": "#"}]},
    "urn": {"type": "object", "properties": {"x": {"$ref": "urn:example:thing"}}},
    "dynamic": {"$dynamicRef": "#meta", "$defs": {"m": {"$dynamicAnchor": "meta", "$dynamicRef": "#meta"}}},
}

SCHEMA_TOOLS = '''
import json
from agent_eval import tool

SCHEMA = json.loads(%r)


@tool(schema={"name": "bad", "description": "d", "parameters": SCHEMA})
def bad(**kwargs) -> str:
    return "never"
'''

TREE_TOOLS = f'''
import json
from agent_eval import tool

TREE = json.loads({json.dumps(json.dumps(TREE))})


@tool(schema={{"name": "count", "description": "Count the leaves.", "parameters": TREE}})
def count(tree) -> str:
    return "counted"
'''

TREE_AGENT = '''
def agent(task):
    depth = int(task.metadata["depth"])
    tree = []
    for _ in range(depth):
        tree = [tree]
    try:
        return "ok " + task.call_tool("count", tree=tree)
    except Exception as exc:
        return f"ok, it said {exc}"
'''


def run_suite(folder: Path, tools: str, agent: str, cases: list[dict], *args: str) -> tuple:
    path = write_suite(folder, cases, {"name": "tools", "tools": "tools.py", "agent": "agent.py:agent"},
                       {"tools.py": tools, "agent.py": agent})
    out = folder / "out"
    done = run_cli("run", "--cases", path, "--output-dir", out, "--no-html", *args, cwd=folder,
                   env=clean_env(OPENAI_API_KEY=SECRET))
    assert_clean(done, folder)
    reports = list(out.glob("*.json"))
    return done, (orjson.loads(reports[0].read_bytes()) if reports else None)


def test_looping_and_remote_refs_are_exit_2_at_validate_naming_the_tool(tmp_path: Path) -> None:
    for name, schema in SCHEMAS.items():
        folder = tmp_path / name
        path = write_suite(folder, [{"id": "c", "query": "q", "expect": {"contains": "x"}}],
                           {"tools": "tools.py"}, {"tools.py": SCHEMA_TOOLS % json.dumps(schema)})
        done = run_cli("validate", "--cases", path, cwd=folder)
        assert done.returncode == 2, (name, done.stdout, done.stderr)
        assert_clean(done, folder)
        assert "tool 'bad'" in done.stderr + done.stdout, name
    messages = {name: run_cli("validate", "--cases", tmp_path / name / "cases.json").stderr for name in SCHEMAS}
    assert "not local" in messages["remote"] and "points at nothing" in messages["dangling"]
    assert "leads back to itself" in messages["self"] and "leads back to itself" in messages["ping_pong"]
    assert all("leads back to itself" in messages[name] for name in ("definitions", "anchor", "root_anyof", "dynamic"))
    assert "not local" in messages["urn"]


GENERATOR_TOOLS = '''
from agent_eval import tool


@tool
async def numbers(n: int):
    """Yield n numbers."""
    for i in range(n):
        yield i
'''


def test_a_generator_tool_is_exit_2_at_validate_not_a_generator_object_the_agent_sees(tmp_path: Path) -> None:
    for kind, source in {"async": GENERATOR_TOOLS, "sync": GENERATOR_TOOLS.replace("async def", "def")}.items():
        path = write_suite(tmp_path / kind, [{"id": "c", "query": "q", "expect": {"contains": "x"}}],
                           {"tools": "tools.py"}, {"tools.py": source})
        for command in ("validate", "run"):
            done = run_cli(command, "--cases", path, cwd=tmp_path / kind)
            assert done.returncode == 2, (kind, command, done.stdout, done.stderr)
            assert_clean(done, tmp_path / kind)
            assert "tool 'numbers' is a generator function" in done.stderr, done.stderr


def test_a_tree_type_is_fine_and_an_argument_check_that_breaks_is_an_infrastructure_error(tmp_path: Path) -> None:
    cases = [{"id": "shallow", "query": "q", "metadata": {"depth": 3}, "expect": {"contains": "ok counted"}},
             # jsonschema follows the tree one level per $ref: 5,000 levels outrun Python's recursion limit.
             {"id": "deep", "query": "q", "metadata": {"depth": 5000}, "expect": {"contains": "ok"}}]
    done, report = run_suite(tmp_path, TREE_TOOLS, TREE_AGENT, cases)
    assert done.returncode == 2, done.stdout + done.stderr
    runs = {c["id"]: c["runs"][0] for c in report["cases"]}
    assert runs["shallow"]["status"] == "passed"
    deep = runs["deep"]
    assert deep["status"] == "error" and deep["trace"]["agent_error"] is None
    assert deep["error"].startswith("the argument check of tool 'count' raised RecursionError")
    (step,) = deep["trace"]["steps"]
    assert step["name"] == "count" and step["error"] == deep["error"] and step["output"] is None


ASYNC_TOOLS = '''
import asyncio
import decimal

import pydantic
from agent_eval import tool


class Price(pydantic.BaseModel):
    amount: decimal.Decimal
    tags: set[str]


@tool
async def fetch(key: str, env: dict) -> str:
    """Fetch a value after a pause on the run's loop."""
    await asyncio.sleep(0.01)
    env["seen"] = env.get("seen", 0) + 1
    return f"value of {key}"


@tool
async def stall() -> str:
    """Never answers in time."""
    await asyncio.sleep(3600)
    return "late"


@tool
def exits() -> str:
    """Raise SystemExit."""
    raise SystemExit(4)


@tool
def interrupts() -> str:
    """Raise KeyboardInterrupt."""
    raise KeyboardInterrupt("from a tool")


@tool
async def cancels() -> str:
    """Raise a CancelledError that no one asked for."""
    raise asyncio.CancelledError("not a real cancellation")


@tool
def genexit() -> str:
    """Raise GeneratorExit."""
    raise GeneratorExit("odd")


@tool
def price() -> Price:
    """A pydantic model."""
    return Price(amount=decimal.Decimal("9.99"), tags={"a"})


@tool
def decimal_value() -> decimal.Decimal:
    """A Decimal."""
    return decimal.Decimal("9.99")


@tool
def raw() -> bytes:
    """Bytes that are not UTF-8."""
    return b"ab\\xffcd"


@tool
def mixed() -> dict:
    """A dict JSON cannot hold as it is."""
    return {"n": decimal.Decimal("1.5"), "s": ("x",), 7: "seven"}
'''

ASYNC_AGENT = '''
async def agent(task):
    outs = []
    for name in task.metadata["calls"]:
        try:
            outs.append(await task.acall_tool(name, **({"key": "k"} if name == "fetch" else {})))
        except Exception as exc:
            outs.append(f"ERR {exc}")
    return "ok " + " | ".join(outs)


def sync_agent(task):
    outs = []
    for name in task.metadata["calls"]:
        try:
            outs.append(task.call_tool(name, **({"key": "k"} if name == "fetch" else {})))
        except Exception as exc:
            outs.append(f"ERR {exc}")
    return "ok " + " | ".join(outs)
'''

CALLS = ["fetch", "exits", "interrupts", "cancels", "genexit", "price", "decimal_value", "raw", "mixed", "fetch"]
SEEN = ["value of k", "ERR SystemExit: 4", "ERR KeyboardInterrupt: from a tool",
        "ERR CancelledError: not a real cancellation", "ERR GeneratorExit: odd",
        '{"amount":"9.99","tags":["a"]}', "9.99", "ab\ufffdcd", '{"n":"1.5","s":["x"],"7":"seven"}', "value of k"]


def test_async_tools_base_exceptions_and_odd_values(tmp_path: Path) -> None:
    cases = [{"id": "calls", "query": "q", "metadata": {"calls": CALLS}, "expect": {"contains": "ok"},
              "expected_env_check": {"path": ["seen"], "equals": 2}}]
    for agent in ("agent", "sync_agent"):
        done, report = run_suite(tmp_path / agent, ASYNC_TOOLS, ASYNC_AGENT, cases, "--agent",
                                 f"{tmp_path / agent / 'agent.py'}:{agent}")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "never awaited" not in done.stderr
        run = report["cases"][0]["runs"][0]
        steps = run["trace"]["steps"]
        assert [s["output"] if s["error"] is None else f"ERR {s['error']}" for s in steps] == SEEN
        assert run["trace"]["final_answer"] == "ok " + " | ".join(SEEN)


def test_an_async_tool_is_bounded_by_the_timeout(tmp_path: Path) -> None:
    cases = [{"id": "stall", "query": "q", "metadata": {"calls": ["stall"]}, "expect": {"contains": "ok"}}]
    done, report = run_suite(tmp_path, ASYNC_TOOLS, ASYNC_AGENT, cases, "--timeout", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    run = report["cases"][0]["runs"][0]
    assert run["status"] == "failed" and run["trace"]["stop_reason"] == "timeout"
    assert run["trace"]["agent_error"] == "the agent outran --timeout 1s"
