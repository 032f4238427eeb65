"""Recordings made by the real instrumentation libraries around one small openai-SDK agent (tests/recorders)."""
