"""A deterministic, rule-based support bot for the support-demo suite: no LLM, no network.

It follows the Python agent contract (`agent(task)`) and is deliberately honest: it has
the blind spots a keyword bot really has, so some cases fail (see cases/README.md).
"""
from __future__ import annotations

import json
import re
from typing import Any

from agent_eval import Task, ToolError

# No word boundary after the digits: in "ORD_1001은" the Korean particle is a word character.
ORDER_ID = re.compile(r"(?<![A-Za-z0-9])ORD[_-]?(\d+)(?!\d)", re.IGNORECASE)
CUSTOMER_ID = re.compile(r"(?<![A-Za-z0-9])C(\d{3})(?!\d)")
AMOUNT = re.compile(r"(?<![\w.])(\d+\.\d{2})(?!\d)")
ADDRESS_TO = re.compile(r"\bto\s+(.+?)[.!]?\s*$", re.IGNORECASE | re.DOTALL)
HANGUL = re.compile(r"[가-힣]")

# Intents are tried in this order, and the first that matches wins. A keyword bot has no notion of
# "asking about refunds" versus "asking for a refund", which is one of its known blind spots.
CANCEL = ("cancel", "취소")
REFUND = ("refund", "money back", "환불")
ADDRESS = ("address", "주소")
LIST = re.compile(r"\b(my|all)\b.*\borders\b|\border history\b|주문 (목록|내역)|내 주문", re.IGNORECASE)
STATUS_WORDS = ("where is", "status", "track", "shipped", "배송 상태", "어디")
FAQ_WORDS = ("how long", "how do", "how can", "policy", "return", "exchange", "shipping", "delivery",
             "payment", "pay", "정책", "교환", "반품", "배송", "결제", "얼마나")
PARTIAL_WORDS = ("just", "only", "partial", "일부", "만 환불")

# A 503 is worth one immediate retry; the bot has no backoff, so it retries at once and gives up.
MAX_ATTEMPTS = 2

STATUS_KO = {"processing": "상품 준비 중", "shipped": "배송 중", "delivered": "배송 완료",
             "refunded": "환불 완료", "partially_refunded": "부분 환불", "cancelled": "주문 취소"}


_DECODER = json.JSONDecoder()


class Unavailable(Exception):
    """A tool kept failing with a transient error."""


def agent(task: Task) -> dict:
    """Answer the newest user message by keyword rules, calling the shop's tools as needed."""
    text = task.input
    lower = text.lower()
    ko = bool(HANGUL.search(text))
    try:
        if any(word in lower for word in CANCEL):
            return _cancel(task, text, ko)
        if any(word in lower for word in REFUND):
            return _refund(task, text, ko)
        if any(word in lower for word in ADDRESS):
            return _change_address(task, text, ko)
        if LIST.search(text):
            return _list_orders(task, text, ko)
        if ORDER_ID.search(text) or any(word in lower for word in STATUS_WORDS):
            return _status(task, text, ko)
        if any(word in lower for word in FAQ_WORDS) or text.rstrip().endswith("?"):
            return _faq(task, text, ko)
    except Unavailable:
        return _reply(
            "죄송합니다. 지금은 주문 시스템에 연결할 수 없습니다. 잠시 후 다시 시도해 주세요." if ko else
            "Sorry, I can't reach the order system right now. Please try again in a few minutes.",
            "orders_agent",
        )
    return _fallback(task, ko)


def _call(task: Task, name: str, **args: Any) -> dict:
    """Call a tool and parse its JSON observation; retry a transient error, then raise Unavailable."""
    for attempt in range(MAX_ATTEMPTS):
        try:
            # Only the first JSON value is read: text after it (a note some proxy appended) is ignored.
            return _DECODER.raw_decode(task.call_tool(name, **args).lstrip())[0]
        except ToolError as err:
            message = str(err)
            if "503" not in message and "unavailable" not in message.lower():
                raise
            if attempt == MAX_ATTEMPTS - 1:
                raise Unavailable(message) from err
    raise AssertionError("unreachable")


def _order_id(task: Task, text: str) -> str | None:
    """The first order id in the message, else the newest one the user mentioned earlier."""
    match = ORDER_ID.search(text)
    if match:
        return f"ORD_{match.group(1)}"
    for message in reversed(task.messages or []):
        if message.get("role") != "user":
            continue
        match = ORDER_ID.search(str(message.get("content") or ""))
        if match:
            return f"ORD_{match.group(1)}"
    return None


def _reply(answer: str, final_agent: str, cards: list[dict] | None = None) -> dict:
    return {"answer": answer, "cards": cards or [], "final_agent": final_agent}


def _ask_order_id(ko: bool, final_agent: str) -> dict:
    return _reply(
        "주문 번호(예: ORD_1234)를 알려주시면 바로 확인해 드리겠습니다." if ko else
        "Could you tell me your order number (for example ORD_1234)? Then I can look it up.",
        final_agent,
    )


def _lookup(task: Task, order_id: str, ko: bool) -> dict | str:
    """The order as a dict, or an answer-ready message when it does not exist."""
    try:
        return _call(task, "get_order", order_id=order_id)
    except ToolError:
        return (f"주문 {order_id}을(를) 찾을 수 없습니다. 주문 번호를 다시 확인해 주세요." if ko else
                f"I couldn't find order {order_id}. Could you double-check the number?")


def _order_card(order: dict) -> dict:
    return {"type": "order_card", "order_id": order["order_id"], "status": order["status"],
            "total": order["total"], "currency": order["currency"],
            "carrier": order.get("carrier"), "tracking_number": order.get("tracking_number")}


def _status(task: Task, text: str, ko: bool) -> dict:
    order_id = _order_id(task, text)
    if order_id is None:
        return _ask_order_id(ko, "orders_agent")
    order = _lookup(task, order_id, ko)
    if isinstance(order, str):
        return _reply(order, "orders_agent")
    status = order["status"]
    if ko:
        answer = f"주문 {order_id}의 현재 상태는 '{STATUS_KO.get(status, status)}'입니다."
        if order.get("tracking_number"):
            answer += f" 택배사: {order['carrier']}, 운송장 번호: {order['tracking_number']}."
    else:
        answer = f"Order {order_id} is {status.replace('_', ' ')}."
        if order.get("tracking_number"):
            answer += f" Carrier: {order['carrier']}, tracking number {order['tracking_number']}."
    return _reply(answer, "orders_agent", [_order_card(order)])


def _refund(task: Task, text: str, ko: bool) -> dict:
    # Only the first order id is handled: "refund ORD_1 and ORD_2" refunds ORD_1 alone.
    order_id = _order_id(task, text)
    if order_id is None:
        return _ask_order_id(ko, "refund_agent")
    order = _lookup(task, order_id, ko)
    if isinstance(order, str):
        return _reply(order, "refund_agent")
    status, currency = order["status"], order["currency"]
    if status == "refunded":
        amount = order.get("refunded_total", order["total"])
        return _reply(
            f"주문 {order_id}은(는) 이미 환불되었습니다 ({amount:.2f} {currency})." if ko else
            f"Order {order_id} has been refunded: {amount:.2f} {currency} "
            "back to your original payment method.",
            "refund_agent",
        )
    if status not in ("delivered", "partially_refunded"):
        return _reply(
            f"주문 {order_id}은(는) 아직 배송 완료 전이라({STATUS_KO.get(status, status)}) 환불할 수 없습니다."
            if ko else
            f"Order {order_id} hasn't been delivered yet (status: {status}), so it can't be refunded yet. "
            "Once it arrives you can ask for a refund within 14 days of delivery.",
            "refund_agent",
        )
    args: dict[str, Any] = {"order_id": order_id, "reason": text.strip()}
    amount_match = AMOUNT.search(text)
    if amount_match and any(word in text.lower() for word in PARTIAL_WORDS):
        args["amount"] = float(amount_match.group(1))
    try:
        refund = _call(task, "refund_order", **args)
    except ToolError as err:
        return _reply(f"I couldn't refund order {order_id}: {err}", "refund_agent")
    amount = refund["amount"]
    answer = (f"주문 {order_id}에 대해 {amount:.2f} {currency} 환불을 완료했습니다." if ko else
              f"Done: I've refunded {amount:.2f} {currency} for order {order_id}. "
              "It reaches your original payment method in 3-5 business days.")
    card = {"type": "refund_card", "order_id": order_id, "refund_id": refund["refund_id"],
            "amount": amount, "currency": currency}
    return _reply(answer, "refund_agent", [card])


def _change_address(task: Task, text: str, ko: bool) -> dict:
    order_id = _order_id(task, text)
    if order_id is None:
        return _ask_order_id(ko, "orders_agent")
    order = _lookup(task, order_id, ko)
    if isinstance(order, str):
        return _reply(order, "orders_agent")
    if order["status"] != "processing":
        return _reply(f"Order {order_id} is already {order['status']}, so its address can't change any more.",
                      "orders_agent", [_order_card(order)])
    match = ADDRESS_TO.search(text)
    if not match:
        return _reply(f"What is the new address for order {order_id}?", "orders_agent")
    updated = _call(task, "update_address", order_id=order_id, address=match.group(1).strip())
    return _reply(f"Done: order {order_id} will ship to {updated['address']}.", "orders_agent",
                  [_order_card({**order, **updated})])


def _cancel(task: Task, text: str, ko: bool) -> dict:
    order_id = _order_id(task, text)
    if order_id is None:
        return _ask_order_id(ko, "orders_agent")
    order = _lookup(task, order_id, ko)
    if isinstance(order, str):
        return _reply(order, "orders_agent")
    if order["status"] != "processing":
        return _reply(
            f"주문 {order_id}은(는) 이미 '{STATUS_KO.get(order['status'], order['status'])}' 상태라 취소할 수 없습니다."
            if ko else f"Order {order_id} is already {order['status']}, so it can no longer be cancelled.",
            "orders_agent",
        )
    _call(task, "cancel_order", order_id=order_id)
    return _reply(
        f"주문 {order_id}이(가) 취소되었습니다. 결제는 자동으로 취소됩니다." if ko else
        f"Order {order_id} is cancelled and your payment is voided.",
        "orders_agent",
    )


def _list_orders(task: Task, text: str, ko: bool) -> dict:
    # The logged-in session (metadata) is trusted first; the message is the fallback.
    customer_id = (task.metadata or {}).get("customer_id")
    if not customer_id:
        match = CUSTOMER_ID.search(text)
        customer_id = f"C{match.group(1)}" if match else None
    if not customer_id:
        return _reply("Could you tell me your customer number (for example C001)?", "orders_agent")
    try:
        listing = _call(task, "list_orders", customer_id=customer_id)
    except ToolError:
        return _reply(f"I couldn't find customer {customer_id}.", "orders_agent")
    lines = [f"- {o['order_id']}: {o['status'].replace('_', ' ')}, {o['total']:.2f} {o['currency']}"
             for o in listing["orders"]]
    head = f"고객님의 주문 {len(lines)}건입니다:" if ko else f"You have {len(lines)} orders:"
    card = {"type": "order_list_card", "customer_id": customer_id, "orders": listing["orders"]}
    return _reply("\n".join([head, *lines]), "orders_agent", [card])


def _faq(task: Task, text: str, ko: bool) -> dict:
    results = _call(task, "search_faq", query=text.strip())["results"]
    if not results:
        return _fallback(task, ko)
    lang = "ko" if ko else "en"
    best = next((r for r in results if r["lang"] == lang), results[0])
    return _reply(best["answer"], "faq_agent", [{"type": "faq_card", "faq_id": best["id"]}])


def _fallback(task: Task, ko: bool) -> dict:
    # A message the rules do not understand goes to a human, through the shop's handoff tool.
    task.call_tool("transfer_to_human", reason="the assistant could not understand the request")
    return _reply(
        "문의 주셔서 감사합니다. 담당 상담원에게 전달해 드렸으며 곧 연락드리겠습니다." if ko else
        "Thanks for reaching out. I've passed your message to our support team, who will get back to you.",
        "triage",
    )
