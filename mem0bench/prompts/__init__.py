"""Prompt builders (answer, judge, extraction, update, summary): our own wording of the paper's prompts."""
