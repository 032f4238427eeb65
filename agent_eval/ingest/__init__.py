"""Outside data in: cases from other tools' files (`agent-eval import`) and recorded traces (`score`)."""
