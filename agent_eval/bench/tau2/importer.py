"""`agent-eval bench import tau2`: one tau2-bench domain (airline or retail) and split as one suite folder.

Upstream's own loader reads the tasks, upstream's own classes make the tool schemas and the database, its
own prompts become the suite's system prompt and user-simulator prompt, and its own evaluator grades every
gold trajectory as agent-eval's gold agent will play it; a gold it rejects is left out of the suite and
listed in the lock."""
from __future__ import annotations

import difflib
import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from agent_eval.bench import TAU2, ImportRequest, ImportResult
from agent_eval.bench.suite_folder import LOCK_FILE, Upstream, check_out, json_bytes, publish, sha256_of
from agent_eval.bench.tau2 import grading
from agent_eval.bench.tau2 import upstream as up
from agent_eval.bench.tau2.convert import CONVERTER_VERSION, gold_calls, gold_reply, to_case
from agent_eval.bench.tau2.runtime import DB_FILE, SCHEMAS_FILE
from agent_eval.errors import ConfigError

MAX_STEPS = 200  # tau2 has no limit per turn, only 200 steps (messages) per simulation
TOOLS_MODULE = '''"""The tools of this tau2 suite: tau2's own domain database and tool kit, imported from the installed
package by agent_eval.bench.tau2.runtime (no upstream code is copied here). Each run gets its own database
(`backend`); the state checks compare it as JSON (`snapshot`). Importing this module checks bench.lock.json
against what is installed."""
from agent_eval.bench.tau2.runtime import suite_tools

TOOL_REGISTRY, TOOLS_SCHEMA, backend, snapshot = suite_tools(__file__)
__all__ = ["TOOL_REGISTRY", "TOOLS_SCHEMA", "backend", "snapshot"]
'''
MIT = """MIT License

Copyright (c) 2025 Sierra Research

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


def _one(request: ImportRequest, option: str, known: tuple[str, ...], default: str | None) -> str:
    given = list(dict.fromkeys(request.options.get(option) or ()))
    if not given:
        if default is None:
            raise ConfigError(f"bench import tau2 needs --{option}: one of {', '.join(known)}.")
        return default
    if len(given) > 1:
        raise ConfigError(f"--{option}: give one of {', '.join(known)} (one suite per {option}), not "
                          f"{', '.join(given)}.")
    if given[0] not in known:
        close = difflib.get_close_matches(given[0], known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"--{option} {given[0]!r}: tau2's {option}s here are {', '.join(known)}.{hint}")
    return given[0]


def parts_of(request: ImportRequest) -> tuple[str, str]:
    """The domain and split asked for, each known."""
    for option, values in request.options.items():
        if option not in TAU2.options and values:
            raise ConfigError(f"bench import tau2 takes no --{option}; it takes --domain and --split.")
    return _one(request, "domain", up.DOMAINS, None), _one(request, "split", up.SPLITS, "base")


def import_suite(request: ImportRequest) -> ImportResult:
    """Write the suite folder of the requested domain and split; the folder must be new or empty."""
    domain, split = parts_of(request)
    check_out(request.out)  # before any work; publish checks again
    upstream = up.locate(request.source)
    version = upstream.version or (upstream.commit or "checkout")
    files = up.data_files(domain)
    policy = files["policy"].read_text(encoding="utf-8")
    db_class, tools_class = up.domain_classes(domain)
    database = db_class.load(str(files["db"]))
    schemas = [tool.openai_schema for tool in tools_class(database).get_tools().values()]
    registered = grading.register_fast(domain)
    cases: list[dict[str, Any]] = []
    left_out: list[dict[str, str]] = []
    for task in up.tasks(domain, split):
        if request.only is not None and str(task.id) not in request.only:
            continue
        reason = _gold_rejected(domain, task, registered)
        if reason is not None:
            left_out.append({"id": str(task.id), "reason": reason})
            continue
        cases.append(to_case(task, domain, split, version, up.max_errors()))
    counts = {"cases": len(cases), "gold_calls": sum(len(c["expected_tools"]) for c in cases),
              "communicate_info": sum(len(c.get("expect", {}).get("icontains", [])) for c in cases)}
    source = upstream.source(TAU2)
    bench = {"benchmark": TAU2.name, "parts": [domain, split], **source, "counts": counts}
    suite = {"name": f"tau2-{domain}-{split}", "tools": "tools.py", "system_prompt": up.agent_system_prompt(policy),
             "initial_env": {"db": DB_FILE}, "max_steps": MAX_STEPS,
             "user": {"prompt": up.user_prompt(), "stop_tokens": up.stop_tokens()}, "bench": bench}
    contents = {DB_FILE: orjson.dumps(database.model_dump(mode="json")), SCHEMAS_FILE: json_bytes(schemas),
                "cases.json": json_bytes({"suite": suite, "cases": cases}), "tools.py": TOOLS_MODULE.encode(),
                "NOTICE": _notice(source).encode()}
    lock = {"benchmark": TAU2.name, "title": TAU2.title, "source": source, "converter_version": CONVERTER_VERSION,
            "domain": domain, "split": split, "files": _hashes(upstream, files.values()),
            "suite_files": {name: hashlib.sha256(contents[name]).hexdigest() for name in (DB_FILE, SCHEMAS_FILE)},
            "counts": counts, "left_out": left_out}
    folder = publish(request.out, {**contents, LOCK_FILE: json_bytes(lock)})
    return ImportResult(folder, folder / "cases.json", counts, tuple(item["id"] for item in left_out))


def _gold_rejected(domain: str, task: Any, registered: str) -> str | None:
    """Why tau2's own evaluator rejects the task's gold as agent-eval's gold agent plays it (None: accepted)."""
    result = grading.verdict(domain, task, [{"calls": gold_calls(task), "reply": gold_reply(task)}], registered)
    if result["reward"] == 1.0:
        return None
    return (f"tau2's evaluator gives the gold reward {result['reward']} (termination {result['termination']}, "
            f"db_match {result['db_match']}, communicate {result['communicate']})")


def _hashes(upstream: Upstream, paths: Any) -> dict[str, str]:
    """The sha256 of each file read, by its path relative to the upstream package's folder."""
    return {os.path.relpath(path, upstream.package_dir): sha256_of(Path(path))
            for path in sorted(set(paths), key=str)}


def _notice(source: dict[str, Any]) -> str:
    from importlib.metadata import PackageNotFoundError, metadata

    origin = (f"the {source['package']} {source['version']} package from PyPI" if "version" in source else
              f"the checkout {source['checkout']} (commit {source.get('commit') or 'unknown'})")
    try:
        packaged = metadata(TAU2.package)["License"] or ""
    except (PackageNotFoundError, KeyError):
        packaged = ""
    extra = (f"\n\nThe {TAU2.package} package states its licence as follows:\n\n{packaged}" if packaged and
             "version" in source else "")
    return (f"This suite was made by agent-eval from tau2-bench (Sierra Research):\n"
            f"https://github.com/sierra-research/tau2-bench, read from {origin}.\n"
            f"cases.json holds tau2's tasks (user scenarios, gold actions, communicate_info, nl_assertions), its\n"
            f"agent system prompt with the domain policy and its user simulator's guidelines; db.json is tau2's\n"
            f"domain database as its own data model loads it; tools.json holds the tool schemas tau2 builds;\n"
            f"tools.py imports tau2's domain classes from the installed package. tau2-bench is\n"
            f"Copyright (c) 2025 Sierra Research and licensed under the MIT License:\n\n{MIT}{extra}")
