"""Prompt files: a user's own wording (or the paper's, copied from mem0's evaluation code) for a prompt,
without editing the package.

A prompt file is UTF-8 text. Lines that are exactly ``[system]``, ``[user]`` or ``[assistant]`` start a
message sent with that role; text before the first such line (or a file without one) is one ``user``
message. Inside, named fields in braces are filled in: ``{question}``, ``{context}``, ... (which fields a
prompt offers: `ANSWER_FIELDS` and the like); ``{{`` and ``}}`` stand for literal braces, as in Python's
``str.format``, so a template copied from Python source keeps its doubled braces. A judge file may start
with ``[verdict: tool]`` (default: the judge's function call, as our own judge prompts), ``[verdict: json]``
(a plain reply holding a JSON object whose ``label`` is CORRECT or WRONG, as mem0's judge asked) or
``[verdict: word]`` (a plain reply in which exactly one of CORRECT and WRONG appears).

A field the prompt does not offer, a required field the file lacks, or an unreadable file stops the run
before any call, in one line naming the setting, the file and the field. The file's sha256 is recorded in
run.json and salts the cache key of every call it shapes (`PromptFile.salt`), so two files never share a
cached reply; without a file nothing changes, cache keys included.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.types import Message

__all__ = [
    "ANSWER_FIELDS",
    "EXTRACTION_FIELDS",
    "JUDGE_FIELDS",
    "UPDATE_FIELDS",
    "PromptFile",
    "Verdict",
    "load_prompt_file",
    "read_verdict",
]

Verdict = Literal["tool", "json", "word"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
ROLES = ("system", "user", "assistant")

ANSWER_FIELDS = frozenset({"question", "context"})
"""answer.prompt_file: the question and the retrieved context as the system rendered it."""
JUDGE_FIELDS = frozenset({"question", "gold", "answer"})
"""judge.prompt_file: the question, the gold answer and the generated answer."""
EXTRACTION_FIELDS = frozenset({"user", "other", "date", "summary", "earlier", "new"})
"""method.extraction_prompt_file: the store's owner and the other speaker, the new pair's session date, the
summary, the earlier messages and the new pair (both as '[date] role (name): text' lines)."""
UPDATE_FIELDS = frozenset({"fact", "facts", "date", "memories"})
"""method.update_prompt_file: the new fact (per_fact) or the numbered facts (batched), the date they were
learned, and the similar memories as a JSON list of {id, text, date}."""

_ROLE_LINE = re.compile(r"^\[(system|user|assistant)\]\s*$")
_VERDICT_LINE = re.compile(r"^\[verdict:\s*([a-z_]+)\s*\]\s*$")
_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")


@dataclass(frozen=True)
class PromptFile:
    """A loaded prompt file: its messages as (role, template), its identity and, for a judge, its verdict."""

    setting: str
    """The config key that named it, e.g. 'judge.prompt_file'."""
    path: str
    sha256: str
    messages: tuple[tuple[str, str], ...]
    verdict: Verdict = "tool"

    @property
    def salt(self) -> str:
        """The cache-key salt of every call this file shapes."""
        return f"prompt-file:{self.sha256}"

    @property
    def label(self) -> str:
        """A short name for tables and folders: the file's name and the start of its sha256."""
        return f"{Path(self.path).stem}-{self.sha256[:8]}"

    def record(self) -> dict[str, str]:
        """What run.json records of it."""
        return {"path": self.path, "sha256": self.sha256, "verdict": self.verdict}

    def render(self, **values: Any) -> list[Message]:
        """The messages with every field filled in (the fields were checked when the file was loaded)."""
        return [{"role": role, "content": template.format_map(values)} for role, template in self.messages]


def load_prompt_file(
    setting: str,
    path: str | Path,
    fields: frozenset[str],
    required: frozenset[str],
    *,
    judge: bool = False,
) -> PromptFile:
    """Read and check a prompt file; ConfigurationError (one line) for anything wrong with it."""
    where = f"{setting}={path}"
    try:
        raw = Path(path).expanduser().read_bytes()
        text = raw.decode("utf-8")
    except OSError as exc:
        raise ConfigurationError(f"{where}: cannot read the prompt file ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ConfigurationError(f"{where}: the prompt file is not UTF-8 text") from None
    verdict: Verdict = "tool"
    messages: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        found = _VERDICT_LINE.match(line)
        if found and not any("".join(body).strip() for _, body in messages):
            if not judge:
                raise ConfigurationError(f"{where}: [verdict: ...] is for judge.prompt_file only")
            if found.group(1) not in VERDICTS:
                raise ConfigurationError(
                    f"{where}: unknown verdict {found.group(1)!r} (one of {', '.join(VERDICTS)})"
                )
            verdict = found.group(1)  # type: ignore[assignment]
            continue
        role = _ROLE_LINE.match(line)
        if role:
            messages.append((role.group(1), []))
            continue
        if not messages:
            messages.append(("user", []))
        messages[-1][1].append(line)
    built = tuple((role, "\n".join(body).strip("\n")) for role, body in messages if "".join(body).strip())
    if not built:
        raise ConfigurationError(f"{where}: the prompt file is empty")
    used: set[str] = set()
    for _, template in built:
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise ConfigurationError(f"{where}: {exc} (write a literal brace as {{{{ or }}}})") from None
        for _, name, spec, conversion in parsed:
            if name is None:
                continue
            if name not in fields:
                offered = ", ".join("{" + f + "}" for f in sorted(fields))
                raise ConfigurationError(f"{where}: unknown field {{{name}}} (fields: {offered})")
            if spec or conversion:
                raise ConfigurationError(f"{where}: field {{{name}}} takes no format spec or conversion")
            used.add(name)
    for name in sorted(required - used):
        raise ConfigurationError(f"{where}: the prompt file has no {{{name}}} field, which it needs")
    return PromptFile(
        setting=setting,
        path=str(path),
        sha256=hashlib.sha256(raw).hexdigest(),
        messages=built,
        verdict=verdict,
    )


def read_verdict(text: str, verdict: Verdict) -> Literal["CORRECT", "WRONG"] | None:
    """CORRECT or WRONG from a plain judge reply read as `verdict` says; None when it cannot be read."""
    if verdict == "json":
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end < start:
            return None
        try:
            data = json.loads(text[start : end + 1])
        except json.JSONDecodeError:
            return None
        label = str(data.get("label", "")).strip().upper() if isinstance(data, dict) else ""
        return "CORRECT" if label == "CORRECT" else "WRONG" if label == "WRONG" else None
    found = set(_LABEL.findall(text.upper()))
    if len(found) != 1:
        return None
    return "CORRECT" if found == {"CORRECT"} else "WRONG"
