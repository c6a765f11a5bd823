"""The LLM client and what it owns: settings, cache, rate limits, usage ledger, embedding backends."""
