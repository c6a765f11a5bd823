"""BEAM on the zero-latency stand-in: one 100K conversation through a system (calls, tokens, wall, peak RSS).

    python -m benchmarks.beam --path /path/to/BEAM --conversation 100K-1 --method rag --method mem0

The stand-in runs in this process (its handler answers BEAM's rubric judge, devtools/standin/beam_replies);
each run is the real CLI as a child process with a fresh cache, `judge.runs=1`, inline latency.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from devtools.e2e import REPO, TEST_KEY, cli_env
from devtools.standin.beam_replies import beam_replies
from devtools.standin.server import StandinServer


def measure(path: str, conversation: str, method: str, out: Path) -> dict[str, object]:
    run_dir = out / f"run-{method}"
    args = [
        sys.executable, "-m", "mem0bench", "run", f"+exp={method}", "dataset=beam", f"dataset.path={path}",
        f"dataset.scale={conversation.split('-')[0]}", f"dataset.conversations=[{conversation}]", "judge.runs=1",
        "eval.latency=inline", "run.progress=false", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(beam_replies)
        env = cli_env(server.base_url, out / f"cache-{method}")
        t0 = time.perf_counter()
        with open(out / f"{method}.log", "wb") as log:
            proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{method}: the run failed, see {out / f'{method}.log'}")
    tokens = json.loads((run_dir / "metrics.json").read_text())["tokens"]["llm"]
    return {"method": method, "wall_s": round(wall, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024), **{
        stage: {k: v for k, v in figures.items()} for stage, figures in sorted(tokens.items())
    }}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", required=True, help="BEAM's repository folder (chats/<scale>/<n>/)")
    parser.add_argument("--conversation", default="100K-1")
    parser.add_argument("--method", action="append", default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="beam-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    for method in args.method or ["rag", "mem0"]:
        print(json.dumps(measure(args.path, args.conversation, method, out)))


if __name__ == "__main__":
    main()
