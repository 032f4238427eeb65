"""A scripted user simulator for the support-demo's scenario cases: no LLM, no network.

`simulate(sim)` follows the Python simulator contract: it reads the conversation so far
(`sim.messages`) and returns the user's next message, or None to stop. Each scenario case has a
script below: an opening line, replies triggered by words in the agent's last reply, a line to
repeat when nothing matches, and the words that mean the goal is reached. An LLM simulator
(`--user-model NAME`) plays the same cases from their `scenario` text alone.
"""
from __future__ import annotations

from typing import Any

SCRIPTS: dict[str, dict[str, Any]] = {
    "refund-asks-for-order-number": {
        "opening": "Hi, the rain jacket I bought doesn't fit. Can I get a refund?",
        "replies": [
            ("order number", "Sure, the order number is ORD_1002. Please refund it."),
        ],
        "otherwise": "I'd just like a refund for the rain jacket, please.",
        "done": ("refunded", "환불"),
    },
    "address-change-follow-up": {
        "opening": "Hello, can I change the delivery address of my order ORD_1003?",
        "replies": [
            ("new address", "The new address is 7 Hannam-daero, Yongsan-gu, Seoul."),
        ],
        "otherwise": ("I only need the delivery address of ORD_1003 changed to "
                      "7 Hannam-daero, Yongsan-gu, Seoul."),
        "done": ("will ship to",),
    },
}


def simulate(sim: Any) -> str | None:
    """The next message of the scripted user of `sim.case_id`, or None once the goal is reached."""
    script = SCRIPTS[sim.case_id]
    if not sim.messages:
        return script["opening"]
    last = sim.messages[-1]["content"].lower()
    if any(word in last for word in script["done"]):
        return None
    for trigger, reply in script["replies"]:
        if trigger in last:
            return reply
    return script["otherwise"]
