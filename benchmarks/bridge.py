"""`bench bridge`: mem0's own library run directly, and the same library through `+exp=mem0_oss` (the LLM
bridge), on the same stand-in: search p50 and CPU per request of both, and their ratios.

Direct: a process of its own imports mem0ai, opens one sync `Memory` per speaker with the stand-in as its
OpenAI base URL (the adapter's own mem0 config, 1536-dim embeddings as the harness's default embedder),
adds the conversation as the adapter does (per speaker, 2 messages per add, infer=True), then searches
each question for both speakers, one search after another. Bridged: `python -m mem0bench run
+exp=mem0_oss` on the same conversation and questions; its search figure is the isolated latency pass
(latency.jsonl: each question alone, its two speakers' searches side by side).

CPU per request: the process's CPU (user + sys) over the stand-in's requests in its time. Both include the
process's start-up (imports, config); the figure "after start-up" takes out the direct process's own
import-and-open CPU and, for the bridged run, a dry run's CPU (the harness's start-up).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.runs import measure_run, read_jsonl
from benchmarks.settings import BENCH_KEY, REPO, BenchContext, BenchError, standin_env
from benchmarks.standin import Standin, requests_between
from benchmarks.stats import summary_ms

TOP_K = 30  # the adapter's default (configs/method/mem0_oss.yaml)
BATCH_SIZE = 2


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def direct_run(
    dataset: Path, conversation_id: str, max_questions: int | None, base_url: str
) -> dict[str, Any]:
    """The library alone, in this process (the child side of `bench bridge`): per-search seconds and CPU."""
    from mem0bench.data import load_dataset
    from mem0bench.pipeline.experiment import select_questions
    from mem0bench.systems.external.mem0_oss import library
    from mem0bench.systems.external.mem0_oss.locomo import speaker_batches
    from mem0bench.systems.methods.mem0.streams import stream_specs

    mem0 = library.import_mem0()
    conversation = load_dataset(str(dataset), conversations=[conversation_id]).conversations[0]
    # The run's own choice of questions (categories 1-4, the first N): both sides search the same ones.
    questions = select_questions(conversation, include_adversarial=False, max_questions=max_questions)
    endpoint = library.LibraryEndpoint(
        base_url=base_url, api_key=BENCH_KEY, model="gpt-4o-mini",
        embedding_model="text-embedding-3-small", embedding_dims=1536,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="mem0bench-direct-") as tmp:
        memories = []
        for spec in stream_specs(conversation, True):
            speaker = library.Speaker(user_id=spec.user, folder=Path(tmp) / spec.slug)
            speaker.folder.mkdir(parents=True)
            config = library.memory_config(speaker, endpoint, graph=False)
            memories.append((spec.user, mem0.Memory.from_config(config)))
        setup_cpu = _cpu_s()
        adds = 0
        for user, memory in memories:
            for batch in speaker_batches(conversation, user, BATCH_SIZE):
                memory.config.custom_fact_extraction_prompt = library.extraction_prompt(
                    batch.session_date, True
                )
                metadata = {"timestamp": batch.session_date_text, "dia_ids": list(batch.dia_ids)}
                memory.add([dict(m) for m in batch.messages], user_id=user, metadata=metadata, infer=True)
                adds += 1
        ingest_cpu = _cpu_s()
        searches: list[float] = []
        per_question: list[float] = []
        for question in questions:
            both = 0.0
            for user, memory in memories:
                t0 = time.perf_counter()
                memory.search(question.question, user_id=user, limit=TOP_K)
                took = time.perf_counter() - t0
                searches.append(took)
                both += took
            per_question.append(both)
        end_cpu = _cpu_s()
        for _, memory in memories:
            library.close_memory(memory)
    return {
        "adds": adds,
        "questions": len(questions),
        "search_s": searches,
        "question_s": per_question,
        "setup_cpu_s": setup_cpu,
        "ingest_cpu_s": ingest_cpu - setup_cpu,
        "search_cpu_s": end_cpu - ingest_cpu,
        "cpu_s": end_cpu,
    }


def serve_direct(argv: list[str]) -> int:
    """Hidden subcommand `mem0direct DATASET CONVERSATION MAX_QUESTIONS BASE_URL` -> one JSON line."""
    dataset, conversation, limit, base_url = Path(argv[0]), argv[1], argv[2], argv[3]
    result = direct_run(dataset, conversation, int(limit) if limit != "all" else None, base_url)
    print(json.dumps(result))
    return 0


def _direct(
    ctx: BenchContext, standin: Standin, conversation: str, max_questions: int | None
) -> dict[str, Any]:
    argv = [sys.executable, "-m", "benchmarks", "mem0direct", str(ctx.dataset), conversation,
            "all" if max_questions is None else str(max_questions), standin.base_url]  # fmt: skip
    env = standin_env()
    env.update(ctx.env)
    before = standin.stats()
    load = os.getloadavg()[0]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=4 * 3600)
    after = standin.stats()
    (ctx.out / "bridge-direct.log").write_text(done.stderr, encoding="utf-8")
    if done.returncode != 0:
        raise BenchError(f"the direct mem0 run failed:\n{done.stderr[-2000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    requests = requests_between(before, after)
    if not requests.total:
        raise BenchError("the direct mem0 run made no request to the stand-in")
    work_cpu = figures["ingest_cpu_s"] + figures["search_cpu_s"]
    return {
        "adds": figures["adds"],
        "questions": figures["questions"],
        "http": requests.as_dict(),
        "search_ms": summary_ms(figures["search_s"]),
        "question_ms": summary_ms(figures["question_s"]),
        "cpu_s": figures["cpu_s"],
        "startup_cpu_s": figures["setup_cpu_s"],
        "cpu_ms_per_request": 1000 * figures["cpu_s"] / requests.total,
        "cpu_ms_per_request_after_startup": 1000 * work_cpu / requests.total,
        "loadavg_1m": [round(load, 2), round(os.getloadavg()[0], 2)],
    }


def _bridged(
    ctx: BenchContext, standin: Standin, conversation: str, max_questions: int | None
) -> dict[str, Any]:
    run = measure_run(
        ctx, "bridge-mem0_oss", "mem0_oss", standin, conversations=[conversation],
        max_questions=max_questions, judge_runs=1,
    )  # fmt: skip
    dry = measure_run(ctx, "bridge-mem0_oss-dry", "mem0_oss", standin, conversations=[conversation],
                      max_questions=max_questions, judge_runs=1, dry_run=True)  # fmt: skip
    rows = read_jsonl(Path(run["run_dir"]) / "latency.jsonl")
    isolated = [r["search_s"] for r in rows if r.get("search_s") is not None]
    if not isolated:
        raise BenchError(f"{run['run_dir']}: no isolated latency rows (eval.latency=isolated?)")
    total = run["http"]["total"]
    return {
        "run_dir": run["run_dir"],
        "command": run["command"],
        "questions": run["n_questions"],
        "http": run["http"],
        "isolated_search_ms": summary_ms(isolated),
        "inline_search_ms": run["search_latency_ms"],
        "cpu_s": run["cpu_s"],
        "startup_cpu_s": dry["cpu_s"],
        "cpu_ms_per_request": 1000 * run["cpu_s"] / total,
        "cpu_ms_per_request_after_startup": 1000 * (run["cpu_s"] - dry["cpu_s"]) / total,
        "loadavg_1m": run["loadavg_1m"],
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def bench_bridge(
    ctx: BenchContext, *, conversation: str = "conv-26", max_questions: int | None = None
) -> dict[str, Any]:
    """Direct and bridged, one after the other, against one zero-latency stand-in answering mem0's prompts."""
    from benchmarks.stats import check

    with Standin(
        0.0, ctx.out / "bridge-standin.log", handler="devtools.standin.mem0_oss_replies:mem0_handler()"
    ) as standin:
        ctx.say(f"[bridge] mem0ai directly on {conversation}")
        direct = _direct(ctx, standin, conversation, max_questions)
        ctx.say(f"[bridge] +exp=mem0_oss on {conversation}")
        bridged = _bridged(ctx, standin, conversation, max_questions)
    search_ratio = _ratio(bridged["isolated_search_ms"]["p50"], direct["question_ms"]["p50"])
    cpu_ratio = _ratio(
        bridged["cpu_ms_per_request_after_startup"], direct["cpu_ms_per_request_after_startup"]
    )
    return {
        "command": "bridge",
        "conversation": conversation,
        "direct": direct,
        "bridged": bridged,
        "ratios": {
            "search_p50_bridged_vs_direct_question": search_ratio,
            "search_p50_bridged_vs_direct_search": _ratio(
                bridged["isolated_search_ms"]["p50"], direct["search_ms"]["p50"]
            ),
            "cpu_per_request_bridged_vs_direct": cpu_ratio,
            "cpu_per_request_bridged_vs_direct_whole_process": _ratio(
                bridged["cpu_ms_per_request"], direct["cpu_ms_per_request"]
            ),
        },
        "checks": [
            check("mem0_oss isolated search p50 / direct (both speakers)", search_ratio, "<=", 1.5),
            check("mem0_oss CPU per request / direct (after start-up)", cpu_ratio, "<=", 1.5),
        ],
    }
