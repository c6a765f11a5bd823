"""`mem0bench merge`: the shards of one run (`run.shard=K/N`) as one run folder, equal to the run done
unsplit."""

from mem0bench.merging.merge import find_shards, merge_shards

__all__ = ["find_shards", "merge_shards"]
