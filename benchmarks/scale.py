"""`python -m benchmarks scale`: one conversation of 1M (or 3M, 10M) tokens through rag and mem0 at a
zero-latency stand-in: wall time, peak memory, calls and tokens.

BEAM's largest conversations are 1M and 10M tokens, 40 and 400 times a LOCOMO conversation. The
conversation is made here from locomo10.json: its conversations' sessions one after another, again and
again, renumbered and dated a day apart, each copy's turns marked with their copy's number so that no two
requests are the same (the LLM cache would otherwise answer the repeats). One conversation, two speakers
(the first conversation's; the others' turns are given to them in order). Its questions are the first
conversation's first ones, whose evidence still points at the first copy.

The figure that matters is peak RSS against the conversation's size: a harness that holds the chat a few
times over (the file's JSON, the dataset, rendered lines, token lists) grows with it; one that streams
does not. The dry run on the same file (load, plan: no call) is measured too, and each run's growth over
a small conversation's run is shown in multiples of the conversation's text.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.runs import measure_run
from benchmarks.settings import BenchContext, BenchError
from benchmarks.standin import Standin
from mem0bench.tokens import count_tokens

START = datetime(2001, 1, 1, 9, 30)
QUESTIONS = 10
"""Questions asked of the big conversation (answering is not what is measured: ingestion is)."""


def _date_text(when: datetime) -> str:
    """LOCOMO's form: '1:56 pm on 8 May, 2023'."""
    hour = when.hour % 12 or 12
    return f"{hour}:{when.minute:02d} {'am' if when.hour < 12 else 'pm'} on {when.day} {when:%B}, {when.year}"


def _source_sessions(samples: Sequence[dict[str, Any]]) -> list[list[tuple[bool, str]]]:
    """Every session of every sample, in order, as (spoken by speaker_a?, text) turns."""
    out = []
    for sample in samples:
        conv = sample["conversation"]
        numbers = sorted(
            int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1 and conv[k]
        )
        for n in numbers:
            out.append([(t["speaker"] == conv["speaker_a"], str(t["text"])) for t in conv[f"session_{n}"]])
    return out


def _sessions(samples: Sequence[dict[str, Any]], tokens: int) -> Iterator[tuple[int, list[tuple[bool, str]]]]:
    """(copy, turns) of the source's sessions, repeated until about `tokens` rendered tokens."""
    source = _source_sessions(samples)
    # Counted once per source session: a copy's marker adds about two tokens a turn (counted below).
    sizes = [sum(count_tokens(text) + 12 for _, text in turns) for turns in source]
    total, copy = 0, 0
    while True:
        for turns, size in zip(source, sizes, strict=True):
            if total >= tokens:
                return
            total += size + (3 * len(turns) if copy else 0)
            yield copy, turns
        copy += 1


def write_conversation(source: Path, tokens: int, dest: Path) -> dict[str, Any]:
    """A LOCOMO-format file of one conversation of about `tokens` tokens made from `source`; -> its size."""
    samples = json.loads(source.read_text(encoding="utf-8"))
    first = samples[0]
    a, b = first["conversation"]["speaker_a"], first["conversation"]["speaker_b"]
    conversation: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    n_turns = 0
    chars = 0
    for index, (copy, turns) in enumerate(_sessions(samples, tokens), start=1):
        conversation[f"session_{index}_date_time"] = _date_text(START + timedelta(days=index - 1))
        rows = []
        for j, (is_a, text) in enumerate(turns, start=1):
            spoken = f"{text} (#{copy})" if copy else text
            rows.append({"speaker": a if is_a else b, "dia_id": f"D{index}:{j}", "text": spoken})
            chars += len(spoken)
        conversation[f"session_{index}"] = rows
        n_turns += len(rows)
    qa = [q for q in first["qa"] if q.get("category") in (1, 2, 3, 4) and "answer" in q][:QUESTIONS]
    sample_id = f"scale-{tokens}"
    dest.write_text(json.dumps([{"sample_id": sample_id, "conversation": conversation, "qa": qa}]), "utf-8")
    return {
        "sample_id": sample_id,
        "sessions": sum(1 for k in conversation if k.endswith("_date_time")),
        "turns": n_turns,
        "text_mb": chars / 1e6,
        "file_mb": dest.stat().st_size / 1e6,
        "questions": len(qa),
    }


def bench_scale(
    ctx: BenchContext, *, tokens: Sequence[int], methods: Sequence[str], timeout_s: float = 6 * 3600
) -> dict[str, Any]:
    """For each size: the file, its dry run, then each method's run (ingest, 10 questions, one judge run)."""
    result: dict[str, Any] = {"command": "scale", "latency_ms": 0.0, "methods": list(methods), "sizes": []}
    with Standin(0.0, ctx.out / "scale-standin.log") as standin:
        for size in tokens:
            path = ctx.out / f"scale-{size}.json"
            ctx.say(f"[scale {size:,}] writing {path.name}")
            made = write_conversation(ctx.dataset, size, path)
            made["rendered_tokens"] = _rendered_tokens(path)
            here = dataclasses.replace(ctx, dataset=path)
            ctx.say(f"[scale {size:,}] {made['turns']:,} turns, {made['rendered_tokens']:,} tokens: dry run")
            entry: dict[str, Any] = {"tokens": size, "file": made, "runs": {}}
            entry["dry_run"] = _slim(measure_run(here, f"scale-{size}-dry", "rag", standin, dry_run=True))
            for method in methods:
                ctx.say(f"[scale {size:,}] {method}: ingest, {made['questions']} questions, judge x1")
                try:
                    run = measure_run(
                        here, f"scale-{size}-{method}", method, standin, judge_runs=1, timeout_s=timeout_s
                    )
                except BenchError as exc:
                    entry["runs"][method] = {"error": str(exc)[-500:]}
                    continue
                entry["runs"][method] = _slim(run)
            result["sizes"].append(entry)
    return result


def _rendered_tokens(path: Path) -> int:
    """The conversation's tokens as full_context and RAG render it ('(date) speaker: text' lines)."""
    from mem0bench.data import load_dataset

    conversation = load_dataset(path).conversations[0]
    return sum(count_tokens(line) + 1 for line in conversation.render_lines())


def _slim(run: dict[str, Any]) -> dict[str, Any]:
    """What the page shows of a run: time, memory, calls, tokens (the rest stays in --out's bench.json)."""
    keep = (
        "wall_s",
        "cpu_s",
        "peak_rss_mb",
        "command",
        "http",
        "ledger",
        "ingest_per_turn",
        "memory_tokens_mean",
    )
    out = {k: run[k] for k in keep if k in run}
    ledger = run.get("ledger") or {}
    out["calls"] = sum(stage["calls"] for stage in ledger.values())
    return out


def render_scale(result: dict[str, Any]) -> str:
    """A markdown table: one row per size and method."""
    rows = [
        "| conversation | run | wall | peak RSS | HTTP chat / embeddings | ingest tokens (prompt / completion / embedding) |",
        "|---|---|---|---|---|---|",
    ]
    for entry in result["sizes"]:
        made = entry["file"]
        what = f"{made['rendered_tokens'] / 1e6:.2f}M tokens, {made['turns']:,} turns, {made['text_mb']:.1f} MB of text"
        runs = {"dry run (load, plan)": entry["dry_run"], **entry["runs"]}
        for name, run in runs.items():
            if "error" in run:
                rows.append(f"| {what} | {name} | failed: {run['error'][:80]} | | | |")
                continue
            http = run.get("http") or {}
            per_turn = run.get("ingest_per_turn") or {}
            turns = made["turns"]
            tokens = (
                f"{per_turn['prompt_tokens'] * turns / 1e6:.1f}M / {per_turn['completion_tokens'] * turns / 1e6:.2f}M"
                f" / {per_turn['embedding_tokens'] * turns / 1e6:.1f}M"
                if per_turn
                else ""
            )
            rss = run["peak_rss_mb"]
            rows.append(
                f"| {what} | {name} | {run['wall_s']:,.0f} s | {rss:,.0f} MB"
                f" | {http.get('chat', 0):,} / {http.get('embeddings', 0):,} | {tokens} |"
            )
    return "\n".join(rows)
