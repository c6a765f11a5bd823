"""Where things are, what the targets are, and the settings every measurement shares."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

REPO = Path(__file__).resolve().parents[1]
STANDIN_MODULE = REPO / "devtools" / "standin" / "server.py"
SHARED = REPO.parent / "shared"
BENCH_KEY_ENV = "MEM0BENCH_BENCH_KEY"
BENCH_KEY = "bench-fake-key-not-real"

CPU_MS_PER_CALL_TARGET = 2.0  # harness CPU (user + sys) per LLM call, zero-latency server
PEAK_RSS_MB_TARGET = 1024.0  # harness peak RSS
LOCAL_SEARCH_P95_MS_TARGET = {"mem0": 1.0, "mem0g": 5.0}
OVERLAP_TARGET = 3.5  # (calls x latency) / wall time with a 50 ms server


class BenchError(Exception):
    """A measurement could not be made (the run failed, the stand-in did not start, ...)."""


@dataclass(frozen=True)
class BenchContext:
    """What every measurement shares: where runs go, the dataset, and the user's extra settings."""

    out: Path
    dataset: Path
    overrides: Sequence[str] = ()  # `--set KEY=VALUE`: Hydra overrides for every run
    env: dict[str, str] = field(default_factory=dict)  # `--env KEY=VALUE`: for the harness processes
    log: TextIO | None = None  # progress lines go here

    def say(self, text: str) -> None:
        if self.log is not None:
            print(text, file=self.log, flush=True)


def search_target_ms(method: str) -> float:
    """The local-search p95 target: Mem0^g's graph search is allowed more than Mem0's."""
    return LOCAL_SEARCH_P95_MS_TARGET["mem0g" if "mem0g" in method else "mem0"]


def default_dataset() -> Path | None:
    for candidate in (REPO / "data" / "locomo10.json", SHARED / "data" / "locomo10.json"):
        if candidate.is_file():
            return candidate
    return None


def standin_env() -> dict[str, str]:
    """The environment for the stand-in and the bare client: ours, plus the shared tiktoken cache."""
    env = dict(os.environ)
    _add_tiktoken_cache(env)
    return env


def harness_env(base_url: str, cache_dir: Path, extra: dict[str, str]) -> dict[str, str]:
    """The environment for a harness process: pointed at the stand-in, with its own LLM cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    # An installed package runs from its bytecode; with this set (as on some CI images and this
    # machine) every run would compile mem0bench's ~110 modules again (~0.1 s of start-up).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra)
    env.update(
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY=BENCH_KEY,
        MEM0BENCH_CACHE_DIR=str(cache_dir),
        HYDRA_FULL_ERROR="1",
        PYTHONUNBUFFERED="1",
    )
    _add_tiktoken_cache(env)
    return env


def _add_tiktoken_cache(env: dict[str, str]) -> None:
    # Offline machines: the tokenizer files come from the shared cache unless the caller chose one.
    if "TIKTOKEN_CACHE_DIR" not in env and (SHARED / "tiktoken").is_dir():
        env["TIKTOKEN_CACHE_DIR"] = str(SHARED / "tiktoken")
