"""`python -m benchmarks import-time --base DIR`: the run path's import time here against another checkout.

Imports what a run of Mem0 needs before its first request (`mem0bench.pipeline.experiment` and the Mem0
system) under `python -X importtime`, in a fresh process each time, alternating between the checkout DIR
(`git archive <rev> | tar -x -C DIR` makes one) and this one, and prints the cumulative microseconds of
the package's outermost imports: min and median per side, and the load average (on a shared machine the
figures include waiting for a core). Bytecode is cached (in a temporary folder) as for an installed package.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.settings import REPO

PYCACHE = Path(tempfile.gettempdir()) / "mem0bench-import-time-pycache"

CODE = "import mem0bench.pipeline.experiment, mem0bench.systems.methods.mem0.system"


def cumulative_us(checkout: Path) -> int:
    """Cumulative import time of the run path's modules in one fresh process, in microseconds."""
    # Bytecode cached as an installed package has it (kept out of the checkouts), even where the shell sets
    # PYTHONDONTWRITEBYTECODE: compiling our sources on every start would be most of the figure.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"PYTHONPATH": str(checkout), "PYTHONPYCACHEPREFIX": str(PYCACHE / checkout.name)}
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", CODE],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    total = 0
    for line in out.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", line)
        # The outermost lines of our package (its parents included: `import a.b.c` imports `a` and `a.b`
        # first, each on its own line); whatever they import is nested inside their figure.
        if m and m.group(2).split(".")[0] == "mem0bench":
            total += int(m.group(1))
    return total


def import_time_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks import-time", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--base", type=Path, required=True, help="the other checkout (a source tree)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    sides = {"base": args.base.resolve(), "this": REPO}
    for side in sides.values():
        cumulative_us(side)  # warm the file cache and the bytecode caches
    figures: dict[str, list[int]] = {name: [] for name in sides}
    for _ in range(args.runs):
        for name, side in sides.items():
            figures[name].append(cumulative_us(side))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, side in sides.items():
        ms = [us / 1000 for us in figures[name]]
        print(
            f"{name:5} {side}: min {min(ms):.0f} ms, median {statistics.median(ms):.0f} ms "
            f"({', '.join(f'{x:.0f}' for x in ms)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(import_time_main(sys.argv[1:]))
