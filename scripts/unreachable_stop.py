"""How long after its server dies does a run stop? `python scripts/unreachable_stop.py [WINDOW_S ...]`

For each window: a stand-in server process on 127.0.0.1, a Mem0 run of conv-30's first two sessions
against it (100 retries per call, backoff up to 2 s), the server SIGKILLed once ingestion is under way,
then the seconds from the kill until the run's process has exited (it is given 75 s; a run still going
then is stopped with SIGTERM and reported as such). Run it from the repository checkout; it writes under
/tmp/unreachable_stop/. Figures and the command that produced them: docs/benchmarks.md.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devtools.e2e import cli_env  # noqa: E402
from devtools.reliability import small_conv30, start_cli  # noqa: E402
from devtools.unreachable import kill_server, run_args, start_server  # noqa: E402

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
GIVE_UP_S = 75.0


def measure(window: str, out: Path) -> str:
    dataset = small_conv30(out, LOCOMO)
    run_dir = out / f"run-{window}"
    server, port = start_server()
    args = [a if not a.startswith("llm.unreachable_after_s=") else f"llm.unreachable_after_s={window}"
            for a in run_args(dataset, run_dir)]  # fmt: skip
    proc = start_cli(args, cli_env(f"http://127.0.0.1:{port}/v1", out / f"cache-{window}"))
    ops = run_dir / "state" / "conv-30"
    while sum(len(p.read_text().splitlines()) for p in ops.glob("*.ops.jsonl")) < 6:
        if proc.poll() is not None:
            kill_server(server)
            return f"window {window} s: the run ended before the kill (rc {proc.returncode})"
        time.sleep(0.05)
    kill_server(server)
    killed = time.monotonic()
    while proc.poll() is None and time.monotonic() - killed < GIVE_UP_S:
        time.sleep(0.1)
    elapsed = time.monotonic() - killed
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(60)
        return f"window {window} s: still running {GIVE_UP_S:.0f} s after the kill (stopped with SIGTERM)"
    return f"window {window} s: exited {elapsed:.1f} s after the kill, rc {proc.returncode}"


def main(argv: list[str]) -> int:
    out = Path("/tmp/unreachable_stop")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(LOCOMO.parents[1] / "tiktoken"))
    for window in argv or ["3", "10", "100000"]:
        print(measure(window, out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
