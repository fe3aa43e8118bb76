"""Integration tests: frameworks and multi-process stores."""
