"""BFCL multi-turn (gorilla's berkeley-function-call-leaderboard, `bfcl-eval` on PyPI): the importer
(`importer.py`), the runtime an imported suite's tools module uses (`runtime.py`), and upstream's own
loader and grader (`upstream.py`)."""
