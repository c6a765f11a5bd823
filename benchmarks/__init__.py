"""`python -m benchmarks` (from the checkout): how fast and how lean the harness is, against a local stand-in.

Every measurement runs the real CLI (`python -m mem0bench run ...`) in its own process, with a fresh LLM
cache and a fresh run directory, against the repository's stand-in OpenAI server
(devtools/standin/server.py) started as a separate process, so the server's CPU is never counted as the
harness's. The stand-in counts the HTTP requests it served; the harness's CPU time and peak memory come
from the kernel's accounting of the child process (`os.wait4`: its rusage, the same figures as a
`getrusage(RUSAGE_CHILDREN)` delta around the run, but not mixed with the stand-in's once that is reaped).

    overhead   one system over the whole LOCOMO file (categories 1-4, one judge run) against a
               zero-latency stand-in: wall time, LLM calls, harness CPU per call, peak RSS, ingestion
               cost per turn, search time excluding network
    overlap    two conversations with default settings against a 50 ms stand-in: calls x latency / wall
               time (how much latency overlaps), and the ideal for the available parallelism (with the
               nominal latency, and with a bare client's measured round trip to the same stand-in)
    search     search time excluding network at LOCOMO scale, Mem0 and Mem0^g: in the run (under the
               run's own concurrency) and isolated (the same stores queried one question at a time)
    bridge     mem0's library (mem0ai) run directly and through `+exp=mem0_oss` (the LLM bridge) on one
               conversation, zero-latency stand-in: search p50 and CPU per request of both, and the ratios
    pacing     conv-26 under an enforced request and token budget (issue 35): requests, share answered
               429, budget use over the run and up to the latency pass, per stage, the pacer's wait
    all        overhead, overlap and search, then a markdown block for docs/benchmarks.md

Modules: `settings` (paths, targets, the shared `BenchContext`), `standin` (the stand-in process and its
counters), `runs` (one measured `run` process and what its run directory says), `overhead`, `overlap`
(+ `roundtrip`, the bare-client calibration) `search` and `bridge` (the measurements), `render` (tables and
markdown), `machine` (what the figures were measured on) and `cli` (`bench_main`).
Results are plain JSON-ready dicts: they are written verbatim to `bench.json` and printed by `--json`.
"""
