"""Development tools shared by tests/, benchmarks/ and scripts/, never shipped in the wheel.

* `standin`: the local OpenAI-compatible stand-in server and the reply formats of the libraries' prompts.
* `e2e`: running the CLI against it (environment, arguments, reading the run files back).
* `reliability`: starting, gating and killing CLI runs (crash and resume tests).
* `unreachable`: a stand-in in its own process, for a server that dies mid-run.

They may import mem0bench; mem0bench never imports them (tests/test_architecture.py).
"""
