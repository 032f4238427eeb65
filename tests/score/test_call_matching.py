"""The iterative pairing of expected with actual calls equals brute force on small cases, and has no
recursion to run out of on large ones."""
from __future__ import annotations

import itertools
import random

from agent_eval.score.call_matching import max_matched_fields, max_matching
from agent_eval.score.matchers import match_call, matched_fields


def brute_fields(expected: list[dict], steps: list[dict]) -> int:
    """The most fields over every one-to-one pairing of same-name calls (each expected call may stay out)."""
    best = 0
    options = [[None] + [j for j, s in enumerate(steps) if s["name"] == e["name"]] for e in expected]
    for choice in itertools.product(*options):
        used = [j for j in choice if j is not None]
        if len(used) != len(set(used)):
            continue
        best = max(best, sum(matched_fields(e.get("args"), steps[j]["args"])
                             for e, j in zip(expected, choice, strict=True) if j is not None))
    return best


def brute_matching_size(expected: list[dict], steps: list[dict]) -> int:
    best = 0
    options = [[None] + [j for j, s in enumerate(steps) if match_call(e, s)] for e in expected]
    for choice in itertools.product(*options):
        used = [j for j in choice if j is not None]
        if len(used) == len(set(used)):
            best = max(best, len(used))
    return best


def random_call(rng: random.Random, expected: bool) -> dict:
    args = {}
    for key in rng.sample(["a", "b", "c"], rng.randint(0, 3)):
        roll = rng.random()
        if expected and roll < 0.15:
            args[key] = {"$ignore": True}
        elif expected and roll < 0.3:
            args[key] = {"$any": [rng.randint(0, 2), rng.randint(0, 2)]}
        elif expected and roll < 0.4:
            args[key] = {"$regex": "[01]"}
        else:
            args[key] = rng.choice([0, 1, 2, 1.0, True, "1", [1], {"x": 1}])
    return {"name": rng.choice(["f", "g"]), "args": args}


def test_equals_brute_force_on_small_random_cases() -> None:
    rng = random.Random(7)
    for _ in range(400):
        expected = [random_call(rng, True) for _ in range(rng.randint(0, 4))]
        steps = [random_call(rng, False) for _ in range(rng.randint(0, 5))]
        if rng.random() < 0.2 and steps:
            steps[0]["args"] = "not json"  # malformed arguments stay a string
        assert max_matched_fields(expected, steps) == brute_fields(expected, steps), (expected, steps)
        pairing = max_matching(expected, steps)
        assert sum(j is not None for j in pairing) == brute_matching_size(expected, steps), (expected, steps)
        used = [j for j in pairing if j is not None]
        assert len(used) == len(set(used))
        assert all(match_call(expected[i], steps[j]) for i, j in enumerate(pairing) if j is not None)


def test_weights_beat_greedy() -> None:
    # e0 {a:1, b:1} and e1 {a:1}; s0 {a:1} and s1 {a:1, b:1}: greedy e0->s0 (1) + e1->s1 (1) = 2,
    # the best e0->s1 (2) + e1->s0 (1) = 3
    expected = [{"name": "f", "args": {"a": 1, "b": 1}}, {"name": "f", "args": {"a": 1}}]
    steps = [{"name": "f", "args": {"a": 1}}, {"name": "f", "args": {"a": 1, "b": 1}}]
    assert max_matched_fields(expected, steps) == 3
    assert max_matching(expected, steps) == [1, 0]


def test_thousands_of_calls_pair_without_recursion() -> None:
    # 1,500 expected lookups of distinct keys against 20,000 calls cycling over 2,000 keys: keys 0..1499
    # each appear 10 times, so every expected call pairs whole -> 1,500 fields of 1,500
    expected = [{"name": "lookup", "args": {"key": f"k{i}"}} for i in range(1500)]
    steps = [{"name": "lookup", "args": {"key": f"k{j % 2000}"}} for j in range(20000)]
    assert max_matched_fields(expected, steps) == 1500
    pairing = max_matching(expected, steps)
    assert pairing[:3] == [0, 1, 2] and None not in pairing
    # the same 1,500 identical expected calls against 20,000 identical ones: one class each side
    same = [{"name": "lookup", "args": {"key": "a"}}] * 1500
    assert max_matched_fields(same, [{"name": "lookup", "args": {"key": "a"}}] * 20000) == 1500
