"""Write deepeval's own files with deepeval itself: goldens (JSON, JSONL, CSV), a conversational golden,
and a test run (`deepeval.evaluate`, which writes `.deepeval/.latest_test_run.json`).

    DEEPEVAL_TELEMETRY_OPT_OUT=YES python -m tests.recorders.deepeval_files OUT_DIR

The goldens are what the shop agent of tests/recorders/agent.py should do; the test case is what it did
(lookup_order(42) twice, refund(42, 9.5)), scored by ToolCorrectnessMetric (given a model object that is never asked).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from importlib import metadata
from pathlib import Path


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    from deepeval.dataset import ConversationalGolden, EvaluationDataset, Golden
    from deepeval.test_case import LLMTestCase, ToolCall, Turn

    lookup_42 = ToolCall(name="lookup_order", input_parameters={"order_id": 42})
    refund_42 = ToolCall(name="refund", input_parameters={"order_id": 42, "amount": 9.5})
    lookup_7 = ToolCall(name="lookup_order", input_parameters={"order_id": 7})
    goldens = [
        Golden(input="Refund order 42", expected_output="Refunded 9.50.", expected_tools=[lookup_42, refund_42],
               context=["Order 42 cost 9.50", "Refunds are instant"], name="refund-42"),
        Golden(input="Where is order 7?", expected_output="Order 7 is in transit.", tools_called=[lookup_7, lookup_7],
               comments="the agent looked it up twice", name="where-7"),
        Golden(input="What are your opening hours?", expected_output="We are open 9 to 5.",
               retrieval_context=["Opening hours: 9 to 5"]),
    ]
    dataset = EvaluationDataset(goldens=goldens)
    for kind in ("json", "jsonl", "csv"):
        dataset.save_as(file_type=kind, directory=str(out), file_name="goldens")
    conversation = ConversationalGolden(
        scenario="A customer wants order 42 refunded, then asks about order 7.",
        expected_outcome="Order 42 is refunded and the customer learns order 7 is in transit.",
        user_description="A polite customer", name="refund-then-track",
        turns=[Turn(role="user", content="Refund order 42"),
               Turn(role="assistant", content="Refunded 9.50.", tools_called=[lookup_42, lookup_42, refund_42]),
               Turn(role="user", content="And order 7?"),
               Turn(role="assistant", content="Order 7 is in transit.", tools_called=[lookup_7])])
    EvaluationDataset(goldens=[conversation]).save_as(file_type="json", directory=str(out), file_name="conversational")

    from deepeval import evaluate
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.models import DeepEvalBaseLLM

    class NoModel(DeepEvalBaseLLM):  # the metric wants a model object; tool correctness never asks it
        def load_model(self) -> None:
            return None

        def generate(self, prompt: str) -> str:
            raise RuntimeError("ToolCorrectnessMetric asked a model")

        async def a_generate(self, prompt: str) -> str:
            raise RuntimeError("ToolCorrectnessMetric asked a model")

        def get_model_name(self) -> str:
            return "none"

    case = LLMTestCase(input="Refund order 42", actual_output="Refunded 9.50.", name="refund-42",
                       tools_called=[lookup_42, lookup_42, refund_42], expected_tools=[lookup_42, refund_42])
    cwd = Path.cwd()
    os.chdir(out)  # deepeval writes .deepeval/ in the working folder
    try:
        evaluate(test_cases=[case], metrics=[ToolCorrectnessMetric(model=NoModel())])
    finally:
        os.chdir(cwd)
    latest = out / ".deepeval" / ".latest_test_run.json"
    (out / "test_run.json").write_bytes(latest.read_bytes())
    shutil.rmtree(out / ".deepeval")  # its cache and full-run copies are not needed
    (out / "versions.json").write_text(json.dumps({"setup": "deepeval", "versions": {
        "deepeval": metadata.version("deepeval")}}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
