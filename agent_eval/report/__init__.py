"""Reports of a finished run: the Rich terminal view and the files written to disk."""
