"""Where a traceback's "your code" is: the innermost frame outside site-packages."""
from __future__ import annotations

from agent_eval.tracebacks import innermost_frame

TRACEBACK = '''Traceback (most recent call last):
  File "/home/me/shop/agent.py", line 12, in agent
    return graph.invoke(state)
  File "/home/me/shop/nodes.py", line 40, in book
    return client.chat.completions.create(**request)
  File "/home/me/.venv/lib/python3.12/site-packages/langgraph/pregel/main.py", line 2100, in invoke
    for chunk in self.stream(
  File "/usr/lib/python3/dist-packages/openai/_base_client.py", line 1044, in request
    raise self._make_status_error_from_response(err.response) from None
openai.BadRequestError: Error code: 400'''


def test_your_code_is_the_innermost_frame_outside_site_packages() -> None:
    assert innermost_frame(TRACEBACK) == "nodes.py:40 in book"


def test_a_traceback_of_installed_code_only_names_its_innermost_frame() -> None:
    only_installed = "\n".join(line for line in TRACEBACK.splitlines() if "/home/me/shop" not in line
                               and "graph.invoke" not in line and "**request" not in line)
    assert innermost_frame(only_installed) == "_base_client.py:1044 in request"
    assert innermost_frame("no frames here") is None
