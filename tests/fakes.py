"""Small deterministic stand-ins shared by the unit tests of the memory systems."""

from __future__ import annotations

import importlib
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from mem0bench.llm.types import ChatReply, StructuredReply, StructuredSpec, Usage


def bow_embed(text: str, dim: int = 256) -> np.ndarray:
    """Deterministic bag-of-words embedding, L2-normalized: texts that share words are similar."""
    v = np.zeros(dim, np.float32)
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        v[zlib.crc32(word.encode()) % dim] += 1.0
    if not v.any():
        v[0] = 1.0
    return v / np.linalg.norm(v)


# ---- a scripted fake LLM client ------------------------------------------------------------------------
CHAT = "chat"
"""The route of plain chat calls (structured calls are routed by their spec's name)."""


@dataclass(frozen=True)
class FakeCall:
    """One call the fake answered: its route, stage, messages and the typed inputs of its prompt."""

    route: str
    stage: str
    messages: list[dict[str, Any]]
    inputs: dict[str, Any]
    """The keyword arguments the prompt builder was called with (empty if no builder was captured)."""


Handler = Callable[[FakeCall], Any]
"""Returns the reply: a dict (structured data), a str (chat text), or an exception to raise."""


class PromptInputs:
    """The keyword arguments prompts were built from, by the messages each build returned.

    `capture` wraps a prompt builder where a module imported it; a fake client then `pop`s the inputs of
    the messages it is sent, so it reads typed values (turns, memories, facts), never the prompt's prose.
    """

    def __init__(self) -> None:
        self._by_messages: dict[int, dict[str, Any]] = {}

    def capture(self, monkeypatch: pytest.MonkeyPatch, module: str, builder: str) -> None:
        """Record the inputs of `module.builder(...)` (the name as the module using it imported it)."""
        original = getattr(importlib.import_module(module), builder)

        def recording(**kwargs: Any) -> list[dict[str, Any]]:
            messages = original(**kwargs)
            self._by_messages[id(messages)] = kwargs
            return messages

        monkeypatch.setattr(f"{module}.{builder}", recording)

    def pop(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The inputs `messages` were built from ({} if no captured builder built them)."""
        return self._by_messages.pop(id(messages), {})


class ScriptedLLM:
    """The LLMClient surface the memory systems use, for unit tests.

    Replies are routed by the structured spec's name (`CHAT` for chat calls) to handlers that read the
    typed inputs the prompt was built from, never the prompt's prose: `capture` wraps a prompt builder
    where a module imported it and remembers each call's keyword arguments by the messages it returned.
    Rewording a prompt therefore breaks no test that uses this fake.
    """

    def __init__(
        self, embed: Callable[[str], np.ndarray] = bow_embed, inputs: PromptInputs | None = None
    ) -> None:
        self.handlers: dict[str, Handler] = {}
        self.calls: list[FakeCall] = []
        self.embedded: list[tuple[list[str], str]] = []
        self._embed = embed
        self._inputs = inputs or PromptInputs()

    def on(self, route: str, handler: Handler) -> ScriptedLLM:
        self.handlers[route] = handler
        return self

    def capture(self, monkeypatch: pytest.MonkeyPatch, module: str, builder: str) -> None:
        """Record the inputs of `module.builder(...)` (the name as the module using it imported it)."""
        self._inputs.capture(monkeypatch, module, builder)

    def routed(self, route: str) -> list[FakeCall]:
        return [call for call in self.calls if call.route == route]

    def _answer(self, route: str, messages: list[dict[str, Any]], stage: str) -> Any:
        call = FakeCall(route, stage, messages, self._inputs.pop(messages))
        self.calls.append(call)
        if route not in self.handlers:
            raise AssertionError(f"no scripted reply for {route!r}; routes: {sorted(self.handlers)}")
        reply = self.handlers[route](call)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    async def structured(
        self, messages: list[dict[str, Any]], spec: StructuredSpec, *, stage: str, **_: Any
    ) -> StructuredReply:
        return StructuredReply(data=self._answer(spec.name, messages, stage), usage=Usage())

    async def chat(self, messages: list[dict[str, Any]], *, stage: str, **_: Any) -> ChatReply:
        return ChatReply(text=self._answer(CHAT, messages, stage), usage=Usage())

    async def embed(self, texts: Sequence[str], *, stage: str) -> np.ndarray:
        self.embedded.append((list(texts), stage))
        return np.stack([self._embed(text) for text in texts]) if texts else np.zeros((0, 1), np.float32)
