"""Harness benchmarks: `python scripts/bench.py overhead|overlap|search|all [...]`.

The same as `python -m mem0bench bench ...`; see docs/benchmarks.md for the figures and how they were
measured. Run it from the repository checkout (it starts tests/standin/server.py as a separate process).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mem0bench.cli.bench import bench_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(bench_main(sys.argv[1:]))
