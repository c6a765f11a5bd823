"""The Mem0 paper's methods (Chhikara et al. 2025): `mem0` (extraction plus Algorithm 1 over a vector
store) and `mem0g` (Mem0 plus a graph of entities and relations); `inspection` reads what they saved."""
