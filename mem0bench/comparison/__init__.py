"""`mem0bench compare A B`: two runs on the same questions, paired (`compare`); report's paired tables use it."""
