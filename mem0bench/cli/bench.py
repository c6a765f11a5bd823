"""`python -m mem0bench bench`: the command lives in `mem0bench.bench`; this keeps the CLI's import path."""

from __future__ import annotations

from mem0bench.bench.cli import bench_main

__all__ = ["bench_main"]
