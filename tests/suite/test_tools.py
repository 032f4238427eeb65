from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal, Optional

import pydantic
import pytest

from agent_eval import tool
from agent_eval.errors import ConfigError, ToolError
from agent_eval.suite.tool_loading import load_tools
from agent_eval.suite.tools import ToolSet, build_schema, normalize_schema
from tests.builders import FIXTURES



def _params(toolset: ToolSet, name: str) -> dict:
    return next(s for s in toolset.schemas if s["function"]["name"] == name)["function"]["parameters"]


# --- loading both forms -------------------------------------------------------------------------


def test_seed_form_keeps_given_schemas_and_builds_missing_ones():
    ts = load_tools("tools_seed.py", FIXTURES)
    assert [s["function"]["name"] for s in ts.schemas] == ["get_order", "cancel_order", "ping"]
    assert ts.names == frozenset({"get_order", "cancel_order", "ping"})
    assert ts.has("ping") and not ts.has("nope")
    # the function-part-only entry is normalised to the full form
    cancel = ts.schemas[1]
    assert cancel["type"] == "function" and cancel["function"]["description"] == "Cancel an order."
    # ping had no TOOLS_SCHEMA entry: built from hints and docstring
    ping = ts.schemas[2]["function"]
    assert ping["description"] == "Ping a host."
    assert ping["parameters"]["properties"]["host"] == {"type": "string", "description": "The host name to reach."}
    assert ping["parameters"]["required"] == ["host"]


def test_decorated_form_in_definition_order_with_explicit_schema_renamed():
    ts = load_tools(str(FIXTURES / "tools_decorated.py"), Path("/nonexistent"))
    assert [s["function"]["name"] for s in ts.schemas] == ["search_flights", "book"]
    book = ts.schemas[1]["function"]
    assert book["description"] == "Book a flight."
    assert book["parameters"]["required"] == ["flight"]
    assert "helper_not_a_tool" not in ts.names


def test_schema_from_hints_and_docstring():
    ts = load_tools("tools_decorated.py", FIXTURES)
    fn = ts.schemas[0]["function"]
    assert fn["description"] == "Search flights between two airports."
    params = fn["parameters"]
    props = params["properties"]
    assert params["type"] == "object"
    assert set(params["required"]) == {"origin", "destination"}
    assert "env" not in props
    assert props["origin"] == {"type": "string", "description": "IATA code of the departure airport."}
    assert props["destination"]["description"] == "IATA code of the arrival airport."
    assert props["max_stops"] == {"type": "integer", "default": 1, "description": "Most stops allowed."}
    assert props["budget"]["anyOf"] == [{"type": "number"}, {"type": "null"}]
    assert props["direct_only"] == {"type": "boolean", "default": False}
    assert {"type": "array", "items": {"type": "string"}} in props["airlines"]["anyOf"]
    assert props["cabin"]["enum"] == ["economy", "business"]
    assert "title" not in str(params)


def test_build_schema_keeps_a_parameter_named_title_and_drops_context():
    def make_note(title: str, body: str = "", context: dict | None = None) -> str:
        """Make a note."""
        return title

    params = build_schema(make_note)["function"]["parameters"]
    assert set(params["properties"]) == {"title", "body"}
    assert params["properties"]["title"] == {"type": "string"}
    assert params["required"] == ["title"]


class Address(pydantic.BaseModel):
    city: str


def test_build_schema_keeps_user_data_in_defaults():
    def f(opts: dict = {"title": "kept"}) -> str:  # noqa: B006
        return ""

    assert build_schema(f)["function"]["parameters"]["properties"]["opts"]["default"] == {"title": "kept"}


def test_build_schema_nested_model_uses_defs_without_titles():
    def ship(to: Address, mode: Optional[Literal["air", "sea"]] = None) -> str:  # noqa: UP045
        return "ok"

    params = build_schema(ship, name="ship_it")
    assert params["function"]["name"] == "ship_it"
    p = params["function"]["parameters"]
    assert p["$defs"]["Address"] == {"type": "object", "properties": {"city": {"type": "string"}},
                                     "required": ["city"]}
    assert p["properties"]["to"] == {"$ref": "#/$defs/Address"}


def test_explicit_schema_both_shapes():
    part = {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}
    full = {"type": "function", "function": part}
    assert normalize_schema(part) == full
    assert normalize_schema(full) == full
    assert normalize_schema(full, "g")["function"]["name"] == "g"

    @tool(schema=full)
    def f1() -> str:
        return "x"

    @tool(schema={"description": "no name"})
    def f2() -> str:
        return "y"

    ts = ToolSet.from_functions([f1, f2])
    assert ts.names == frozenset({"f", "f2"})
    assert f1() == "x"  # the decorator leaves the function callable as before
    assert _params(ts, "f2") == {"type": "object", "properties": {}}


def test_bare_decorator_returns_the_same_function():
    def g(x: int) -> int:
        return x + 1

    assert tool(g) is g and g(1) == 2


def test_dotted_module_found_via_base_dir(monkeypatch):
    monkeypatch.delitem(sys.modules, "tools_seed", raising=False)
    ts = load_tools("tools_seed", FIXTURES)
    assert "ping" in ts.names
    monkeypatch.delitem(sys.modules, "tools_seed", raising=False)
    assert str(FIXTURES) not in sys.path


def test_dotted_module_in_a_package(tmp_path, monkeypatch):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tools.py").write_text("from agent_eval import tool\n\n@tool\ndef hello(name: str) -> str:\n"
                                  "    return 'hi ' + name\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ts = load_tools("mypkg.tools", Path("/nonexistent"))
    assert ts.invoke("hello", {"name": "x"}, {}) == "hi x"


def test_file_module_can_import_its_sibling(tmp_path):
    (tmp_path / "sibling_helpers_x1.py").write_text("GREETING = '안녕'\n")
    (tmp_path / "t.py").write_text("from sibling_helpers_x1 import GREETING\nfrom agent_eval import tool\n\n"
                                   "@tool\ndef greet() -> str:\n    return GREETING\n")
    ts = load_tools("t.py", tmp_path)
    assert ts.invoke("greet", {}, {}) == "안녕"
    assert str(tmp_path) not in sys.path


def test_merge_seed_and_decorated(tmp_path):
    (tmp_path / "m.py").write_text(
        "from agent_eval import tool\n\ndef a(x: int) -> int:\n    return x\n\n"
        "@tool\ndef b(y: str) -> str:\n    return y\n\nTOOL_REGISTRY = {'a': a, 'b': b}\n")
    ts = load_tools("m.py", tmp_path)
    assert [s["function"]["name"] for s in ts.schemas] == ["a", "b"]


# --- env / context injection and invocation ------------------------------------------------------


def test_env_and_context_injection_mutate_the_env():
    ts = load_tools("tools_seed.py", FIXTURES)
    env = {"orders": {"A1": {"status": "open"}}}
    assert ts.invoke("get_order", {"order_id": "A1"}, env) == {"status": "open"}
    assert ts.invoke("cancel_order", {"order_id": "A1"}, env) == "주문 A1 취소됨"
    assert env["orders"]["A1"]["status"] == "cancelled"
    assert ts.invoke("ping", {"host": "h"}, env) == "pong h x1"  # no env parameter: none passed

    dec = load_tools("tools_decorated.py", FIXTURES)
    env2: dict = {}
    assert dec.invoke("book", {"flight": "KE1"}, env2) == {"booked": "KE1", "note": "안녕하세요"}
    assert env2 == {"bookings": ["KE1"]}


def test_invoke_lets_exceptions_through():
    ts = load_tools("tools_seed.py", FIXTURES)
    with pytest.raises(KeyError):
        ts.invoke("get_order", {"order_id": "missing"}, {"orders": {}})
    with pytest.raises(TypeError):  # a missing argument still reaches the tool; Python decides
        ts.invoke("ping", {}, {})
    with pytest.raises(ToolError):
        ts.invoke("nope", {}, {})


# --- validation -----------------------------------------------------------------------------------


def test_validation_messages():
    ts = load_tools("tools_seed.py", FIXTURES)
    assert ts.validate("get_order", {"order_id": "A1"}) is None
    assert ts.validate("get_order", {"order_id": 123}) == "args.order_id: 123 is not of type 'string'"
    assert ts.validate("get_order", {}) == "args: 'order_id' is a required property"
    assert ts.validate("ping", {"host": "h", "count": "3"}) == "args.count: '3' is not of type 'integer'"
    assert ts.validate("nope", {}) == "unknown tool"


def test_validation_names_a_nested_index():
    def tag(labels: list[str]) -> str:
        return ",".join(labels)

    ts = ToolSet.from_functions({"tag": tag})
    assert ts.validate("tag", {"labels": ["a", 2]}) == "args.labels[1]: 2 is not of type 'string'"


def test_invalid_explicit_schema_is_a_config_error(tmp_path):
    (tmp_path / "bad.py").write_text(
        "from agent_eval import tool\n\n@tool(schema={'name': 'x', 'parameters': {'type': 'objekt'}})\n"
        "def x() -> str:\n    return ''\n")
    with pytest.raises(ConfigError, match=r"bad\.py.*not a valid JSON schema"):
        load_tools("bad.py", tmp_path)


# --- observations ---------------------------------------------------------------------------------


def test_observation_encoding():
    obs = ToolSet.observation
    assert obs("이미 문자열") == "이미 문자열"
    assert obs({"도시": "서울", "n": 1}) == '{"도시":"서울","n":1}'
    assert obs({1: "a"}) == '{"1":"a"}'
    assert obs([1, 2.5, None, True]) == "[1,2.5,null,true]"
    assert obs(None) == "null"
    assert obs({"s": {3}}) == '{"s":[3]}'

    class Thing:
        def __str__(self) -> str:
            return "a thing"

    assert obs(Thing()) == "a thing"
    assert obs({"t": Thing()}) == '{"t":"a thing"}'


# --- configuration errors -------------------------------------------------------------------------


def _load_error(tmp_path: Path, source: str | None, spec: str = "m.py") -> str:
    if source is not None:
        (tmp_path / spec).write_text(source)
    with pytest.raises(ConfigError) as info:
        load_tools(spec, tmp_path)
    message = str(info.value)
    assert "Traceback" not in message and "Fix" in message
    return message


def test_missing_file(tmp_path):
    message = _load_error(tmp_path, None, "missing.py")
    assert str(tmp_path / "missing.py") in message and "not found" in message


def test_missing_dotted_module(tmp_path):
    message = _load_error(tmp_path, None, "no_such_tools_module_xyz")
    assert "no_such_tools_module_xyz" in message and "not found" in message


def test_syntax_error(tmp_path):
    message = _load_error(tmp_path, "def broken(:\n    pass\n")
    assert str(tmp_path / "m.py") in message and "SyntaxError" in message


def test_import_error_inside_module(tmp_path):
    message = _load_error(tmp_path, "import not_installed_pkg_xyz\n")
    assert str(tmp_path / "m.py") in message and "ModuleNotFoundError" in message
    assert "not_installed_pkg_xyz" in message


def test_module_with_neither_form(tmp_path):
    message = _load_error(tmp_path, "def f():\n    return 1\n")
    assert str(tmp_path / "m.py") in message and "no tools found" in message


def test_schema_without_function(tmp_path):
    message = _load_error(tmp_path, "TOOL_REGISTRY = {}\nTOOLS_SCHEMA = [{'name': 'ghost', 'parameters': {}}]\n")
    assert str(tmp_path / "m.py") in message and "'ghost'" in message and "no function" in message


def test_duplicate_name(tmp_path):
    source = ("from agent_eval import tool\n\ndef a(x: int) -> int:\n    return x\n\n"
              "@tool(name='a')\ndef other(x: int) -> int:\n    return -x\n\nTOOL_REGISTRY = {'a': a}\n")
    message = _load_error(tmp_path, source)
    assert str(tmp_path / "m.py") in message and "'a'" in message and "twice" in message


def test_duplicate_decorated_names(tmp_path):
    source = ("from agent_eval import tool\n\n@tool(name='a')\ndef one() -> int:\n    return 1\n\n"
              "@tool(name='a')\ndef two() -> int:\n    return 2\n")
    message = _load_error(tmp_path, source)
    assert str(tmp_path / "m.py") in message and "twice" in message


def test_unbuildable_hint(tmp_path):
    source = ("from agent_eval import tool\n\nclass Opaque:\n    pass\n\n"
              "@tool\ndef f(x: Opaque) -> int:\n    return 1\n")
    message = _load_error(tmp_path, source)
    assert str(tmp_path / "m.py") in message and "'f'" in message and "schema" in message
