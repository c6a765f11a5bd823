"""An example memory system in its own package (examples/word_overlap)."""

from mem0bench_word_overlap.system import WordOverlap

__all__ = ["WordOverlap"]
