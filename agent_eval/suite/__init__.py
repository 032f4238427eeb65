"""The case file: load and validate it, select cases, load the tools, import the user's code."""
