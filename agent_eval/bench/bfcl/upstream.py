"""Upstream's own code, imported from the pinned `bfcl-eval` package (or a checkout): its data loader, its
schema conversion, its call decoding and its multi-turn grader. Nothing of it is copied.

Two things are arranged around the import, and only here:
- `bfcl_eval.constants.eval_config` creates `result/`, `score/` and `.file_locks/` under `BFCL_PROJECT_ROOT`
  (by default beside site-packages) when imported; it is pointed at a folder of agent-eval's own in the
  temporary directory.
- `bfcl_eval.model_handler.utils` (schema conversion, call decoding) imports the Java and JavaScript
  parsers, which import `tree_sitter`, `tree_sitter_java` and `tree_sitter_javascript` at import time and
  call them only for the Java/JavaScript categories. Where those packages are not installed, stand-in
  modules are put in `sys.modules` for that one import and removed after it; calling them raises.
"""
from __future__ import annotations

import itertools
import os
import sys
import tempfile
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agent_eval.bench import BFCL
from agent_eval.bench.suite_folder import Upstream, find_upstream, make_importable
from agent_eval.errors import ConfigError

IMPORT_NAME = "bfcl_eval"
CHECKOUT_INNER = "berkeley-function-call-leaderboard"
DATA = "data"
FUNC_DOC = "data/multi_turn_func_doc"
BACKEND = "eval_checker/multi_turn_eval"
_STAND_INS = ("tree_sitter", "tree_sitter_java", "tree_sitter_javascript")
_checks = itertools.count()


def locate(source: Path | None) -> Upstream:
    """The pinned installed package, or the checkout `source`; made importable as `bfcl_eval`."""
    upstream = find_upstream(BFCL, source, IMPORT_NAME, CHECKOUT_INNER)
    make_importable(upstream, IMPORT_NAME)
    return upstream


def _stand_in(name: str) -> types.ModuleType:
    module = types.ModuleType(name, f"agent-eval's stand-in for {name}: BFCL imports it, multi-turn never calls it")

    class Language:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

    class Parser:
        def set_language(self, language: Any) -> None:
            pass

        def parse(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"{name} is a stand-in: agent-eval imports no Java/JavaScript BFCL category")

    module.Language = Language  # type: ignore[attr-defined]
    module.Parser = Parser  # type: ignore[attr-defined]
    module.language = lambda: None  # type: ignore[attr-defined]
    return module


@contextmanager
def _importing() -> Iterator[None]:
    from importlib.util import find_spec

    placed = [name for name in _STAND_INS if name not in sys.modules and find_spec(name) is None]
    for name in placed:
        sys.modules[name] = _stand_in(name)
    before = os.environ.get("BFCL_PROJECT_ROOT")
    root = Path(tempfile.gettempdir()) / f"agent-eval-bfcl-{os.getuid() if hasattr(os, 'getuid') else 0}"
    os.environ["BFCL_PROJECT_ROOT"] = str(root)
    try:
        yield
    finally:
        for name in placed:
            sys.modules.pop(name, None)
        if before is None:
            os.environ.pop("BFCL_PROJECT_ROOT", None)
        else:
            os.environ["BFCL_PROJECT_ROOT"] = before


def module(name: str) -> types.ModuleType:
    """Upstream's module `bfcl_eval.<name>`, imported as above; a missing dependency names the extra."""
    import importlib

    try:
        with _importing():
            return importlib.import_module(f"{IMPORT_NAME}.{name}")
    except ModuleNotFoundError as exc:
        raise ConfigError(f"BFCL's code needs {exc.name!r}, which is not installed. Install what the import "
                          f"needs: {BFCL.install_commands()}") from None


def load_entries(category: str) -> list[dict[str, Any]]:
    """Upstream's entries of `category`, as its own loader gives them to a model (functions included)."""
    return list(module("utils").load_dataset_entry(category))


def load_gold(category: str) -> list[dict[str, Any]]:
    return list(module("utils").load_ground_truth_entry(category))


def data_files(category: str) -> list[str]:
    """The data files the loader reads for `category`, relative to the package folder."""
    prefix = module("constants.category_mapping").VERSION_PREFIX
    return [f"{DATA}/{prefix}_{category}.json", f"{DATA}/possible_answer/{prefix}_{category}.json"]


def openai_tools(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """BFCL's own conversion of function docs to Chat Completions tools (its type mapping included)."""
    utils = module("model_handler.utils")
    enums = module("constants.enums")
    mapping = module("constants.type_mappings").GORILLA_TO_OPENAPI
    return list(utils.convert_to_tool(functions, mapping, enums.ModelStyle.OPENAI_COMPLETIONS))


def decoded_calls(step: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Upstream's decoding of one completion's tool calls (name, arguments) into its executable strings."""
    import json

    utils = module("model_handler.utils")
    return list(utils.convert_to_function_call([{name: json.dumps(args)} for name, args in step]))


def verdict(entry: dict[str, Any], gold: list[list[str]], turns: list[list[list[tuple[str, dict[str, Any]]]]],
            ) -> dict[str, Any]:
    """Upstream's multi-turn verdict on a trajectory: per user turn, its completions' tool calls.

    As upstream's runner: fewer turns than the gold is a forced termination, a completion without a call
    is dropped, and the checker runs on the rest. The checker caches its API instances in a module global
    keyed by model name; each verdict uses a name of its own and removes its instances afterwards."""
    if len(turns) != len(gold):
        return {"valid": False, "error_type": "multi_turn:force_terminated",
                "error_message": f"{len(turns)} turns played of {len(gold)}"}
    decoded = [[calls for step in turn if (calls := decoded_calls(step))] for turn in turns]
    checker = module("eval_checker.multi_turn_eval.multi_turn_checker")
    utils = module("eval_checker.multi_turn_eval.multi_turn_utils")
    name = f"agent_eval_check_{os.getpid()}_{next(_checks)}"
    try:
        result = checker.multi_turn_checker(decoded, gold, dict(entry), entry["id"].rsplit("_", 1)[0], name)
    except Exception as exc:  # noqa: BLE001 - upstream's asserts: an invalid trajectory, as its runner counts it
        result = {"valid": False, "error_type": "upstream_exception", "error_message": repr(exc)}
    finally:
        cache = vars(utils)
        for key in [k for k in cache if k.startswith(name)]:
            del cache[key]
    return {k: v for k, v in result.items() if k in ("valid", "error_type", "error_message")}
