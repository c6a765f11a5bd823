"""Every memory system the harness runs, behind memory's MemorySystem protocol, in three rooms:

* `methods`: the Mem0 paper's own systems, Mem0 and Mem0^g, written here.
* `baselines`: the paper's comparison points we also write ourselves: RAG over chunks, the full
  conversation, and the emulation of ChatGPT's memory feature.
* `external`: other teams' libraries (mem0's open-source library, Zep's graphiti, LangMem, A-Mem), each
  imported lazily from an optional extra; `bridge` serves their LLM calls through the harness's client.

A config names a system by its class path (`_target_`); `aliases` maps the paths older run folders
recorded to today's.
"""
