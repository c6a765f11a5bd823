"""A local OpenAI-compatible stand-in server for tests: import from `tests.standin.server`.

(Kept empty so that `python -m tests.standin.server` runs without re-importing the module.)
"""
