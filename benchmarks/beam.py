"""BEAM on the zero-latency stand-in: one 100K conversation through a system (calls, tokens, wall, peak RSS).

    python -m benchmarks.beam --path /path/to/BEAM --conversation 100K-1 --method rag --method mem0
    python -m benchmarks.beam --path /path/to/BEAM --make 1M=1000000 --method rag --method mem0
    python -m benchmarks.beam --path /path/to/BEAM --price 1M=1000000 --price 10M=10000000

`--make` runs one conversation made from the 100K chats (`write_made_scale`); `--price` dry-runs a whole
scale: its real questions (the repository holds every scale's) over made chats of the scale's size.

The stand-in runs in this process (its handler answers BEAM's rubric judge, devtools/standin/beam_replies);
each run is the real CLI as a child process with a fresh cache, `judge.runs=1`, inline latency.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from devtools.e2e import REPO, TEST_KEY, cli_env
from devtools.standin.beam_replies import beam_replies
from devtools.standin.server import StandinServer
from mem0bench.suites.beam import parse_anchor
from mem0bench.tokens import count_tokens


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


def dry_run_cost(path: Path, scale: str, method: str, out: Path) -> dict[str, object]:
    """The dry run of a whole scale (`+exp=paper/beam method=<method>`: the authors' judge x1): its plan's
    total, the window line, wall and peak RSS (no call made, no server needed)."""
    args = [
        sys.executable, "-m", "mem0bench", "run", "+exp=paper/beam", f"method={method}", f"dataset.path={path}",
        f"dataset.scale={scale}", "run.dry_run=true", "run.progress=false", f"hydra.run.dir={out / f'dry-{scale}-{method}'}",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | {"OPENAI_API_KEY": TEST_KEY}
    t0 = time.perf_counter()
    with open(out / f"dry-{scale}-{method}.log", "wb") as log:
        proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    text = (out / f"dry-{scale}-{method}.log").read_text("utf-8", "replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"dry run {scale} {method} failed, see {out / f'dry-{scale}-{method}.log'}")
    keep = ("dry run:", "ingests", "total:", "context window:", "judge ")
    return {"scale": scale, "method": method, "wall_s": round(wall, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024),
            "lines": [x for x in text.splitlines() if x.startswith(keep)]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", required=True, help="BEAM's repository folder (chats/<scale>/<n>/)")
    parser.add_argument("--conversation", default="100K-1")
    parser.add_argument("--method", action="append", default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--make",
        default=None,
        metavar="SCALE=TOKENS",
        help="make one conversation of SCALE (1M=1000000) from --path's 100K chats and run it",
    )
    parser.add_argument("--price", action="append", default=[], metavar="SCALE=TOKENS",
                        help="dry-run cost of the whole SCALE: its questions (--path's chats/SCALE/*/probing_"
                        "questions) over made chats of TOKENS; rag, mem0 and full_context")  # fmt: skip
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="beam-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    source = Path(args.path)
    for spec in args.price:
        scale, tokens = spec.split("=")
        files = sorted((source / "chats" / scale).glob("*/probing_questions/probing_questions.json"),
                       key=lambda p: int(p.parent.parent.name))  # fmt: skip
        made = write_made_scale(
            source, out / f"price-{scale}", scale=scale, tokens=int(tokens), questions=files
        )
        print(json.dumps({"scale": scale, "made": made}))
        for method in args.method or ["rag", "mem0", "full_context"]:
            print(json.dumps(dry_run_cost(out / f"price-{scale}", scale, method, out)), flush=True)
    if args.price:
        return
    path, conversation = args.path, args.conversation
    if args.make:
        scale, tokens = args.make.split("=")
        made = write_made_scale(source, out / f"made-{scale}", scale=scale, tokens=int(tokens))
        print(json.dumps({"scale": scale, "made": made}))
        path, conversation = str(out / f"made-{scale}"), f"{scale}-1"
    for method in args.method or ["rag", "mem0"]:
        print(json.dumps(measure(path, conversation, method, out)), flush=True)


# ---- a 1M (or 10M) BEAM conversation made from the 100K chats ----

MADE_YEARS = 2
"""Each 100K chat spans at most ~14 months: copy k's dates move 2k years on, so the sessions stay in order."""


def _shift_anchor(anchor: str, years: int) -> str:
    """'March-15-2024' moved `years` on (29 February becomes the 28th in a year without it)."""
    when = parse_anchor(anchor)
    if when is None or years == 0:
        return anchor
    year = when.year + years
    day = min(when.day, 28) if when.month == 2 else when.day
    return f"{when:%B}-{day:02d}-{year}"


def _chat_tokens(chat: list[dict[str, Any]]) -> int:
    """The chat's message text in cl100k_base tokens (what a system ingests; rendering adds a few a turn)."""
    return sum(count_tokens(str(m["content"])) for batch in chat for turn in batch["turns"] for m in turn)


def made_chat(source: Path, tokens: int) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(copy, message id offset, batch) of BEAM's 100K chats (`source`/chats/100K/1, 2, ...) one after
    another, again from the first when they run out, until about `tokens` tokens: batches renumbered, message
    ids made unique by an offset (the first chat keeps its own, so its questions' evidence still points at
    it), each copy's time anchors moved on `MADE_YEARS` years, and from the second round on each message
    marked `(#k)` so that no request repeats (the LLM cache would answer a repeat)."""
    folder = source / "chats" / "100K"
    numbers = sorted(int(p.name) for p in folder.iterdir() if (p / "chat.json").is_file())
    if not numbers:
        raise SystemExit(f"no 100K chats under {folder} (BEAM's repository layout: chats/100K/<n>/chat.json)")
    total, offset, copy, batch_number = 0, 0, 0, 0
    while total < tokens:
        chat = json.loads((folder / str(numbers[copy % len(numbers)]) / "chat.json").read_text("utf-8"))
        rounds = copy // len(numbers)
        top = offset
        for batch in chat:
            batch_number += 1
            batch["batch_number"] = batch_number
            if batch.get("time_anchor"):
                batch["time_anchor"] = _shift_anchor(batch["time_anchor"], MADE_YEARS * copy)
            for turn in batch["turns"]:
                for message in turn:
                    message["id"] += offset
                    top = max(top, message["id"] + 1)
                    if message.get("time_anchor"):
                        message["time_anchor"] = _shift_anchor(message["time_anchor"], MADE_YEARS * copy)
                    if rounds:
                        message["content"] = f"{message['content']} (#{rounds})"
            yield copy, offset, batch
        total += _chat_tokens(chat)
        offset, copy = top, copy + 1


def write_made_scale(
    source: Path, dest: Path, *, scale: str = "1M", tokens: int = 1_000_000, questions: Sequence[Path] = ()
) -> dict[str, Any]:
    """BEAM's repository layout under `dest` holding one made conversation of about `tokens` tokens:
    `chats/<scale>/1/chat.json`, its probing questions 100K-1's (their evidence in the first copy). With
    `questions` (the scale's own probing_questions.json files, e.g. shared/data/beam/chats/1M/*/...), one
    conversation folder per file, numbered as the file's, each with that file and a link to the one chat:
    a whole scale's questions for the dry run, over chats of the scale's size. -> what was written."""
    folder = dest / "chats" / scale / "1"
    (folder / "probing_questions").mkdir(parents=True, exist_ok=True)
    chat_path = folder / "chat.json"
    batches = copies = messages = 0
    with chat_path.open("w", encoding="utf-8") as f:  # batch by batch: never the whole chat in memory
        f.write("[")
        for copy, _, batch in made_chat(source, tokens):
            f.write(("," if batches else "") + json.dumps(batch, ensure_ascii=False))
            batches, copies = batches + 1, copy + 1
            messages += sum(len(turn) for turn in batch["turns"])
        f.write("]")
    first = source / "chats" / "100K" / "1" / "probing_questions" / "probing_questions.json"
    shutil.copyfile(
        questions[0] if questions else first, folder / "probing_questions" / "probing_questions.json"
    )
    for path in questions[1:]:
        other = dest / "chats" / scale / path.parent.parent.name / "probing_questions"
        other.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, other / "probing_questions.json")
        (other.parent / "chat.json").symlink_to(chat_path.resolve())
    return {
        "conversations": max(len(questions), 1), "copies": copies, "batches": batches, "messages": messages,
        "chat_mb": round(chat_path.stat().st_size / 1e6, 1),
    }  # fmt: skip


if __name__ == "__main__":
    main()
