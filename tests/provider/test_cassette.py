"""Cassette names, secrets and matching (section 22): pure functions, no run."""
from __future__ import annotations

from pathlib import Path

from agent_eval.provider.cassette import (canonical, case_folder, cassette_path, first_difference, match_key,
                                          scrub_request)
from agent_eval.redaction import remember_secret


def test_a_hostile_case_id_stays_inside_dir_and_names_one_case() -> None:
    ids = ["..", ".", "", "a/b", "a%2Fb", "a b", "../../etc/passwd", "\x00nul", "ünï", ".hidden", "A", "a",
           "x" * 5000, "x" * 4999 + "y"]
    names = [case_folder(i) for i in ids]
    assert len(set(names)) == len(ids)  # percent-encoding ('%' itself encoded) is one-to-one
    for name in names:
        assert name and "/" not in name and "\x00" not in name and not name.startswith(".")
        assert name == name.lower() or "%" in name  # no two names that differ in case only
        assert len(name.encode()) <= 200
    assert case_folder("A") == "%41" and case_folder("") == "%"
    assert case_folder("a/b") == "a%2Fb" and case_folder("a%2Fb") == "a%252%46b" and case_folder("..") == "%2E."
    root = Path("/tapes")
    assert cassette_path(root, "../../etc/passwd", 2).parent.parent == root


def test_secrets_and_key_like_fields_are_removed() -> None:
    remember_secret("configured-key-123")
    body = {"messages": [{"role": "user", "content": "my key is configured-key-123 and sk-abcdefghijklmnopqrstu"}],
            "api_key": "anything", "extra_headers": {"Authorization": "Bearer tok-123"}, "max_tokens": 5}
    assert scrub_request(body) == {"messages": [{"role": "user", "content": "my key is *** and ***"}], "api_key": "***",
                           "extra_headers": {"Authorization": "***"}, "max_tokens": 5}


def test_the_canonical_request_ignores_what_varies_between_identical_requests() -> None:
    a = {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}, "user": "u1",
         "metadata": {"run": 1}, "store": False, "api_key": "x"}
    b = {"messages": [], "model": "m"}
    assert canonical(a) == b
    assert match_key("agent", "/chat/completions", a) == match_key("agent", "/chat/completions", b)
    assert match_key("judge", "/chat/completions", a) != match_key("agent", "/chat/completions", a)


def test_the_first_difference_is_named_by_its_path() -> None:
    recorded = {"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "tool", "content": "old"}]}
    live = {"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "tool", "content": "new"}]}
    # Equal before it, in sorted-key order: messages[0].content, messages[0].role = 2 fields.
    assert first_difference(live, recorded) == (2, "messages[1].content", "new", "old")
    assert first_difference(live, live) is None
    longer = {**live, "messages": [*live["messages"], {"role": "user", "content": "more"}]}
    assert first_difference(longer, live)[1] == "messages[2]"  # one more message
    assert first_difference({**recorded, "tools": []}, recorded)[1] == "tools"
