"""Memory systems under test: the Protocol, Mem0, Mem0^g and their stores."""
