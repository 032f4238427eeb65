"""Running: configuration, scheduling, the journal, one run's sandbox, the agents and the simulated user."""
