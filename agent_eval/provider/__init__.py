"""Talking to a model provider: the retry loop, the hints a provider sends, adaptive concurrency and the
client-side rate limit (docs/resilience.md). `agent_eval.llm` sends every completion through it."""
