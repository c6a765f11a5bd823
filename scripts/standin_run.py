"""A run against the test stand-in OpenAI server (no key, no network): plumbing figures, not scores.

    PYTHONPATH=. python scripts/standin_run.py OUT_DIR [--handler=MODULE:FUNCTION] [OVERRIDES...]
    e.g. PYTHONPATH=. python scripts/standin_run.py /tmp/rag +exp=rag judge.runs=1

`--handler` gives the stand-in a reply function (`StandinServer.set_handler`), e.g. a library's own
reply formats: `--handler=devtools.standin.langmem_replies:reply`.

The stand-in knows nothing of mem0bench's prompts: its answers are words of the prompt and its judge
labels are a hash of the request, so the run's scores say nothing about any system. It exists to give
`compare`, `report` and `judge` a real run directory to work on.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from devtools.e2e import FAST, cli_env, run_cli
from devtools.standin.server import StandinServer


def main(argv: list[str]) -> int:
    out, overrides = Path(argv[0]), argv[1:]
    handlers = [a.split("=", 1)[1] for a in overrides if a.startswith("--handler=")]
    overrides = [a for a in overrides if not a.startswith("--handler=")]
    with StandinServer() as server:
        for spec in handlers:
            module, _, name = spec.partition(":")
            server.set_handler(getattr(importlib.import_module(module), name))
        args = ["run", *overrides, f"hydra.run.dir={out}", *FAST]
        result = run_cli(args, cli_env(server.base_url, out.parent / f"{out.name}-cache"), timeout=3600)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
