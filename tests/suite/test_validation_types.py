

def test_safety_fields_of_the_wrong_type_are_named_not_a_traceback(tmp_path) -> None:
    import orjson

    from agent_eval.errors import CaseFileError
    from agent_eval.suite.cases import load_suite

    (tmp_path / "tools.py").write_text("from agent_eval import tool\n\n@tool\ndef noop(env: dict) -> str:\n"
                                       "    \"\"\"Nothing.\"\"\"\n    return 'ok'\n")
    path = tmp_path / "cases.json"
    path.write_bytes(orjson.dumps({"suite": {"tools": "tools.py", "policy": 5, "sensitive_tools": "noop"},
                                   "cases": [{"id": "c1", "query": "x", "expect": {"contains": "ok"}}]}))
    try:
        load_suite(path)
    except CaseFileError as exc:
        text = str(exc)
    else:
        raise AssertionError("an int policy and a string sensitive_tools passed")
    assert "suite.policy" in text and "suite.sensitive_tools" in text
