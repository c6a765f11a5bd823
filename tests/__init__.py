"""mem0bench tests."""
