"""The commands: each module wires the stages together for one command; no stage imports this package.

`prepare.py` is the preparation they share (read the case file, select, resolve settings), and
`conclude.py` the conclusion (the exit code, the JSON report, every extra output, the terminal).
"""
