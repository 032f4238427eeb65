"""The pytest plugin as a careless user calls it: `--agent-eval` given a folder is a usage error naming it,
never a collection of everything under that folder."""
from __future__ import annotations

import pytest


def test_a_folder_given_as_a_case_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    cases = pytester.path / "cases"
    cases.mkdir()
    (cases / "test_unrelated.py").write_text("def test_elsewhere():\n    assert 0\n")  # must never be collected
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--agent-eval", "cases")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--agent-eval" in result.stderr.str() and "a folder, not a case file" in result.stderr.str()
    assert "test_elsewhere" not in result.stdout.str()


JOURNAL_WRITER = '''
import time
from pathlib import Path


def agent(task):
    if task.case_id == "c2":  # an agent that can write the output folder overwrites the journal
        time.sleep(1.5)  # the journal flushes the runs before this one (at most a second apart)
        for journal in Path(task.metadata["out"]).glob("*.jsonl"):
            journal.write_bytes(b"x" * journal.stat().st_size)  # the same length: every offset still "fits"
    return "done " + task.case_id
'''


def test_the_report_and_an_inline_case_s_runs_never_come_from_a_journal_an_agent_overwrote(tmp_path) -> None:
    import orjson

    from agent_eval.pytest_plugin.book import open_book
    from agent_eval.report.model import new_run_id, now_iso
    from tests.builders import flags_of, write_suite

    out = tmp_path / "out"
    rows = [{"id": f"c{n}", "query": "go", "expect": {"icontains": "done"}, "metadata": {"out": str(out)}}
            for n in range(4)]
    cases = write_suite(tmp_path, rows, {"agent": "agent.py:agent"}, {"agent.py": JOURNAL_WRITER})
    book = open_book(flags_of(cases=cases, concurrency=1, output_dir=out, no_html=True), new_run_id(), now_iso())
    book.play([r["id"] for r in rows])
    assert [orjson.loads(chunk)["trace"]["final_answer"] for chunk in book.run_chunks("c0")] == ["done c0"]
    report, _ = book.write_report()
    assert report is not None
    written = orjson.loads(next(out.glob("*.json")).read_bytes())  # valid JSON, every run whole
    assert [c["runs"][0]["trace"]["final_answer"] for c in written["cases"]] == [f"done c{n}" for n in range(4)]


def test_under_xdist_the_controller_never_reads_a_worker_s_journal_back(tmp_path) -> None:
    import orjson

    from agent_eval.pytest_plugin.book import open_book
    from agent_eval.report.model import new_run_id, now_iso
    from tests.builders import flags_of, write_suite

    out = tmp_path / "out"
    rows = [{"id": f"c{n}", "query": "go", "expect": {"icontains": "done"}, "metadata": {"out": str(tmp_path)}}
            for n in range(2)]
    cases = write_suite(tmp_path, rows, {"agent": "agent.py:agent"}, {"agent.py": "def agent(task):\n"
                                                                      "    return 'done ' + task.case_id\n"})
    flags = flags_of(cases=cases, output_dir=out, no_html=True)
    run_id, created_at = new_run_id(), now_iso()
    worker = open_book(flags, run_id, created_at, part="gw0")  # an xdist worker's book
    worker.play(["c0", "c1"])
    payload = worker.part_payload()
    assert worker.journal is not None
    worker.journal.path.write_bytes(b"x" * worker.journal.path.stat().st_size)  # overwritten after the runs
    controller = open_book(flags, run_id, created_at)
    controller.merge_parts([payload])
    report, _ = controller.write_report()
    assert report is not None
    written = orjson.loads(next(out.glob("*.json")).read_bytes())
    assert [c["runs"][0]["trace"]["final_answer"] for c in written["cases"]] == ["done c0", "done c1"]
