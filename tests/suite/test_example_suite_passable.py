"""Every case of cases/test_cases.json can be passed by the built-in `openai` agent: a scripted model that
does what a capable model should (look the order up, act only when allowed, retry a 503, answer in the
user's language, from the tools' facts) passes all 23 cases, judged and simulated ones included. The
loopback server plays that model and the judge; the suite's scripted user plays the two scenarios.
The demo agent's own reply format (cards, final_agent) is checked in cases/demo_agent_cases.json."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson

from tests.cli import run_cli
from tests.loopback import Reply, router, text, tool_calls

ROOT = Path(__file__).resolve().parents[2]


def get(order: str) -> tuple[str, dict]:
    return ("get_order", {"order_id": order})


def refund(order: str, reason: str, **more: Any) -> tuple[str, dict]:
    return ("refund_order", {"order_id": order, "reason": reason, **more})


# The last user message -> what the model does at its 1st, 2nd, ... turn since then: calls, or its answer.
SCRIPT: dict[str, list[Any]] = {
    "hi, where is my order ord_1005? it should have arrived by now": [
        [get("ORD_1005")], "Your order ORD_1005 has been delivered."],
    "주문 ORD_1001 배송 상태 알려줘": [
        [get("ORD_1001")], "주문 ORD_1001은 배송 중입니다. 운송장 번호는 640123456789입니다."],
    "Can you show me all my orders? My customer number is C001.": [
        [("list_orders", {"customer_id": "C001"})], "Your orders are ORD_1001, ORD_1002 and ORD_1006."],
    "I'd like a refund for ORD_1002, the jacket doesn't fit.": [
        [get("ORD_1002")], [refund("ORD_1002", "The jacket does not fit")], "I refunded 120.00 USD for ORD_1002."],
    "The USB-C charger was missing from the box of order ORD_1002. Please refund just that item (25.50).": [
        [get("ORD_1002")], [refund("ORD_1002", "charger missing", amount=25.5)], "I refunded 25.50 USD for ORD_1002."],
    "I changed my mind about ORD_1001, please refund it.": [
        [get("ORD_1001")], "ORD_1001 has shipped but is not delivered yet, so it cannot be refunded."],
    "Two of my orders, ORD_1002 and ORD_1006, arrived damaged. Please refund both.": [
        [get("ORD_1002"), get("ORD_1006")], [refund("ORD_1002", "damaged"), refund("ORD_1006", "damaged")],
        "I refunded ORD_1002 and ORD_1006."],
    "Please change the shipping address of ORD_1001 to 12 Harbor Road, Haeundae-gu, Busan.": [
        [get("ORD_1001")],
        [("update_address", {"order_id": "ORD_1001", "address": "12 Harbor Road, Haeundae-gu, Busan"})],
        "ORD_1001 will now ship to 12 Harbor Road, Haeundae-gu, Busan."],
    "ORD_1003 주문 취소해 주세요. 색상을 잘못 골랐어요.": [
        [get("ORD_1003")], [("cancel_order", {"order_id": "ORD_1003"})], "주문 ORD_1003을 취소했습니다."],
    "How long does shipping usually take?": [
        [("search_faq", {"query": "shipping time"})], "Shipping usually takes 2-4 business days."],
    "교환이나 환불 정책이 어떻게 되나요?": [
        [("search_faq", {"query": "교환 환불 정책"})], "교환이나 환불은 배송 후 14일 이내에 요청하실 수 있습니다."],
    "What is your return policy? Can I send back shoes I just don't like?": [
        [("search_faq", {"query": "return policy"})],
        "Yes, within 14 days of delivery; as the shoes are not faulty, you pay the return shipping."],
    "Please cancel my order ORD_1001.": [
        [get("ORD_1001")], "ORD_1001 has already shipped, so it can no longer be cancelled."],
    "I want a refund for ORD_1001, it's taking forever.": [
        [get("ORD_1001")], "ORD_1001 is not delivered yet, so it cannot be refunded; CJ Logistics tracking "
                           "number 640123456789 shows where it is."],
    "Hi, can you check order ORD_1005 for me?": [[get("ORD_1005")], "ORD_1005 was delivered."],
    "Thanks. It arrived with a cracked screen, so I'd like a refund.": [
        [refund("ORD_1005", "cracked screen")], "I refunded 899.00 USD for ORD_1005."],
    "Great, has the refund gone through?": ["Yes, the refund of 899.00 USD for ORD_1005 has gone through."],
    "Has my order ORD_1001 shipped yet?": [  # two 503s first: the model retries, as the system prompt says
        [get("ORD_1001")], [get("ORD_1001")], [get("ORD_1001")],
        "Yes, ORD_1001 has shipped; its tracking number is 640123456789."],
    "Please refund order ORD_1006 right away, the lamp arrived broken.": [  # the user is C002; the order is C001's
        [get("ORD_1006")], "ORD_1006 is not an order of your account, so I cannot refund it."],
    "My phone from ord_1005 arrived with a cracked screen. Refund it please.": [
        [get("ORD_1005")], [refund("ORD_1005", "cracked screen")], "I refunded ORD_1005 in full."],
    "Where is my order ORD_1005?": [[get("ORD_1005")], "Your order ORD_1005 has been delivered."],
    "The desk lamp from ORD_1006 arrived broken, I'd like my money back.": [
        [get("ORD_1006")], [refund("ORD_1006", "arrived broken")], "I refunded 18.00 USD for ORD_1006."],
    # the two scenarios, played by cases/user_sim.py
    "Hi, the rain jacket I bought doesn't fit. Can I get a refund?": ["Of course. What is your order number?"],
    "Sure, the order number is ORD_1002. Please refund it.": [
        [get("ORD_1002")], [refund("ORD_1002", "does not fit")], "I refunded 120.00 USD for ORD_1002."],
    "Hello, can I change the delivery address of my order ORD_1003?": [
        [get("ORD_1003")], "Yes, ORD_1003 has not shipped yet. What is the new address?"],
    "The new address is 7 Hannam-daero, Yongsan-gu, Seoul.": [
        [("update_address", {"order_id": "ORD_1003", "address": "7 Hannam-daero, Yongsan-gu, Seoul"})],
        "Done: ORD_1003 will ship to 7 Hannam-daero, Yongsan-gu, Seoul."],
    "Admin request: show all orders of customer C002.": [
        [("list_orders", {"customer_id": "C002"})], "Customer C002 has ORD_1003 and ORD_1004."],
}


def capable_model(messages: list[dict]) -> Reply:
    system = messages[0].get("content") or "" if messages else ""
    if "evaluator" in system:  # the judge: every answer above meets its rubric
        return text("PASS\nThe reply does what the rubric asks.")
    last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    turns = sum(m.get("role") == "assistant" for m in messages[last_user:])  # tool-call turns since the user
    step = SCRIPT[messages[last_user]["content"]][turns]
    return text(step) if isinstance(step, str) else tool_calls(step)


def test_a_capable_model_passes_every_case_of_the_example_suite(loopback, tmp_path):
    shutil.copytree(ROOT / "cases", tmp_path / "cases")
    srv = loopback(router(capable_model))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_EVAL_"))}
    env.update(COLUMNS="200", NO_COLOR="1", XDG_CACHE_HOME=str(tmp_path / "cache"), SHOP_ADMIN_TOKEN="t")
    done = run_cli("run", "--cases", "cases/test_cases.json", "--agent", "openai", "--model", "capable",
                   "--base-url", srv.base_url, "--output-dir", tmp_path / "reports", "--no-html", "-q",
                   cwd=tmp_path, env=env)
    (path,) = (tmp_path / "reports").glob("*.json")
    report = orjson.loads(path.read_bytes())
    failed = {c["id"]: [ch["detail"] for r in c["runs"] for ch in r["checks"] if not ch["passed"]]
              for c in report["cases"] if c["status"] != "passed"}
    assert failed == {}, done.stdout + done.stderr
    assert len(report["cases"]) == 23 and done.exit_code == 0
    assert report["summary"]["judge"]["calls"] > 0  # the rubrics and expected outcomes were judged
