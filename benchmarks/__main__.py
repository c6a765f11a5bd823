"""`python -m benchmarks overhead|overlap|search|all [...]`, run from the repository checkout."""

from __future__ import annotations

import sys

from benchmarks.cli import bench_main

if __name__ == "__main__":
    sys.exit(bench_main(sys.argv[1:]))
