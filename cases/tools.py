"""Tools of the support-demo suite: an online shop's orders, refunds and FAQ.

Each tool gets the run's private environment (`env`, a dict shaped like env.json) and may mutate it.
An exception is a tool error, recorded as "<ExceptionType>: <message>".
"""
from __future__ import annotations

from agent_eval import tool

# Only these statuses can still be changed before the parcel leaves the warehouse.
_EDITABLE = "processing"
_REFUNDABLE = ("delivered", "partially_refunded")


class OrderNotFound(LookupError):
    """No order or customer with that id."""


class ActionRefused(ValueError):
    """The shop's rules forbid this action on this order."""


def _normalize_id(order_id: str) -> str:
    # Customers type "ord_1001" or " ORD_1001 "; the shop treats them as the same order.
    return order_id.strip().upper()


def _find_order(env: dict, order_id: str) -> tuple[str, dict]:
    key = _normalize_id(order_id)
    order = env.get("orders", {}).get(key)
    if order is None:
        raise OrderNotFound(f"order {order_id!r} not found")
    return key, order


@tool
def get_order(env: dict, order_id: str) -> dict:
    """Look up one order: its status, items, total, shipping address, carrier and tracking number.

    Args:
        order_id: The order id, such as "ORD_1001".
    """
    key, order = _find_order(env, order_id)
    return {"order_id": key, **order}


@tool
def list_orders(env: dict, customer_id: str) -> dict:
    """List every order of one customer, with each order's status and total.

    Args:
        customer_id: The customer id, such as "C001".
    """
    customer_id = customer_id.strip().upper()
    if customer_id not in env.get("customers", {}):
        raise OrderNotFound(f"customer {customer_id!r} not found")
    orders = [
        {"order_id": key, "status": o["status"], "total": o["total"], "currency": o["currency"]}
        for key, o in env["orders"].items()
        if o["customer_id"] == customer_id
    ]
    return {"customer_id": customer_id, "orders": orders}


@tool
def refund_order(env: dict, order_id: str, reason: str, amount: float | None = None) -> dict:
    """Refund a delivered order, in full or in part. Refused if it is not delivered or already refunded.

    Args:
        order_id: The order id, such as "ORD_1002".
        reason: Why the customer wants the refund, in a few words.
        amount: For a partial refund, the amount to give back; omit it to refund what is left in full.
    """
    key, order = _find_order(env, order_id)
    if order["status"] == "refunded":
        raise ActionRefused(f"order {key} is already refunded")
    if order["status"] not in _REFUNDABLE:
        raise ActionRefused(f"order {key} is {order['status']}, not delivered; "
                            "only delivered orders can be refunded")
    already = order.get("refunded_total", 0.0)
    left = round(order["total"] - already, 2)
    value = left if amount is None else round(float(amount), 2)
    if value <= 0 or value > left:
        raise ActionRefused(f"refund amount {value} must be between 0 and {left} for order {key}")
    order["refunded_total"] = round(already + value, 2)
    order["status"] = "refunded" if order["refunded_total"] >= order["total"] else "partially_refunded"
    refunds = env.setdefault("refunds", [])
    refund = {"refund_id": f"RF_{len(refunds) + 1:04d}", "order_id": key, "amount": value}
    # The free-text reason is not stored: the final state must not depend on how an agent words it,
    # so that exact-state checks (`expected_env`, "replay") stay fair.
    refunds.append(refund)
    return {**refund, "currency": order["currency"], "order_status": order["status"], "reason": reason}


@tool
def update_address(env: dict, order_id: str, address: str) -> dict:
    """Change the shipping address of an order that has not shipped yet (status "processing").

    Args:
        order_id: The order id, such as "ORD_1003".
        address: The full new shipping address.
    """
    key, order = _find_order(env, order_id)
    if order["status"] != _EDITABLE:
        raise ActionRefused(f"order {key} is {order['status']}; the address can only change while processing")
    if not address.strip():
        raise ActionRefused("the new address is empty")
    order["address"] = address.strip()
    return {"order_id": key, "address": order["address"], "status": order["status"]}


@tool
def cancel_order(env: dict, order_id: str) -> dict:
    """Cancel an order that has not shipped yet (status "processing"); the payment is voided.

    Args:
        order_id: The order id, such as "ORD_1003".
    """
    key, order = _find_order(env, order_id)
    if order["status"] != _EDITABLE:
        raise ActionRefused(f"order {key} is {order['status']}; only processing orders can be cancelled")
    order["status"] = "cancelled"
    return {"order_id": key, "status": "cancelled"}


@tool
def transfer_to_human(env: dict, reason: str) -> dict:
    """Hand the conversation to a human support agent, who answers the customer by email.

    Args:
        reason: Why a human is needed, in a few words.
    """
    # Only the count is kept, so the final state never depends on how the reason is worded.
    env["handoffs"] = env.get("handoffs", 0) + 1
    return {"ticket_id": f"HT_{env['handoffs']:04d}", "status": "queued", "reason": reason}


@tool
def search_faq(env: dict, query: str) -> dict:
    """Search the shop's FAQ (shipping times, returns, exchanges, refunds, payment) by keywords.

    Args:
        query: The customer's question or a few keywords, in any language.
    """
    text = query.lower()
    scored = []
    for position, entry in enumerate(env.get("faq", [])):
        score = sum(1 for word in entry["keywords"] if word.lower() in text)
        if score:
            scored.append((-score, position, entry))
    scored.sort(key=lambda row: row[:2])
    results = [
        {"id": e["id"], "lang": e["lang"], "question": e["question"], "answer": e["answer"]}
        for _, _, e in scored[:3]
    ]
    return {"query": query, "results": results}
