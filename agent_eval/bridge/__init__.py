"""Frameworks on the bridge: the suite's tools and the run's recording endpoint, in each framework's types.

One module per framework, each importing its framework only when called:
`agent_eval.bridge.openai_agents`, `agent_eval.bridge.pydantic_ai`, `agent_eval.bridge.langchain`.
See docs/frameworks.md.
"""
