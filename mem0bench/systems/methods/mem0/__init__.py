"""Mem0 (Chhikara et al. 2025, arXiv 2504.19413): extraction plus Algorithm 1 over a vector store per speaker.

Where things live:

* `system`: the `Mem0` MemorySystem tying the steps together (ingest, resume, retrieve).
* `streams`: one stream per speaker (or one shared), and the state of a stream being built.
* `extraction`: candidate facts from one message pair.
* `update`: Algorithm 1 for one fact (ADD / UPDATE / DELETE / NOOP, invented ids); `guard`: the UPDATE
  information guard.
* `summary`: the deterministic summary refresh schedule.
* `persistence`: op log, store snapshot, meta.json and the done marker.
* `failures`: failures.jsonl rows and which failures a replay retries.
* `retrieval`: top_k search per speaker and the answer-context rendering.
"""

from mem0bench.systems.methods.mem0.guard import adds_information, content_words
from mem0bench.systems.methods.mem0.retrieval import render_memories
from mem0bench.systems.methods.mem0.streams import SHARED, speaker_slug
from mem0bench.systems.methods.mem0.system import Mem0

__all__ = ["SHARED", "Mem0", "adds_information", "content_words", "render_memories", "speaker_slug"]
