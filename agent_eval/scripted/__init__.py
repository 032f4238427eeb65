"""The scripted model: a loopback OpenAI-compatible server answering from a script file, for tests, the
tutorial and a first CI job (`scripted_model`, the pytest fixture, `agent-eval scripted-model`)."""
