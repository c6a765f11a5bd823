"""Mem0^g (Chhikara et al. 2025): Mem0's memories plus a directed labelled graph of entities and relations.

Where things live:

* `system`: the `Mem0G` MemorySystem (Mem0's hooks, resume, the ingest report, retrieval).
* `ingestion`: the graph step of one message pair (entities, relations, node reuse, conflicts that
  invalidate, never delete).
* `retrieval`: the entity-centric and semantic-triplet channels, their merge and the relations' rendering.
* `persistence`: one stream's graph and its files (snapshot, graph_stream.json).

The graph stores themselves (in-process, FalkorDB) are in `mem0bench.memory.graph`.
"""

from mem0bench.systems.methods.mem0g.retrieval import render_relations
from mem0bench.systems.methods.mem0g.system import Mem0G

__all__ = ["Mem0G", "render_relations"]
