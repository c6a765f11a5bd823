"""Memories exported from real ChatGPT: the Mem0 paper's actual OpenAI baseline.

The paper's `openai/predict.py` read `memories/<i>.txt`, one plain-text file per conversation (`i` its
position in locomo10.json), and put the whole file into the answer prompt as the memories. A folder laid
out the same way is read here; `<sample_id>.txt` is accepted too, so a folder can also be named by sample.
"""

from __future__ import annotations

from pathlib import Path

from mem0bench.common.errors import ConfigurationError
from mem0bench.data.model import Conversation

__all__ = ["exported_memories", "memories_folder"]


def memories_folder(path: str | Path) -> Path:
    """The folder, checked once when the system is built."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ConfigurationError(f"method.memories_file: {folder} is not a folder of <i>.txt memory files")
    return folder


def exported_memories(folder: Path, conversation: Conversation) -> str:
    """The file's text as it was read by the paper (whole, unchanged), or one line naming what is missing."""
    names = (f"{conversation.position}.txt", f"{conversation.sample_id}.txt")
    for name in names:
        path = folder / name
        if path.is_file():
            try:
                return path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise ConfigurationError(
                    f"method.memories_file: {path} (sample {conversation.sample_id}) cannot be read: {error}"
                ) from None
    raise ConfigurationError(
        f"method.memories_file: no memories for sample {conversation.sample_id} in {folder} "
        f"(looked for {' and '.join(names)})"
    )
