"""Class paths that older run folders recorded, mapped to where the systems live now.

A run folder's config.yaml names its system by `method._target_`. The systems moved into one tree
(`mem0bench.systems.{methods,baselines,external}`); a run written before the move still names the old
module, and everything that turns a saved config back into a class (status's estimate, a resumed run)
goes through `current_target`. The table maps module prefixes, so `mem0bench.memory.mem0.Mem0` and
`mem0bench.memory.mem0.system.Mem0` both resolve. Only our own old paths are listed: a plugged-in
system's path is returned unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

MOVED: Mapping[str, str] = MappingProxyType(
    {
        "mem0bench.memory.mem0": "mem0bench.systems.methods.mem0",
        "mem0bench.memory.mem0g": "mem0bench.systems.methods.mem0g",
        "baselines.rag": "mem0bench.systems.baselines.rag",
        "baselines.full_context": "mem0bench.systems.baselines.full_context",
        "mem0bench.systems.chatgpt_memory_emulation": "mem0bench.systems.baselines.chatgpt_memory_emulation",
        "mem0bench.systems.mem0_oss": "mem0bench.systems.external.mem0_oss",
        "mem0bench.systems.zep_graphiti": "mem0bench.systems.external.zep_graphiti",
        "mem0bench.systems.langmem": "mem0bench.systems.external.langmem",
        "mem0bench.systems.amem": "mem0bench.systems.external.amem",
    }
)
"""Old module -> new module (a prefix of the class path, matched on whole dotted components)."""


def current_target(target: str) -> str:
    """`target` with a moved module's old prefix replaced by its new one (the longest matching prefix)."""
    for old in sorted(MOVED, key=len, reverse=True):
        if target == old or target.startswith(old + "."):
            return MOVED[old] + target[len(old) :]
    return target
