"""`python -m benchmarks library`: ours (`+exp=mem0`) against mem0's own library run directly, in the same
sitting, on the same stand-in, at 0 and 100 ms a call (issue 34).

The library as mem0's legacy evaluation harness drove it: one sync `Memory` per speaker stream (the
adapter's own mem0 config, as `bench bridge` opens it), one thread per stream (20 on the whole LOCOMO
file), each adding its stream's message pairs in order (`infer=True`, the session date as the timestamp);
then every question searched for both speakers, one search after another (that harness's search is
sequential). Ours: `python -m mem0bench run +exp=mem0` at its defaults (answers, judgements and the
isolated latency pass included), with `--set` overrides if given.

Figures: the library's ingest wall and search wall (in its process); ours, the process's wall, when the
last conversation finished ingesting (ingest.jsonl's last write, from the process start) and, where
run.json carries them (`timing`), the ingest stage's own wall and chain bound. Both sides use the same
stand-in process (its mem0 reply formats for the library's free-text prompts, its schema-driven default
for ours), so a row's calls x latency is comparable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.runs import measure_run, run_timing
from benchmarks.settings import BENCH_KEY, REPO, BenchContext, BenchError, standin_env
from benchmarks.standin import Standin, requests_between
from benchmarks.stats import check, checks_table

LATENCIES_MS = (0.0, 100.0)
BATCH_SIZE = 2  # messages per add: mem0's harness's
TOP_K = 30  # the adapter's default (configs/method/mem0_oss.yaml)
HANDLER = "devtools.standin.mem0_oss_replies:mem0_handler()"
INGEST_VS_LIBRARY = 0.5  # issue 34: at 100 ms, ours ingests in at most half the library's ingest wall
INGEST_VS_CHAIN = 1.25  # ... and within 1.25x of its own chain bound


def library_run(
    dataset: Path, conversations: Sequence[str] | None, max_questions: int | None, base_url: str, search: bool
) -> dict[str, Any]:
    """The child side: mem0's library alone in this process, ingesting and searching as its harness did."""
    from mem0bench.data import load_dataset
    from mem0bench.pipeline.experiment import select_questions
    from mem0bench.systems.external.mem0_oss import library
    from mem0bench.systems.external.mem0_oss.locomo import speaker_batches
    from mem0bench.systems.methods.mem0.streams import stream_specs

    mem0 = library.import_mem0()
    data = load_dataset(str(dataset), conversations=list(conversations) if conversations else None)
    endpoint = library.LibraryEndpoint(
        base_url=base_url, api_key=BENCH_KEY, model="gpt-4o-mini",
        embedding_model="text-embedding-3-small", embedding_dims=1536,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="mem0bench-library-") as tmp:
        streams: list[tuple[Any, str, Any]] = []  # (conversation, speaker, Memory)
        for conversation in data.conversations:
            for spec in stream_specs(conversation, True):
                speaker = library.Speaker(
                    user_id=spec.user, folder=Path(tmp) / conversation.sample_id / spec.slug
                )
                speaker.folder.mkdir(parents=True)
                config = library.memory_config(speaker, endpoint, graph=False)
                streams.append((conversation, spec.user, mem0.Memory.from_config(config)))
        adds = [0] * len(streams)
        errors: list[str] = []
        lock = threading.Lock()

        def ingest(i: int) -> None:
            conversation, user, memory = streams[i]
            try:
                for batch in speaker_batches(conversation, user, BATCH_SIZE):
                    memory.config.custom_fact_extraction_prompt = library.extraction_prompt(
                        batch.session_date, True
                    )
                    metadata = {"timestamp": batch.session_date_text}
                    memory.add([dict(m) for m in batch.messages], user_id=user, metadata=metadata, infer=True)
                    adds[i] += 1
            except Exception as exc:  # reported with the figures: a failed stream makes them meaningless
                with lock:
                    errors.append(f"{conversation.sample_id}/{user}: {type(exc).__name__}: {exc}")

        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(streams)) as pool:  # one thread per speaker stream
            list(pool.map(ingest, range(len(streams))))
        ingest_s = time.perf_counter() - t0
        questions = 0
        search_s = None
        if search:
            t1 = time.perf_counter()
            by_conversation: dict[str, list[tuple[str, Any]]] = {}
            for conversation, user, memory in streams:
                by_conversation.setdefault(conversation.sample_id, []).append((user, memory))
            for conversation in data.conversations:
                chosen = select_questions(
                    conversation, include_adversarial=False, max_questions=max_questions
                )
                for question in chosen:
                    for user, memory in by_conversation[conversation.sample_id]:
                        memory.search(question.question, user_id=user, limit=TOP_K)
                    questions += 1
            search_s = time.perf_counter() - t1
        for _, _, memory in streams:
            library.close_memory(memory)
    return {
        "streams": len(streams),
        "adds": sum(adds),
        "ingest_s": ingest_s,
        "questions": questions,
        "search_s": search_s,
        "errors": errors,
    }


def serve_library(argv: list[str]) -> int:
    """Hidden subcommand `mem0library DATASET CONVERSATIONS|all MAX_QUESTIONS|all BASE_URL search|nosearch`."""
    dataset, conversations, limit, base_url, search = argv[:5]
    result = library_run(
        Path(dataset),
        None if conversations == "all" else conversations.split(","),
        None if limit == "all" else int(limit),
        base_url,
        search == "search",
    )
    print(json.dumps(result))
    return 0


def _library(
    ctx: BenchContext,
    standin: Standin,
    label: str,
    conversations: Sequence[str] | None,
    max_questions: int | None,
    search: bool,
) -> dict[str, Any]:
    argv = [
        sys.executable, "-m", "benchmarks", "mem0library", str(ctx.dataset),
        ",".join(conversations) if conversations else "all",
        "all" if max_questions is None else str(max_questions), standin.base_url,
        "search" if search else "nosearch",
    ]  # fmt: skip
    env = standin_env()
    env.update(ctx.env)
    before = standin.stats()
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=6 * 3600)
    wall = time.perf_counter() - t0
    after = standin.stats()
    (ctx.out / f"{label}.log").write_text(done.stderr, encoding="utf-8")
    if done.returncode != 0:
        raise BenchError(f"{label}: mem0's library run failed:\n{done.stderr[-2000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    if figures["errors"]:
        raise BenchError(f"{label}: {len(figures['errors'])} stream(s) failed: {figures['errors'][0]}")
    figures.update(
        wall_s=wall,
        http=requests_between(before, after).as_dict(),
        loadavg_1m=[round(load, 2), round(os.getloadavg()[0], 2)],
    )
    return figures


def _block(timing: dict[str, Any], stage: str) -> dict[str, Any]:
    block = timing.get(stage)
    return block if isinstance(block, dict) else {}


def _ours(
    ctx: BenchContext,
    standin: Standin,
    label: str,
    conversations: Sequence[str] | None,
    max_questions: int | None,
    judge_runs: int | None,
) -> dict[str, Any]:
    run = measure_run(
        ctx, label, "mem0", standin, conversations=conversations, max_questions=max_questions,
        judge_runs=judge_runs,
    )  # fmt: skip
    timing = run_timing(Path(run["run_dir"]))
    ingest = _block(timing, "ingest")
    latency = _block(timing, "latency")
    return {
        "command": run["command"],
        "run_dir": run["run_dir"],
        "wall_s": run["wall_s"],
        "ingest_done_s": run["ingest_done_s"],
        "ingest_wall_s": ingest.get("wall_s"),
        "chain_bound_s": ingest.get("chain_bound_s"),
        "latency_pass_s": latency.get("wall_s"),
        "http": run["http"],
        "n_questions": run["n_questions"],
        "max_concurrency": run["max_concurrency"],
        "cpu_s": run["cpu_s"],
        "loadavg_1m": run["loadavg_1m"],
        "steal_pct": run["steal_pct"],
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def bench_library(
    ctx: BenchContext,
    *,
    latencies_ms: Sequence[float] = LATENCIES_MS,
    conversations: Sequence[str] | None = None,
    max_questions: int | None = None,
    judge_runs: int | None = None,
    library_search: bool = True,
) -> dict[str, Any]:
    """At each latency, one stand-in; the library, then ours, against it."""
    rows: dict[str, dict[str, Any]] = {}
    checks = []
    for ms in latencies_ms:
        tag = f"{ms:g}ms"
        with Standin(ms, ctx.out / f"library-standin-{tag}.log", handler=HANDLER) as standin:
            ctx.say(f"[library] mem0's library directly, {tag}")
            lib = _library(
                ctx, standin, f"library-mem0ai-{tag}", conversations, max_questions, library_search
            )
            ctx.say(f"[library] +exp=mem0, {tag}")
            ours = _ours(ctx, standin, f"library-ours-{tag}", conversations, max_questions, judge_runs)
        ingest = ours["ingest_wall_s"] if ours["ingest_wall_s"] is not None else ours["ingest_done_s"]
        rows[tag] = {"latency_ms": ms, "library": lib, "ours": ours, "ours_ingest_s": ingest}
        if ms > 0:
            checks.append(
                check(
                    f"ours / library ingest wall, {tag}",
                    _ratio(ingest, lib["ingest_s"]),
                    "<=",
                    INGEST_VS_LIBRARY,
                )
            )
            checks.append(
                check(f"ours ingest wall / its chain bound, {tag}", _ratio(ingest, ours["chain_bound_s"]), "<=",
                      INGEST_VS_CHAIN)
            )  # fmt: skip
    return {
        "command": "library",
        "conversations": list(conversations) if conversations else "all",
        "max_questions": max_questions,
        "rows": rows,
        "checks": checks,
    }


def render_library(res: dict[str, Any]) -> str:
    def s(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f} s"

    lines = [
        "| latency | run | ingest wall | chain bound | searches / whole run | HTTP requests | load 1m |",
        "|---|---|---|---|---|---|---|",
    ]
    for tag, row in res["rows"].items():
        lib, ours = row["library"], row["ours"]
        search = (
            "-"
            if lib["search_s"] is None
            else f"search {lib['search_s']:.0f} s ({lib['questions']} questions)"
        )
        lines.append(
            f"| {tag} | mem0's library ({lib['streams']} threads) | {s(lib['ingest_s'])} | - "
            f"| {search}; process {lib['wall_s']:.0f} s | {lib['http']['total']:,} "
            f"| {lib['loadavg_1m'][0]} -> {lib['loadavg_1m'][1]} |"
        )
        lines.append(
            f"| {tag} | `+exp=mem0` (llm.max_concurrency={ours['max_concurrency']}) | {s(row['ours_ingest_s'])} "
            f"| {s(ours['chain_bound_s'])} | whole run {ours['wall_s']:.0f} s (latency pass {s(ours['latency_pass_s'])}) "
            f"| {ours['http']['total']:,} | {ours['loadavg_1m'][0]} -> {ours['loadavg_1m'][1]} |"
        )
    if res["checks"]:
        lines += checks_table(res["checks"])
    return "\n".join(lines)
