"""BEAM from the hub (`Mohammadta/BEAM`: splits 100K, 500K, 1M; `Mohammadta/BEAM-10M`: split 10M), read
through the `datasets` library as LongMemEval is: a folder saved by `save_to_disk` (`dataset_dict.json`)
or the dataset's parquet files (a file, or a folder of them, `data/` included). Nothing is fetched here: the
files are where `dataset.path` says.

A hub row holds `conversation_id`, `chat` and `probing_questions` (a Python literal of the same object the
repository's JSON holds). Its chat is a list of batches, each a flat list of messages; the repository's
chat.json groups them into turns, a turn starting at each `main_question` message, and dates the batch by
that message's time anchor (`convert_chats_pickle_to_json` of the authors' download_dataset.py). At 10M
the chat is a list of plans, `{plan-<k>: batches}` with the other keys null (their `fix_10m_chats`).
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem0bench.data.download import file_sha256
from mem0bench.data.errors import DatasetError

__all__ = ["RawConversation", "read_hub", "repository_chat"]


@dataclass(frozen=True)
class RawConversation:
    """One conversation as read, before it is checked: its id, its chat and its questions, and where each
    came from (for the errors)."""

    cid: str
    chat: Any
    questions: Any
    chat_file: str
    questions_file: str


def read_hub(root: Path, scale: str, cache_dir: Path | None) -> tuple[list[RawConversation], str, str]:
    """The conversations of `scale` in the hub's files at `root`, their combined sha256, and the name
    errors give."""
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    file = str(root)
    try:
        if (root / "dataset_dict.json").is_file():
            saved = datasets.load_from_disk(str(root))
            if scale not in saved:
                raise DatasetError(f"no split {scale} (it has {', '.join(saved)})", file=file)
            table = saved[scale]
            files = sorted(p for p in root.rglob("*") if p.is_file())
        else:
            files = [root] if root.is_file() else sorted(root.rglob("*.parquet"))
            chosen = [p for p in files if scale.lower() in p.name.lower()] or files
            table = datasets.load_dataset(
                "parquet", data_files=[str(p) for p in chosen], split="train",
                cache_dir=None if cache_dir is None else str(cache_dir),
            )  # fmt: skip
            files = chosen
    except DatasetError:
        raise
    except Exception as exc:  # any failure of the library: one line
        raise DatasetError(f"the datasets library could not read it ({type(exc).__name__}: {exc})"[:300],
                           file=file) from None  # fmt: skip
    missing = [c for c in ("conversation_id", "chat", "probing_questions") if c not in table.column_names]
    if missing:
        raise DatasetError(f"missing column(s) {', '.join(missing)}", file=file)
    digest = hashlib.sha256()
    for p in files:
        digest.update(f"{p.name}:{file_sha256(p)};".encode())
    items = []
    for i in range(len(table)):
        row = table[i]
        cid_raw = row["conversation_id"]
        cid = f"{scale}-{cid_raw}"
        where = f"{file}[{scale}]"
        questions = row["probing_questions"]
        if isinstance(questions, str):
            try:
                questions = ast.literal_eval(questions)
            except (ValueError, SyntaxError) as exc:
                raise DatasetError(f"probing_questions is not a readable literal ({exc})", file=where,
                                   sample=cid, field="probing_questions") from None  # fmt: skip
        chat = repository_chat(row["chat"], scale, where, cid)
        items.append(RawConversation(cid, chat, questions, where, where))
    return items, digest.hexdigest(), file


def repository_chat(chat: Any, scale: str, file: str, cid: str) -> list[Any]:
    """A hub row's chat in the repository's chat.json shape (batches of turns, dated)."""
    if not isinstance(chat, list):
        raise DatasetError(f"expected a list of batches, found {type(chat).__name__}", file=file, sample=cid,
                           field="chat")  # fmt: skip
    if scale == "10M":
        plans = []
        for k, plan in enumerate(chat):
            found = [(name, v) for name, v in plan.items() if v is not None] if isinstance(plan, dict) else []
            if not found:
                raise DatasetError("expected a plan object with one non-null key", file=file, sample=cid,
                                   field=f"chat[{k}]")  # fmt: skip
            name, batches = found[0]
            plans.append({name: _batches(batches, file, cid, f"chat[{k}].{name}")})
        return plans
    return _batches(chat, file, cid, "chat")


def _batches(batches: Any, file: str, cid: str, where: str) -> list[dict[str, Any]]:
    if not isinstance(batches, list):
        raise DatasetError(f"expected a list of batches, found {type(batches).__name__}", file=file,
                           sample=cid, field=where)  # fmt: skip
    out = []
    for b, batch in enumerate(batches):
        if isinstance(batch, dict) and "turns" in batch:  # already in the repository's shape
            out.append(batch)
            continue
        if not isinstance(batch, list):
            raise DatasetError(f"expected a list of messages, found {type(batch).__name__}", file=file,
                               sample=cid, field=f"{where}[{b}]")  # fmt: skip
        turns: list[list[Any]] = []
        current: list[Any] = []
        anchor = None
        for message in batch:
            starts = isinstance(message, dict) and message.get("question_type") == "main_question"
            if starts and current:
                turns.append(current)
                current = []
            if starts and anchor is None and message.get("time_anchor"):
                anchor = message["time_anchor"]
            current.append(message)
        turns.append(current)
        out.append({"batch_number": b + 1, "turns": turns, "time_anchor": anchor})
    return out
