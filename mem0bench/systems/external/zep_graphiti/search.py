"""graphiti search configs for the edge (fact) and node (entity) scopes.

Zep's own LOCOMO harness (getzep/zep-papers `zep_locomo_search.py`) and the Mem0 paper's both asked for
the 20 best edges reranked by a cross-encoder and the 20 best nodes reranked by RRF. The default does the
same with graphiti's open-source cross-encoder (`OpenAIRerankerClient`, a chat model scoring each
candidate fact by the logprob of "True"): candidates are graphiti's hybrid search (BM25 + cosine
similarity), fused by reciprocal rank fusion and cut at 2 x limit, then each scored by the model. The
options: RRF alone for edges too (`method.reranker=rrf`: no model call; the candidates in their fused
order), or MMR for both scopes (`method.reranker=mmr`, relevance traded against diversity by
`method.mmr_lambda`).
"""

from __future__ import annotations

from graphiti_core.search.search_config import (
    EdgeReranker,
    EdgeSearchConfig,
    EdgeSearchMethod,
    NodeReranker,
    NodeSearchConfig,
    NodeSearchMethod,
    SearchConfig,
)

__all__ = ["EDGE_RERANKERS", "edge_config", "node_config"]


EDGE_RERANKERS = {
    "cross_encoder": EdgeReranker.cross_encoder,
    "rrf": EdgeReranker.rrf,
    "mmr": EdgeReranker.mmr,
}
"""`method.reranker` (system.RERANKERS) -> graphiti's edge reranker."""


def edge_config(reranker: str, limit: int, mmr_lambda: float) -> SearchConfig:
    """The best `limit` facts: BM25 + cosine candidates, reranked by the cross-encoder, RRF or MMR."""
    return SearchConfig(
        edge_config=EdgeSearchConfig(
            search_methods=[EdgeSearchMethod.bm25, EdgeSearchMethod.cosine_similarity],
            reranker=EDGE_RERANKERS[reranker],
            mmr_lambda=mmr_lambda,
        ),
        limit=limit,
    )


def node_config(reranker: str, limit: int, mmr_lambda: float) -> SearchConfig:
    """The best `limit` entities: BM25 + cosine candidates, fused by RRF (as the references did, whichever
    edge reranker) or MMR."""
    return SearchConfig(
        node_config=NodeSearchConfig(
            search_methods=[NodeSearchMethod.bm25, NodeSearchMethod.cosine_similarity],
            reranker=NodeReranker.mmr if reranker == "mmr" else NodeReranker.rrf,
            mmr_lambda=mmr_lambda,
        ),
        limit=limit,
    )
