"""tau2 suite folders imported once per session: the tasks of the parity set (airline and retail), each
import graded at import time by tau2's own evaluator."""
from __future__ import annotations

from pathlib import Path

import pytest

from agent_eval.bench import ImportRequest
from agent_eval.bench.tau2.importer import import_suite

TAU2_SAMPLE = {"airline": ("2", "3", "7", "8", "9", "11"), "retail": ("0", "1", "2", "3", "4", "5")}


@pytest.fixture(scope="session")
def tau2_suites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The cases.json of a fresh import of each domain's sample."""
    out = {}
    for domain, ids in TAU2_SAMPLE.items():
        folder = tmp_path_factory.mktemp(f"tau2-{domain}") / "suite"
        result = import_suite(ImportRequest(folder, None, {"domain": (domain,)}, only=frozenset(ids)))
        assert result.left_out == () and result.counts["cases"] == len(ids)
        out[domain] = result.cases_file
    return out
