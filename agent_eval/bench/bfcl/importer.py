"""`agent-eval bench import bfcl`: BFCL multi-turn categories as one suite folder.

Upstream's own loader reads the entries (files `BFCL_v4_multi_turn_<category>.json` and their
`possible_answer/` twins), upstream's own conversion makes the tool schemas, and upstream's own grader
checks every gold trajectory as agent-eval's gold agent will play it; a gold it rejects is left out of the
suite and listed in the lock."""
from __future__ import annotations

import difflib
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

from agent_eval.bench import BFCL, ImportRequest, ImportResult
from agent_eval.bench.bfcl import upstream as up
from agent_eval.bench.bfcl.convert import CONVERTER_VERSION, GoldError, gold_turns, to_case
from agent_eval.bench.bfcl.runtime import SCHEMAS_FILE
from agent_eval.bench.suite_folder import LOCK_FILE, check_out, file_hashes, json_bytes, publish
from agent_eval.errors import ConfigError

MAX_STEPS = 21  # upstream's MAXIMUM_STEP_LIMIT = 20 ends a turn after its 21st completion with calls
CLASS_FILES = ("gorilla_file_system", "math_api", "message_api", "posting_api", "ticket_api", "trading_bot",
               "travel_booking", "vehicle_control", "long_context")
TOOLS_MODULE = '''"""The tools of this BFCL multi-turn suite: BFCL's own API classes, imported from the installed
package by agent_eval.bench.bfcl.runtime (no upstream code is copied here). Each run gets its own instances
(`backend`); the state checks compare their public attributes (`snapshot`). Importing this module checks
bench.lock.json against what is installed."""
from agent_eval.bench.bfcl.runtime import build_backend as backend, snapshot, suite_tools

TOOL_REGISTRY, TOOLS_SCHEMA = suite_tools(__file__)
__all__ = ["TOOL_REGISTRY", "TOOLS_SCHEMA", "backend", "snapshot"]
'''


def categories_of(request: ImportRequest) -> list[str]:
    """The categories asked for (the default when none), each known, in the order given, once."""
    known = [name for name, _ in BFCL.parts]
    asked = list(dict.fromkeys(request.options.get("category") or BFCL.default_parts))
    for name in asked:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"--category {name!r}: BFCL multi-turn's categories are {', '.join(known)}.{hint}")
    for option in request.options:
        if option not in BFCL.options and request.options[option]:
            raise ConfigError(f"bench import bfcl takes no --{option}; it takes --category.")
    return asked


def import_suite(request: ImportRequest) -> ImportResult:
    """Write the suite folder of the requested categories; the folder must be new or empty."""
    categories = categories_of(request)
    check_out(request.out)  # before any work; publish checks again
    upstream = up.locate(request.source)
    added_prompt = up.module("constants.default_prompts").DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
    cases: list[dict[str, Any]] = []
    left_out: list[dict[str, str]] = []
    schemas: dict[str, dict[str, Any]] = {}
    held: dict[str, dict[str, Any]] = {}
    read: list[str] = [f"{up.BACKEND}/func_source_code/{name}.py" for name in CLASS_FILES]
    read += [f"{up.BACKEND}/multi_turn_checker.py", f"{up.BACKEND}/multi_turn_utils.py"]
    version = upstream.version or (upstream.commit or "checkout")
    for category in categories:
        read += up.data_files(category)
        golds = {g["id"]: g["ground_truth"] for g in up.load_gold(category)}
        for entry in up.load_entries(category):
            if request.only is not None and entry["id"] not in request.only:
                continue
            read += _func_doc_files(entry)
            _add_schemas(schemas, held, entry)
            turns, reason = _checked_gold(entry, golds.get(entry["id"]))
            if reason is not None:
                left_out.append({"id": entry["id"], "reason": reason})
                continue
            cases.append(to_case(entry, turns, category, version, added_prompt))
    for function, tool in held.items():
        schemas.setdefault(function, tool)  # a function only ever added later keeps the form it was added in
    name = "bfcl-" + "+".join(categories)
    counts = {"cases": len(cases), "turns": sum(len(c["messages"]) for c in cases),
              "gold_calls": sum(len(c["expected_tools"]) for c in cases)}
    lock = {"benchmark": BFCL.name, "title": BFCL.title, "source": upstream.source(BFCL),
            "converter_version": CONVERTER_VERSION, "categories": categories,
            "files": file_hashes(upstream.package_dir, read), "counts": counts, "left_out": left_out}
    bench = {"benchmark": BFCL.name, "parts": categories, **upstream.source(BFCL), "counts": counts}
    suite = {"name": name, "tools": "tools.py", "max_steps": MAX_STEPS, "bench": bench}
    folder = publish(request.out, {
        "cases.json": json_bytes({"suite": suite, "cases": cases}),
        SCHEMAS_FILE: json_bytes([schemas[k] for k in sorted(schemas, key=_class_order(upstream.package_dir))]),
        "tools.py": TOOLS_MODULE.encode(),
        "NOTICE": _notice(upstream.source(BFCL)).encode(),
        LOCK_FILE: json_bytes(lock)})
    return ImportResult(folder, folder / "cases.json", counts, tuple(item["id"] for item in left_out))


def _class_order(package_dir: Path) -> Callable[[str], tuple[int, int, str]]:
    """The suite's tool order: BFCL's classes in its own class table's order, each class's functions in its
    function document's order (upstream lists an entry's classes in the entry's order)."""
    import json

    config = up.module("constants.executable_backend_config")
    place: dict[str, tuple[int, int]] = {}
    for number, doc in enumerate(config.MULTI_TURN_FUNC_DOC_FILE_MAPPING.values()):
        lines = (package_dir / up.FUNC_DOC / doc).read_text(encoding="utf-8").splitlines()
        for line_number, line in enumerate(lines):
            if line.strip():
                place.setdefault(json.loads(line)["name"], (number, line_number))
    return lambda name: (*place.get(name, (len(place), 0)), name)


def _func_doc_files(entry: dict[str, Any]) -> list[str]:
    config = up.module("constants.executable_backend_config")
    return [f"{up.FUNC_DOC}/{config.MULTI_TURN_FUNC_DOC_FILE_MAPPING[name]}" for name in entry["involved_classes"]]


def _add_schemas(schemas: dict[str, dict[str, Any]], held: dict[str, dict[str, Any]], entry: dict[str, Any]) -> None:
    """BFCL's Chat Completions schema of every function the entry offers from the start (one name, one
    schema), and of those it adds later (`held`: upstream's loader adds its language hint to the offered
    functions only, so a held-out function's description lacks it; the suite keeps the offered form)."""
    for tool in up.openai_tools(list(entry["function"])):
        name = tool["function"]["name"]
        if schemas.setdefault(name, tool) != tool:
            raise ConfigError(f"BFCL entry {entry['id']}: function {name!r} has two different schemas in this "
                              f"import; agent-eval needs one per name.")
    later = [doc for docs in (entry.get("missed_function") or {}).values() for doc in docs]
    for tool in up.openai_tools(later):
        held.setdefault(tool["function"]["name"], tool)


def _checked_gold(entry: dict[str, Any], gold: list[list[str]] | None) -> tuple[Any, str | None]:
    """The entry's gold calls per turn, and why they cannot be kept (None when upstream's grader accepts them
    as agent-eval's gold agent plays them: each turn's calls in one completion)."""
    if gold is None:
        return [], "no ground truth in possible_answer"
    try:
        turns = gold_turns(gold, entry["involved_classes"])
    except GoldError as exc:
        return [], f"gold call unreadable: {exc}"
    if len(turns) != len(entry["question"]):
        return [], f"{len(turns)} gold turns for {len(entry['question'])} user turns"
    result = up.verdict(entry, gold, [[calls] if calls else [] for calls in turns])
    if not result["valid"]:
        return [], f"upstream's grader rejects the gold: {result.get('error_type')}: {result.get('error_message')}"
    return turns, None


def _notice(source: dict[str, Any]) -> str:
    origin = (f"the {source['package']} {source['version']} package from PyPI" if "version" in source else
              f"the checkout {source['checkout']} (commit {source.get('commit') or 'unknown'})")
    licence = files("agent_eval.bench").joinpath("licences/Apache-2.0.txt").read_text(encoding="utf-8")
    return (f"This suite was made by agent-eval from BFCL, the Berkeley Function-Calling Leaderboard (multi-turn\n"
            f"categories), part of the Gorilla project: https://github.com/ShishirPatil/gorilla\n"
            f"(berkeley-function-call-leaderboard/), read from {origin}.\n"
            f"cases.json holds BFCL's questions, initial configurations and ground truth, and functions.json its\n"
            f"function documentation converted by BFCL's own code; tools.py imports BFCL's API classes from the\n"
            f"installed package. BFCL is Copyright the Gorilla authors and licensed under the Apache License,\n"
            f"Version 2.0, reproduced below.\n\n{licence}")


