"""Scoring a frozen trace: checks, matchers, metrics, custom scorers and the LLM judge."""
