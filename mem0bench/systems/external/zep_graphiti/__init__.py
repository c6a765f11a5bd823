"""Zep's open-source engine (graphiti-core) on FalkorDB behind the MemorySystem protocol.

The package imports without graphiti installed; `system.ZepGraphiti` raises a ConfigurationError naming
the `pip install` line for the [zep] extra when it is missing.
"""
