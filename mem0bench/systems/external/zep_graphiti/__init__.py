"""Zep's open-source engine (graphiti-core) on FalkorDB behind the MemorySystem protocol.

The package imports without graphiti installed; `system.ZepGraphiti` raises a ConfigurationError naming
`pip install 'mem0bench[zep]'` when it is missing.
"""
