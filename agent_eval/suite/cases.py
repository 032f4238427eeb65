"""Load and validate a case file: both shapes, the suite block, paths, env merging."""
from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import orjson
from pydantic import (BaseModel, ConfigDict, Field, JsonValue, StrictFloat, StrictInt, StrictStr, TypeAdapter,
                      ValidationError, field_validator)
from typing_extensions import is_typeddict

from agent_eval.records import CASE_FILE_SHAPE, Case, split_case_file
from agent_eval.errors import CaseFileError, Problem
from agent_eval.flags import without_plugin_keys
from agent_eval.limits import MAX_COUNT
from agent_eval.suite.pricing import ModelPrice
from agent_eval.suite.fields import (OTHER_TOOLS_FIELDS, args_depth_problems, depth_problems, extra_case_fields,
                                     id_problem, known_fields, model_at, unknown_key_message)

if TYPE_CHECKING:
    from agent_eval.score.custom import ScorerSet
    from agent_eval.suite.mcp_spec import ServerSpec
    from agent_eval.suite.tools import ToolSet

DEFAULT_TOOLS = "tools.py"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


Count = Annotated[StrictInt, Field(ge=1, le=MAX_COUNT)]


class Defaults(_Strict):
    repeat: Count | None = None
    threshold: Annotated[StrictFloat | StrictInt, Field(gt=0, le=1, allow_inf_nan=False)] | None = None


class SuiteBlock(_Strict):
    """Every key of the suite block; any other key is an error (a typo must not switch a rule off)."""

    name: str | None = None
    tools: str | list[str | dict[str, Any]] | None = None
    agent: str | None = None
    system_prompt: str | None = None
    model: str | None = None
    max_steps: Count | None = None
    initial_env: dict[str, Any] | str | None = None
    judge: dict[str, Any] | None = None
    pricing: dict[str, ModelPrice] | None = None
    defaults: Defaults | None = None
    # Any JSON here: their own validators check them and name the field (suite/validation_safety.py...)
    sensitive_tools: JsonValue = None
    escalation_tools: JsonValue = None
    stop_tools: JsonValue = None  # calling one ends the episode after that agent turn
    policy: JsonValue = None
    user: JsonValue = None
    scorers: JsonValue = None
    rate_limit: StrictStr | StrictInt | StrictFloat | None = None  # RPM[:BURST], like --rate-limit
    bench: JsonValue = None  # what `agent-eval bench import` read: the report names the benchmark from it

    @field_validator("rate_limit")
    @classmethod
    def _known_rate_limit(cls, value: Any) -> Any:
        if value is not None:
            from agent_eval.provider.throttle import parse_rate_limit

            parse_rate_limit(str(value))  # its ValueError says what is wrong
        return value


def case_fields() -> tuple[str, ...]:
    """Every field a case may hold: the keys of the case model (records.Case, but for the private ones and
    other tools' fields) and the fields of the check families plugins add (once per case file)."""
    from agent_eval.score.checks import case_check_fields

    own = (name for name in Case.__annotations__ if not name.startswith("_") and name not in OTHER_TOOLS_FIELDS)
    return tuple(dict.fromkeys((*own, *case_check_fields())))


@functools.cache
def case_model() -> TypeAdapter[Case]:
    """The pydantic validator of records.Case (built once, when the first case file is read)."""
    return TypeAdapter(Case)


@dataclass
class Suite:
    """A loaded, validated case file."""

    path: Path
    name: str
    settings: dict[str, Any]
    initial_env: dict[str, Any]
    cases: list[Case]
    tools: ToolSet
    scorers: ScorerSet
    servers: list[ServerSpec] = field(default_factory=list)  # one per MCP server
    problems: list[Problem] = field(default_factory=list)
    unused_fields: dict[str, list[str]] = field(default_factory=dict)  # field -> ids of the cases holding it

    @property
    def warnings(self) -> list[str]:
        """What to say once before a run (and in validate): fields that no check or scorer reads."""
        if not self.unused_fields:
            return []
        shown = "; ".join(f"{name!r} (in {len(ids)} case{'s' if len(ids) != 1 else ''}, e.g. {ids[0]!r})"
                          for name, ids in sorted(self.unused_fields.items()))
        return [f"warning: {self.path}: no check or scorer reads these case fields, so they are only kept: "
                f"{shown}. Remove them, or fix their spelling."]

    @property
    def base_dir(self) -> Path:
        return self.path.parent


def read_json(path: Path) -> Any:
    """Parse a JSON file with orjson; OSError and JSONDecodeError propagate."""
    return orjson.loads(path.read_bytes())


def _field_of(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class Collector:
    """The problems found in one case file (or in cases given in code, named by `path`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problems: list[Problem] = []

    def add(self, case_id: str | None, field_name: str | None, message: str) -> None:
        self.problems.append(Problem(str(self.path), case_id, field_name, message))

    def pydantic(self, case_id: str | None, err: ValidationError, prefix: str = "",
                 model: type | None = None) -> None:
        for e in err.errors():
            name = _field_of(e["loc"])
            if e["type"] == "extra_forbidden":
                known = known_fields(model, e["loc"][:-1])
                message = unknown_key_message(e["loc"][-1], known) if known else "unknown field"
                self.add(case_id, prefix + name, message)
            elif e["type"] == "dict_type" and is_typeddict(record := model_at(model, e["loc"])):
                # pydantic's words for a model, which these records were: they stay as they were
                self.add(case_id, prefix + name, f"{e['msg']} or instance of {getattr(record, '__name__', '')}")
            else:
                self.add(case_id, prefix + name, e["msg"])


def _load_json_ref(value: Any, base_dir: Path, col: Collector, case_id: str | None, name: str) -> Any:
    """An object is taken as it is; a string is the path of a JSON file relative to the case file."""
    if not isinstance(value, str):
        return value
    path = (base_dir / value).resolve()
    try:
        return read_json(path)
    except OSError as exc:
        col.add(case_id, name, f"cannot read {path}: {exc.strerror or exc}; fix the path (relative to the case file)")
    except orjson.JSONDecodeError as exc:
        col.add(case_id, name, f"{path} is not valid JSON: {exc}")
    return None


def load_suite(path: Path | str) -> Suite:
    """Load and validate a whole case file; raise CaseFileError listing every problem found."""
    path = Path(path)
    col = Collector(path)
    try:
        data = read_json(path)
    except OSError as exc:
        raise CaseFileError([Problem(str(path), None, None,
                                     f"cannot read the case file ({exc.strerror or exc}); pass --cases PATH")]) \
            from None
    except orjson.JSONDecodeError as exc:
        raise CaseFileError([Problem(str(path), None, None, f"not valid JSON: {exc}")]) from None

    split = split_case_file(data)
    if split is None:
        raise CaseFileError([Problem(str(path), None, None, f"expected {CASE_FILE_SHAPE}")])
    block, raw_cases = split  # the suite block as the file holds it, checked by _load_suite_block
    for key in data if isinstance(data, dict) else ():
        if key not in ("suite", "cases"):
            col.add(None, key, "unknown top-level key; the object shape is {\"suite\": {...}, \"cases\": [...]}")

    suite = _load_suite_block(path, block, col)
    seen: set[str] = set()
    scorer_problems: dict[tuple[str, str], list[str]] = {}  # one scorer's problem, once with its cases
    allowed = case_fields()
    for index, raw in enumerate(raw_cases):
        case = load_case(suite, raw, index, col, scorer_problems, allowed)
        case_id = raw.get("id") if isinstance(raw, dict) else None
        if isinstance(case_id, str):  # checked even when the case has other problems
            if case_id in seen:
                col.add(case_id, "id", "duplicate id; every case id must be unique")
            seen.add(case_id)
        if case is not None:
            suite.cases.append(case)
    for (field_name, message), ids in scorer_problems.items():
        if len(ids) == 1:
            col.add(ids[0], field_name, message)
        else:
            shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            col.add(None, field_name, f"{message} (affects {len(ids)} cases: {shown})")
    if not raw_cases:
        col.add(None, "cases", "the file holds no case")
    if col.problems:
        raise CaseFileError(col.problems)
    return suite


def _load_suite_block(path: Path, block: Any, col: Collector) -> Suite:
    base_dir = path.parent
    if not isinstance(block, dict):
        col.add(None, "suite", "must be an object")
        block = {}
    try:
        known = {*SuiteBlock.model_fields, *(f"defaults.{key}" for key in Defaults.model_fields)}
        SuiteBlock.model_validate(without_plugin_keys(block, known))  # a plugin setting's own key is its row's
    except ValidationError as err:
        col.pydantic(None, err, "suite.", SuiteBlock)
    settings = dict(block)
    env = _load_json_ref(block.get("initial_env"), base_dir, col, None, "suite.initial_env") or {}
    if not isinstance(env, dict):
        col.add(None, "suite.initial_env", "must be an object, or the path of a JSON file holding one")
        env = {}
    for _, message in depth_problems({"initial_env": env}, ["initial_env"]):
        col.add(None, "suite.initial_env", message)
        env = {}
    tools: ToolSet | None = None
    servers: list[ServerSpec] = []
    tools_spec = block.get("tools")
    if tools_spec is None and (base_dir / DEFAULT_TOOLS).is_file():
        tools_spec = DEFAULT_TOOLS  # the seed layout: a bare list of cases with tools.py beside it
    if isinstance(tools_spec, (str, list)):
        from agent_eval.suite.mcp_tools import load_suite_tools

        given_env = env if block.get("initial_env") is not None else None
        tools, servers, found = load_suite_tools(tools_spec, base_dir, given_env)
        for field_name, message in found:
            col.add(None, field_name, message)
    if tools is None:
        from agent_eval.suite.tools import ToolSet

        tools = ToolSet([])
    from agent_eval.suite.validation_safety import validate_suite_safety

    for field_name, message in validate_suite_safety(block, tools):
        col.add(None, field_name, message)
    from agent_eval.suite.validation_scenario import validate_user_block

    for field_name, message in validate_user_block(block, base_dir):
        col.add(None, field_name, message)
    from agent_eval.suite.scorers import load_scorers

    scorers, scorer_problems = load_scorers(block.get("scorers"), base_dir)
    for field_name, message in scorer_problems:
        col.add(None, field_name, message)
    return Suite(path=path, name=str(block.get("name") or path.stem), settings=settings, initial_env=env,
                 cases=[], tools=tools, scorers=scorers, servers=servers)


def load_case(suite: Suite, raw: Any, index: int, col: Collector,
              scorer_problems: dict[tuple[str, str], list[str]], allowed: tuple[str, ...]) -> Case | None:
    """One case of `suite`, checked as the file's cases are (problems go to `col`); None when unusable."""
    if not isinstance(raw, dict):
        col.add(f"#{index}", None, "a case must be an object")
        return None
    case_id = given if isinstance(given := raw.get("id"), str) else f"#{index}"
    bad_id = id_problem(raw.get("id"))
    if bad_id:
        case_id = f"#{index}"  # shown by its position: the id itself could not be printed as it is
        col.add(case_id, "id", bad_id)
    try:
        valid = case_model().validate_python(raw)
    except ValidationError as err:
        col.pydantic(case_id, err, model=Case)
        _check_inputs(raw, case_id, col)  # type-tolerant: report it with the type errors
        return None
    case = cast(Case, dict(raw))  # its values as written; the fields the model lets through are checked below
    case["tags"], case["requires"] = valid.get("tags", []), valid.get("requires", [])
    case["metadata"] = valid.get("metadata", {})
    _check_inputs(case, case_id, col)
    own_env = _load_json_ref(case.get("initial_env"), suite.base_dir, col, case_id, "initial_env")
    if own_env is not None and not isinstance(own_env, dict):
        col.add(case_id, "initial_env", "must be an object, or the path of a JSON file holding one")
        own_env = None
    case["initial_env"] = own_env
    too_deep = [*depth_problems(case, ("initial_env", "expected_env", "metadata", "expect")),
                *args_depth_problems(case.get("expected_tools"))]
    for field_name, message in too_deep:
        col.add(case_id, field_name, message)
    if too_deep:
        return None  # nothing more can be said safely about a case that no run could hold
    from agent_eval.suite.env_patch import patch_problems

    for field_name, message in patch_problems(own_env):
        col.add(case_id, field_name, message)
    if isinstance(case.get("expected_env"), str) and case["expected_env"] not in ("replay", "replay_per_turn"):
        case["expected_env"] = _load_json_ref(case["expected_env"], suite.base_dir, col, case_id, "expected_env")
    if isinstance(one_check := case.get("expected_env_check"), dict):  # one check given as an object
        case["expected_env_check"] = [cast(dict[str, Any], one_check)]
    if valid.get("faults"):  # as the model read them ("2" is 2), without the keys given as null
        case["faults"] = [{k: v for k, v in f.items() if v is not None} for f in valid["faults"]]
    from agent_eval.suite.validation import validate_case

    for field_name, message in validate_case(case, suite):
        col.add(case_id, field_name, message)
    from agent_eval.score.safety import SAFETY_KEY, safety_view

    case[SAFETY_KEY] = safety_view(suite.settings, case)  # what scoring needs of the suite
    # Scorer parameters are resolved here, once per case, so a run never looks them up.
    for field_name, message in suite.scorers.bind(case) if suite.scorers else ():
        scorer_problems.setdefault((field_name, message), []).append(case_id)
    consumed = {p.source for s in suite.scorers.scorers for p in s.params} if suite.scorers else set()
    errors, leftovers = extra_case_fields(raw, allowed, consumed)
    for field_name, message in errors:
        col.add(case_id, field_name, message)
    for name in leftovers:
        suite.unused_fields.setdefault(name, []).append(case_id)
    return case


def _check_inputs(case: Mapping[str, Any], case_id: str, col: Collector) -> None:
    given = [k for k in ("query", "messages", "scenario") if case.get(k) is not None]
    if len(given) != 1:
        col.add(case_id, "query", "give exactly one of query, messages or scenario"
                + (f" (found {', '.join(given)})" if given else ""))
    elif given[0] == "messages" and not case["messages"]:
        col.add(case_id, "messages", "must hold at least one user message")


def case_env(suite: Suite, case: Case) -> dict[str, Any]:
    """The case's initial environment: its own `initial_env` applied to the suite's as a JSON Merge Patch
    (suite/env_patch.py: null removes a key, {"$replace": V} sets one as it is)."""
    from agent_eval.suite.env_patch import merge_patch

    own = case.get("initial_env")
    return suite.initial_env if own is None else merge_patch(suite.initial_env, own)


def user_messages(case: Case) -> list[str]:
    """The scripted user messages of a case, in order."""
    query = case.get("query")
    return [query] if query is not None else list(case.get("messages") or [])
