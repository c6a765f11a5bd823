"""mem0bench: the LOCOMO benchmark through complete long-term memory pipelines."""

__version__ = "0.1.0"
