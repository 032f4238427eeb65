"""How long pairing expected with actual calls takes, and its peak memory (section 12b, "Any length scores").

    .venv/bin/python bench/matching.py

Each shape scores the trajectory check (unordered) and param_accuracy of one run in this process, and
prints the wall time and the peak traced memory (tracemalloc) of each.
"""
from __future__ import annotations

import random
import time
import tracemalloc

from agent_eval.score.checks import check_trajectory
from agent_eval.score.metrics import param_accuracy


def shapes() -> dict[str, tuple[list[dict], list[dict]]]:
    rng = random.Random(0)
    distinct = [{"name": "lookup", "args": {"key": f"k{i}"}} for i in range(1500)]
    return {
        "1,500 distinct keys vs 20,000 calls over 2,000 keys": (
            distinct, [{"name": "lookup", "args": {"key": f"k{j % 2000}"}} for j in range(20000)]),
        "1,500 identical vs 20,000 identical": (
            [{"name": "lookup", "args": {"key": "a"}}] * 1500, [{"name": "lookup", "args": {"key": "a"}}] * 20000),
        "1,500 three-field calls vs 20,000 random partial matches": (
            [{"name": "f", "args": {"a": i % 50, "b": i % 7, "c": i}} for i in range(1500)],
            [{"name": "f", "args": {"a": rng.randrange(50), "b": rng.randrange(7), "c": rng.randrange(3000)}}
             for _ in range(20000)]),
        "1,500 $regex calls vs 20,000 distinct calls": (
            [{"name": "f", "args": {"q": {"$regex": f"x{i % 10}.*"}}} for i in range(1500)],
            [{"name": "f", "args": {"q": f"x{j}"}} for j in range(20000)]),
    }


def main() -> None:
    for title, (expected, steps) in shapes().items():
        scorers = (("trajectory", lambda e=expected, s=steps: check_trajectory("unordered", e, s)["passed"]),
                   ("param_accuracy", lambda e=expected, s=steps: param_accuracy(e, s)))
        for what, score in scorers:
            tracemalloc.start()
            started = time.perf_counter()
            value = score()
            elapsed = time.perf_counter() - started
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"{title:58} {what:15} {elapsed:7.2f} s  peak {peak / 2**20:7.1f} MiB  -> {value}")


if __name__ == "__main__":
    main()
