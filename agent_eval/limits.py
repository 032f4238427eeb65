"""The caps and time limits code in every layer reads (a message read from outside, a count, a request's
wait): a bottom module that imports nothing, so provider/, suite/, score/ and run/ need not import the
flags table for a number."""

MAX_COUNT = 2**31 - 1  # a count past this (-k, --concurrency, --max-steps, --workers) is a typo, not a plan
MAX_MESSAGE_BYTES = 64 * 2**20  # the most read of one message from outside: a provider's answer (decoded), an
# MCP message, a cmd: agent's reply, a request to the recording endpoint
JUDGE_TIMEOUT_S = 120.0  # one judge or simulator request, retries included (--judge-timeout's default)
MCP_TIMEOUT_S = 30.0  # one request to an MCP server, and its start (a server entry's `timeout`'s default)
RETRY_BUDGET_S = 600.0  # seconds one request may keep retrying rate limits (--retry-budget's default)
