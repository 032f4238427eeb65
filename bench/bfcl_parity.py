"""BFCL multi-turn parity: perturbed gold trajectories, each with the verdict of BFCL's own multi-turn checker.

    .venv/bin/python bench/bfcl_parity.py --per-category 30 --seed 1 --out tests/bench/bfcl_parity_set.json
    .venv/bin/python bench/bfcl_parity.py --per-category 200 --seed 2 --play      # the held-back set, played

A trajectory is, per user turn, the tool calls an agent makes, in order: `[[name, args], ...]`. Each
perturbation starts from the entry's gold (as agent-eval's gold agent plays it) and changes it one way;
the verdict comes from upstream's checker alone (agent_eval.bench.bfcl.upstream.verdict), never from
agent-eval. `--play` imports the entries with `agent-eval bench import`, plays every trajectory through
`agent-eval run` with a Python agent that replays it (tests/bench/bfcl_replay_agent.py), and counts the
cases where agent-eval's verdict differs from upstream's.
"""
from __future__ import annotations

import argparse
import copy
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent_eval.bench import BFCL  # noqa: E402
from agent_eval.bench.bfcl import upstream as up  # noqa: E402
from agent_eval.bench.bfcl.convert import gold_turns  # noqa: E402

Turns = list[list[list[Any]]]  # per turn, [name, args] calls


def _nonempty(turns: Turns) -> list[int]:
    return [t for t, calls in enumerate(turns) if calls]


def _changed(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice((1, -1, 10))
    if isinstance(value, float):
        return round(value * 1.5 + 1, 2)
    if isinstance(value, str):
        return rng.choice((value + "x", value.upper() if value != value.upper() else value.lower(), ""))
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        return {}
    return "x"


def drop(turns: Turns, rng: random.Random, entry: dict[str, Any]) -> Turns | None:
    t = rng.choice(_nonempty(turns))
    del turns[t][rng.randrange(len(turns[t]))]
    return turns


def empty_turn(turns: Turns, rng: random.Random, entry: dict[str, Any]) -> Turns | None:
    turns[rng.choice(_nonempty(turns))] = []
    return turns


def wrong_arg(turns: Turns, rng: random.Random, entry: dict[str, Any]) -> Turns | None:
    calls = [(t, i) for t in _nonempty(turns) for i, call in enumerate(turns[t]) if call[1]]
    if not calls:
        return None
    t, i = rng.choice(calls)
    args = turns[t][i][1]
    key = rng.choice(sorted(args))
    args[key] = _changed(args[key], rng)
    return turns


def wrong_type(turns: Turns, rng: random.Random, entry: dict[str, Any]) -> Turns | None:
    calls = [(t, i, k) for t in _nonempty(turns) for i, call in enumerate(turns[t])
             for k, v in call[1].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not calls:
        return None
    t, i, k = rng.choice(calls)
    turns[t][i][1][k] = str(turns[t][i][1][k])
    return turns


def missing_arg(turns: Turns, rng: random.Random, entry: dict[str, Any]) -> Turns | None:
    calls = [(t, i) for t in _nonempty(turns) for i, call in enumerate(turns[t]) if call[1]]
    if not calls:
        return None
    t, i = rng.choice(calls)
    del turns[t][i][1][rng.choice(sorted(turns[t][i][1]))]
    return turns


def extra(turns: Turns, rng: random.Random, entry: dict[str, Any]) -> Turns | None:
    t = rng.choice(_nonempty(turns))
    call = copy.deepcopy(rng.choice(turns[t]))
    turns[t].insert(rng.randrange(len(turns[t]) + 1), call)
    return turns


def reorder(turns: Turns, rng: random.Random, entry: dict[str, Any]) -> Turns | None:
    multi = [t for t in _nonempty(turns) if len(turns[t]) > 1]
    if not multi:
        return None
    t = rng.choice(multi)
    i, j = rng.sample(range(len(turns[t])), 2)
    turns[t][i], turns[t][j] = turns[t][j], turns[t][i]
    return turns


def shift(turns: Turns, rng: random.Random, entry: dict[str, Any]) -> Turns | None:
    t = rng.choice(_nonempty(turns))
    to = t + rng.choice((-1, 1))
    if not 0 <= to < len(turns):
        to = t - 1 if t > 0 else t + 1
    if not 0 <= to < len(turns):
        return None
    call = turns[t].pop(rng.randrange(len(turns[t])))
    turns[to].insert(0 if to > t else len(turns[to]), call)
    return turns


def unknown_function(turns: Turns, rng: random.Random, entry: dict[str, Any]) -> Turns | None:
    t = rng.choice(_nonempty(turns))
    turns[t].insert(0, ["no_such_function", {}])
    return turns


def early_added(turns: Turns, rng: random.Random, entry: dict[str, Any]) -> Turns | None:
    """miss_func: a function held out until turn k is called before turn k (its call moved earlier)."""
    held = {int(k): {d["name"] for d in docs} for k, docs in (entry.get("missed_function") or {}).items()}
    moves = [(k, t, i) for k, names in held.items() for t in range(k, len(turns)) for i, call in enumerate(turns[t])
             if call[0] in names]
    if not moves:
        return None
    k, t, i = rng.choice(moves)
    call = turns[t].pop(i)
    turns[rng.randrange(k)].append(call)
    return turns


def without_asking(turns: Turns, rng: random.Random, entry: dict[str, Any]) -> Turns | None:
    """miss_param: at the turn that lacks a parameter (empty gold), the next turn's calls are made at once,
    without asking the user for the missing value."""
    gaps = [t for t in range(len(turns) - 1) if not turns[t] and turns[t + 1]]
    if not gaps:
        return None
    t = rng.choice(gaps)
    turns[t] = copy.deepcopy(turns[t + 1])
    return turns


def gold(turns: Turns, rng: random.Random, entry: dict[str, Any]) -> Turns | None:
    return turns


PERTURBATIONS = {"gold": gold, "drop": drop, "empty_turn": empty_turn, "wrong_arg": wrong_arg,
                 "wrong_type": wrong_type, "missing_arg": missing_arg, "extra": extra, "reorder": reorder,
                 "shift": shift, "unknown_function": unknown_function, "early_added": early_added,
                 "without_asking": without_asking}
SPECIFIC = {"multi_turn_miss_func": ("early_added",), "multi_turn_miss_param": ("without_asking",)}


def generate(categories: list[str], per_category: int, seed: int) -> list[dict[str, Any]]:
    """`per_category` perturbed trajectories per category, each with upstream's verdict."""
    up.locate(None)
    rng = random.Random(seed)
    found: list[dict[str, Any]] = []
    for category in categories:
        golds = {g["id"]: g["ground_truth"] for g in up.load_gold(category)}
        entries = up.load_entries(category)
        kinds = [k for k in PERTURBATIONS if k not in {n for v in SPECIFIC.values() for n in v}]
        kinds += list(SPECIFIC.get(category, ()))
        made = 0
        while made < per_category:
            entry = rng.choice(entries)
            specific = SPECIFIC.get(category, ())
            if specific and made % 3 == 0:  # a third of a miss_ category's set is its own kind of mistake
                kind = rng.choice(specific)
            else:
                kind = kinds[made % len(kinds)] if made < 2 * len(kinds) else rng.choice(kinds)
            base = [[[name, args] for name, args in calls] for calls in gold_turns(golds[entry["id"]],
                                                                                  entry["involved_classes"])]
            turns = PERTURBATIONS[kind](copy.deepcopy(base), rng, entry)
            if turns is None:
                continue
            played = [[[(name, args) for name, args in calls]] if calls else [] for calls in turns]
            result = up.verdict(entry, golds[entry["id"]], played)
            found.append({"id": entry["id"], "category": category, "perturbation": kind, "turns": turns,
                          "upstream": result})
            made += 1
    return found


def play(trajectories: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each trajectory played through `agent-eval run` (a Python agent replaying it); the disagreements."""
    from tests.bench.bfcl_play import play_trajectories

    with tempfile.TemporaryDirectory() as tmp:
        return play_trajectories(trajectories, Path(tmp))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--category", action="append", default=None)
    parser.add_argument("--per-category", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--play", action="store_true")
    args = parser.parse_args()
    categories = args.category or [name for name, _ in BFCL.parts]
    started = time.perf_counter()
    trajectories = generate(categories, args.per_category, args.seed)
    verdicts = Counter((t["category"], t["upstream"]["valid"]) for t in trajectories)
    print(f"{len(trajectories)} trajectories in {time.perf_counter() - started:.1f} s; upstream verdicts: "
          + ", ".join(f"{c} {'pass' if v else 'fail'} {n}" for (c, v), n in sorted(verdicts.items())))
    if args.out is not None:
        args.out.write_bytes(orjson.dumps({"bfcl_eval": BFCL.version, "seed": args.seed, "trajectories": trajectories},
                                          option=orjson.OPT_INDENT_2) + b"\n")
        print(f"wrote {args.out}")
    if args.play:
        disagreements = play(trajectories)
        print(f"played {len(trajectories)}: {len(disagreements)} disagreements")
        for item in disagreements[:20]:
            print("  ", item)


if __name__ == "__main__":
    main()
