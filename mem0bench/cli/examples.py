"""The examples that end each command's `--help`: real command lines, in one place so they stay alike.

Folder names follow the layout `run` creates (`results/runs/<time>_<method>`, `results/sweeps/...`).
`run --help` is Hydra's; its examples go in through `hydra.help.footer` (see `hydra_footer`).
"""

from __future__ import annotations

import argparse
from typing import Any

RUN = "results/runs/2026-12-01_09-30-00-000000_mem0g"
SWEEP = "results/sweeps/2026-12-01_08-00-00-000000_rag"

EXAMPLES: dict[str, tuple[str, ...]] = {
    "run": (
        "run +exp=mem0g",
        "run +exp=rag method.chunk_size=256 method.k=2 run.dry_run=true",
        "run -m +exp=rag method.chunk_size=128,256 method.k=1,2",
        "run -m +exp=rag run.shard=1/2,2/2",
    ),
    "judge": (
        f"judge {RUN} judge.runs=10",
        f"judge {RUN} judge.prompt=strict judge.model=gpt-4o",
    ),
    "report": (
        f"report {SWEEP} --out results/report",
        f"report {SWEEP} {RUN} --out results/report --labels paper",
        f"report {RUN} results/runs/oracle results/runs/no_memory --out results/report --published",
    ),
    "memories": (
        f"memories {RUN} --conversation conv-26",
        f"memories {RUN} --conversation conv-26 --speaker Caroline --history caroline-0007",
        f"memories {RUN} --conversation conv-26 --export-graphml graphs/",
    ),
    "data": (
        "data stats --path data/locomo10.json --json",
        "data stats --suite longmemeval_s --path data/longmemeval_s_cleaned.json",
        "data download --dir data",
    ),
    "compare": (
        f"compare {RUN} results/runs/2026-12-01_10-00-00-000000_mem0 --out results/compare",
        f"compare {RUN} results/runs/zep --intersect",
    ),
    "import": (
        "import zep_locomo_grades.json --out results/runs/zep --system zep",
        "import answers.jsonl --out results/runs/mine --fields prediction=response,gold=golden_answer",
        "import hyp.jsonl.log --out results/runs/lme-mine dataset=longmemeval_s dataset.path=lme_s.json",
    ),
    "judge-check": (
        "judge-check judge.model=gpt-4o-mini judge.prompt=strict --per-category 50",
        "judge-check judge.prompt=paper --probe ap_v2_vague_scored.json",
        "judge-check dataset=locomo_plus dataset.mode=grouped --per-category 50",
    ),
    "check-system": (
        "check-system keyword_memory.KeywordMemory k=3",
        "check-system http://127.0.0.1:8765",
    ),
    "merge": (
        f"merge {SWEEP} --out results/runs/rag-merged",
        "merge results/runs/shard-1 results/runs/shard-2 --out results/runs/rag-merged",
    ),
    "status": (
        f"status {RUN}",
        f"status {SWEEP}",
        "status results/runs/* --json",
    ),
}


def examples_text(command: str) -> str:
    lines = [f"  python -m mem0bench {example}" for example in EXAMPLES[command]]
    return "examples:\n" + "\n".join(lines)


def with_examples(command: str) -> dict[str, Any]:
    """Keyword arguments for an `ArgumentParser` whose help ends with the command's examples."""
    return {"epilog": examples_text(command), "formatter_class": argparse.RawDescriptionHelpFormatter}


def hydra_footer() -> str:
    """`run --help`'s footer (Hydra prints it last)."""
    return examples_text("run") + "\n"
