"""graphiti search configs for the edge (fact) and node (entity) scopes, without a cross-encoder.

The Mem0 paper's harness asked Zep's hosted service for 20 edges reranked by its cross-encoder and 20 nodes
reranked by RRF. graphiti's open-source cross-encoder (`OpenAIRerankerClient`) scores each passage with a
chat model's logprobs, which an arbitrary OpenAI-compatible server (and our bridge) does not provide; so
both scopes use graphiti's hybrid search (BM25 + cosine similarity) fused by reciprocal rank fusion, the
reranker the harness itself used for nodes, or MMR (`method.reranker=mmr`, relevance traded against
diversity by `method.mmr_lambda`).
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

__all__ = ["edge_config", "node_config"]


def edge_config(reranker: str, limit: int, mmr_lambda: float) -> SearchConfig:
    """The best `limit` facts: BM25 + cosine candidates, fused by RRF or MMR."""
    return SearchConfig(
        edge_config=EdgeSearchConfig(
            search_methods=[EdgeSearchMethod.bm25, EdgeSearchMethod.cosine_similarity],
            reranker=EdgeReranker.mmr if reranker == "mmr" else EdgeReranker.rrf,
            mmr_lambda=mmr_lambda,
        ),
        limit=limit,
    )


def node_config(reranker: str, limit: int, mmr_lambda: float) -> SearchConfig:
    """The best `limit` entities: BM25 + cosine candidates, fused by RRF or MMR."""
    return SearchConfig(
        node_config=NodeSearchConfig(
            search_methods=[NodeSearchMethod.bm25, NodeSearchMethod.cosine_similarity],
            reranker=NodeReranker.mmr if reranker == "mmr" else NodeReranker.rrf,
            mmr_lambda=mmr_lambda,
        ),
        limit=limit,
    )
