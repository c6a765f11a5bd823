"""`mem0bench status RUN_DIR`: where a run directory stands, read from its files alone (`reader`).

It reads what the pipeline writes, with the runner's own rules for which rows stand, and writes nothing.
"""
