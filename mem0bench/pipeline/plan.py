"""`run.dry_run=true`: the LLM calls, tokens and USD a configuration would spend, without calling anything.

An estimate, not a promise: what is counted exactly (message pairs, questions, judge runs, conversation
tokens) is counted; what depends on the model's replies (facts per pair, triplets per pair, reply
lengths) uses the per-item figures below, which are stated in the printout.
"""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig

from mem0bench.data.model import Dataset, Question
from mem0bench.memory.stream import message_pairs
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.tokens import count_tokens

# Assumptions for what the replies decide (round figures; tune with a real run's metrics.json).
FACTS_PER_PAIR = 1.0
TRIPLETS_PER_PAIR = 1.0
INSTRUCTION_TOKENS = 450  # a prompt's fixed instructions
MEMORY_TOKENS = 25  # one rendered memory or relation line
REPLY_TOKENS = {"extract": 60, "update": 40, "summary": 250, "graph": 60, "answer": 10, "judge": 40}


@dataclass
class Line:
    stage: str
    what: str
    calls: float
    prompt: float
    completion: float


def _plan(
    cfg: DictConfig, dataset: Dataset, questions: dict[str, list[Question]], judge: JudgeSettings
) -> list[Line]:
    method = cfg.method
    kind = str(method.name)
    lines: list[Line] = []
    n_questions = sum(len(qs) for qs in questions.values())
    is_mem0 = kind.startswith("mem0")
    if is_mem0:
        streams = 2 if method.get("per_speaker", True) else 1
        pairs = sum(len(message_pairs(c)) for c in dataset.conversations) * streams
        turn_tokens = sum(count_tokens(t.text) + 8 for c in dataset.conversations for t in c.turns) * streams
        avg_turn = turn_tokens / max(pairs * 2, 1)
        m, s, every = int(method.m), int(method.s), int(method.summary_every)
        facts = pairs * FACTS_PER_PAIR
        lines.append(Line("ingest", "extraction", pairs, pairs * (INSTRUCTION_TOKENS + 300 + (m + 2) * avg_turn),
                          pairs * REPLY_TOKENS["extract"]))  # fmt: skip
        lines.append(Line("ingest", "update decisions", facts, facts * (INSTRUCTION_TOKENS + s * MEMORY_TOKENS),
                          facts * REPLY_TOKENS["update"]))  # fmt: skip
        refreshes = pairs / max(every, 1)
        lines.append(Line("ingest", "summary refreshes", refreshes,
                          refreshes * (INSTRUCTION_TOKENS + 300 + 2 * every * avg_turn),
                          refreshes * REPLY_TOKENS["summary"]))  # fmt: skip
        lines.append(Line("ingest", "embeddings (facts)", pairs, facts * 20, 0))
        if kind == "mem0g":
            triplets = pairs * TRIPLETS_PER_PAIR
            lines.append(Line("ingest", "entities + relations", 2 * pairs,
                              2 * pairs * (INSTRUCTION_TOKENS + 2 * avg_turn), 2 * pairs * REPLY_TOKENS["graph"]))  # fmt: skip
            lines.append(Line("ingest", "conflict resolution", triplets,
                              triplets * (INSTRUCTION_TOKENS + 10 * MEMORY_TOKENS), triplets * 20))  # fmt: skip
            lines.append(Line("ingest", "embeddings (graph)", 2 * pairs, triplets * 30, 0))
            lines.append(Line("search", "query entities", n_questions, n_questions * (INSTRUCTION_TOKENS + 30),
                              n_questions * 20))  # fmt: skip
        context: float = 2 * int(method.top_k) * MEMORY_TOKENS
        if kind == "mem0g":
            context += 2 * int(method.get("relations_top_k", 20)) * MEMORY_TOKENS
    elif kind == "rag":
        chunks = sum(len(c.turns) * 40 for c in dataset.conversations) / int(method.chunk_size)
        lines.append(Line("ingest", "chunk embeddings", max(chunks / 256, len(dataset.conversations)),
                          chunks * int(method.chunk_size), 0))  # fmt: skip
        context = int(method.k) * int(method.chunk_size)
    else:
        context = sum(count_tokens("\n".join(c.render_lines())) for c in dataset.conversations) / max(
            len(dataset.conversations), 1
        )
    if kind != "full_context":
        lines.append(Line("search", "query embeddings", n_questions, n_questions * 15, 0))
    lines.append(Line("answer", "answers", n_questions, n_questions * (INSTRUCTION_TOKENS + context),
                      n_questions * REPLY_TOKENS["answer"]))  # fmt: skip
    lines.append(Line("judge", f"judge x{judge.runs}", n_questions * judge.runs,
                      n_questions * judge.runs * (INSTRUCTION_TOKENS + 60), n_questions * judge.runs * REPLY_TOKENS["judge"]))  # fmt: skip
    return lines


def print_plan(
    cfg: DictConfig, dataset: Dataset, questions: dict[str, list[Question]], judge: JudgeSettings
) -> None:
    prices = {k: dict(v) for k, v in cfg.llm.prices.items()}
    chat = prices.get(str(cfg.llm.model), {"prompt": 0.0, "completion": 0.0})
    judge_price = prices.get(judge.model, chat)
    embed_price = prices.get(str(cfg.embedder.model), {"prompt": 0.0, "completion": 0.0})
    if cfg.embedder.backend != "openai":
        embed_price = {"prompt": 0.0, "completion": 0.0}
    total_calls = total_usd = 0.0
    print(f"dry run: {cfg.method.name} on {len(dataset.conversations)} conversations, "
          f"{sum(len(q) for q in questions.values())} questions (no LLM call made)")  # fmt: skip
    print(f"{'stage':<7} {'what':<22} {'calls':>9} {'prompt tok':>12} {'compl. tok':>11} {'USD':>9}")
    for line in _plan(cfg, dataset, questions, judge):
        price = embed_price if "embedding" in line.what else judge_price if line.stage == "judge" else chat
        usd = (line.prompt * price["prompt"] + line.completion * price["completion"]) / 1e6
        total_calls += line.calls
        total_usd += usd
        print(f"{line.stage:<7} {line.what:<22} {line.calls:>9,.0f} {line.prompt:>12,.0f} "
              f"{line.completion:>11,.0f} {usd:>9.3f}")  # fmt: skip
    print(f"total: about {total_calls:,.0f} calls, ${total_usd:.2f}  (assumes {FACTS_PER_PAIR} fact and "
          f"{TRIPLETS_PER_PAIR} triplet per message pair; cached calls cost nothing)")  # fmt: skip
