"""memU (`memu`) as its authors ran LOCOMO, in its own environment.

memU's published LOCOMO figure (92.09% on categories 1-4) came from its repository's
`scripts/evals/locomo/` (NevaMind-AI/memU, commit 44ef388): a memory agent that writes each speaker's
dated events session by session, with a self-check loop, and a response agent that retrieves in up to three
rounds, an LLM deciding whether to search again. memu-py 0.1.7 (the 0.1 line those scripts were written on;
the newest that installs on Python 3.11) pins httpx<0.28, so it runs in a venv of its own
(`python -m mem0bench setup-system memu`) as a service (`service.py`: their steps, prompts and scores on
memu's LLM and embedding clients) that the shared `OwnEnvSystem` starts and reaches over the HTTP system
protocol. The answer context is memU's own (`_generate_answer`'s "RELEVANT EVENTS:" list); the harness's
answer prompt answers from it (memU's own answer prompt is a documented departure, docs/systems.md).

The memory prompts are ours, worded from what memU's instruct (`locomo_prompts`); `prompts_dir` names a
folder of memU's own prompt files (a checkout's `scripts/evals/locomo/prompts/`) to run those instead.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.data.model import Conversation, Dataset
from mem0bench.memory.base import SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.prompts.files import PromptFile
from mem0bench.systems.external.http_system.wire import SearchItem
from mem0bench.systems.external.memu import locomo_prompts
from mem0bench.systems.external.memu.costs import memu_cost_plan
from mem0bench.systems.external.memu.env import ENV
from mem0bench.systems.external.own_env.adapter import OwnEnvSystem, Rendered

__all__ = ["MemU", "render_events"]


def render_events(events: list[tuple[str, str]]) -> str:
    """memU's answer context (`ResponseAgent._generate_answer`): the events found, numbered, each after its
    speaker's name; nothing when none was found."""
    if not events:
        return ""
    parts = ["RELEVANT EVENTS:"] + [
        f"\n{i}. {speaker}: {text}" for i, (speaker, text) in enumerate(events, 1)
    ]
    return "\n".join(parts)


class MemU(OwnEnvSystem):
    """memU's LOCOMO memory agent and response agent, one memory per conversation, in the service this
    adapter starts."""

    env = ENV
    service_script = Path(__file__).with_name("service.py")

    def __init__(
        self,
        *,
        name: str = "memu",
        max_iterations: int = 3,
        max_rounds: int = 3,
        round_top_k: list[int] | tuple[int, ...] = (25, 15, 15),
        captions: bool = True,
        prompts_dir: str | None = None,
        timeout_s: float = 1800.0,
        max_retries: int = 2,
        max_concurrency: int = 8,
        workers: int = 8,
        context: SystemContext,
    ) -> None:
        for label, value in (("max_iterations", max_iterations), ("max_rounds", max_rounds)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {label} must be an integer >= 1, got {value!r}")
        ks = list(round_top_k) if isinstance(round_top_k, list | tuple) else []
        if not ks or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in ks):
            raise ValueError(f"{name}: round_top_k must be a list of integers >= 1, got {round_top_k!r}")
        # memU's own prompt files, checked here (before the venv, the service or any call) as the service
        # will read them; the service is given the absolute folder (it runs in a folder of its own).
        self.prompts_dir = (
            None if prompts_dir in (None, "") else str(Path(str(prompts_dir)).expanduser().resolve())
        )
        try:
            texts = locomo_prompts.load(self.prompts_dir) if self.prompts_dir else dict(locomo_prompts.OURS)
        except locomo_prompts.PromptsError as exc:
            raise ConfigurationError(str(exc)) from None
        self.prompts_sha256 = hashlib.sha256(json.dumps(texts, sort_keys=True).encode()).hexdigest()
        self.prompt_files = tuple(
            PromptFile(
                setting=f"method.prompts_dir.{locomo_prompts.FILES[key].removesuffix('.txt')}",
                path=str(Path(self.prompts_dir) / locomo_prompts.FILES[key]),
                sha256=hashlib.sha256(text.encode()).hexdigest(),
                messages=(("user", text),),
            )
            for key, text in texts.items()
            if self.prompts_dir
        )  # run.json records each file's sha256; a rerun finds a file edited in place
        super().__init__(
            name=name, top_k=ks[0], timeout_s=timeout_s, max_retries=max_retries,
            max_concurrency=max_concurrency, workers=workers, context=context,
        )  # fmt: skip
        self.max_iterations, self.max_rounds, self.round_top_k = max_iterations, max_rounds, ks
        self.captions = bool(captions)

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return memu_cost_plan(method, dataset, n_questions)

    def memory_settings(self) -> dict[str, Any]:
        # How it searches (rounds, ks) is not in its memories: a change asks the questions again, and the
        # saved sessions stand (nothing is extracted again).
        # The prompts by content (ours or memU's files), not by the folder's path.
        return {
            "max_iterations": self.max_iterations,
            "captions": self.captions,
            "prompts_sha256": self.prompts_sha256,
            "versions": self.versions,
        }

    def service_settings(self, dims: int) -> dict[str, Any]:
        return {
            "max_iterations": self.max_iterations,
            "max_rounds": self.max_rounds,
            "round_top_k": self.round_top_k,
            "captions": self.captions,
            "prompts_dir": self.prompts_dir,
        }

    def render(self, conversation: Conversation, items: list[tuple[dict[str, Any], SearchItem]]) -> Rendered:
        """The events in the order the rounds found them (the service deduplicated them), as memU's answer
        prompt shows them. memU's events keep no link to the turns they came from: no dia_ids."""
        speakers = set(conversation.speakers)
        events = []
        for item, parsed in items:
            who = item.get("speaker") if isinstance(item, dict) else None
            if who not in speakers:
                raise ValueError(f"an event of {who!r}, who is not a speaker of {conversation.sample_id}")
            events.append((str(who), parsed.text))
        return Rendered(render_events(events), [], len(events), kind="notes")
