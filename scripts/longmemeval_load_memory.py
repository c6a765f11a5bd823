"""Peak memory and time of loading a LongMemEval-format file: plain `json.load`, then our loader through
`datasets` the first time (JSON Lines copy + Arrow table built) and again (the table mapped).

    python scripts/longmemeval_load_memory.py [--questions 300] [--sessions 50]

Writes a synthetic file in LongMemEval_S's format (question fields from tests/data/longmemeval_s_mini.json,
haystacks of filler text) into a temporary folder, measures each load in a fresh process, and prints the
file's size, the load average, and one line per load. The figures in docs/suites.md come from the
defaults (a ~90 MB file); on a loaded machine only the memory column is comparable between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "longmemeval_s_mini.json"

# One load in a child process: its own peak RSS, untouched by the others.
CHILD = """
import json, resource, sys, time
from pathlib import Path
mode, path, cache = sys.argv[1], sys.argv[2], sys.argv[3]
t = time.perf_counter()
if mode == "json":
    json.loads(Path(path).read_bytes())
else:
    from mem0bench.suites import DatasetRequest, get_suite
    get_suite("longmemeval_s").load(DatasetRequest(path=path, data_dir=Path(cache), cache_dir=Path(cache)))
print(f"{time.perf_counter() - t:.1f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
"""


def synthetic(path: Path, questions: int, sessions: int) -> None:
    rng = random.Random(0)
    words = [
        "the",
        "of",
        "and",
        "to",
        "in",
        "is",
        "you",
        "that",
        "it",
        "was",
        "for",
        "on",
        "are",
        "as",
        "with",
        "his",
        "they",
        "at",
        "be",
        "this",
        "have",
        "from",
    ]
    template = json.loads(MINI.read_text(encoding="utf-8"))
    items = []
    for i in range(questions):
        item = dict(template[i % len(template)], question_id=f"q{i}")
        item["haystack_session_ids"] = [f"s{i}_{k}" for k in range(sessions)]
        item["haystack_dates"] = [f"2023/05/{1 + k % 28:02d} (Mon) 10:{k % 60:02d}" for k in range(sessions)]
        item["haystack_sessions"] = [
            [
                {"role": ("user", "assistant")[t % 2], "content": " ".join(rng.choices(words, k=120))}
                for t in range(12)
            ]
            for _ in range(sessions)
        ]
        item["answer_session_ids"] = [f"s{i}_3"]
        items.append(item)
    path.write_text(json.dumps(items), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path, cache = Path(tmp) / "lme.json", Path(tmp) / "cache"
        synthetic(path, args.questions, args.sessions)
        print(f"file {path.stat().st_size / 1e6:.0f} MB; load average {os.getloadavg()[0]:.1f}")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        for mode, label in (("json", "json.load"), ("ours", "datasets, first"), ("ours", "datasets, again")):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, mode, str(path), str(cache)],
                env=env, capture_output=True, text=True, check=True,
            ).stdout.split()  # fmt: skip
            print(f"{label:<16} {out[0]:>6} s  peak {out[1]:>6} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
