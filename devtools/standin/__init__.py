"""A local OpenAI-compatible stand-in server for tests: import from `devtools.standin.server`.

(Kept empty so that `python -m devtools.standin.server` runs without re-importing the module.)
"""
