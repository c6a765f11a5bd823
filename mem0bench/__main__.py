"""`python -m mem0bench COMMAND ...`: a thin dispatcher."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    target: str
    """`module:function`, imported only when the command runs (so `--help` stays fast)."""
    line: str
    """The command's line in the usage text, as shown (its arguments, then what it does)."""
    hydra: bool = False
    """Hydra's errors are turned into one line (only `run` goes through Hydra)."""


COMMANDS: tuple[Command, ...] = (
    Command("run", "mem0bench.cli.run:run_main",
            "run [OVERRIDES]          run an experiment through Hydra, e.g. run +exp=mem0g (add -m to sweep)",
            hydra=True),
    Command("judge", "mem0bench.cli.judge:judge_main",
            "judge RUN_DIR [OVERRIDES]  judge a finished run again (e.g. judge.runs=10 judge.prompt=strict)"),
    Command("report", "mem0bench.cli.report:report_main",
            "report PATH... --out DIR   tables (md/csv/tex) and plots from run and sweep folders"),
    Command("memories", "mem0bench.cli.memories:memories_main",
            "memories RUN_DIR --conversation ID   a run's final memories and relations, and their history"),
    Command("status", "mem0bench.cli.status:status_main",
            "status PATH...           where a run or sweep stands: done/left per stage, failures, cost, resume command"),
    Command("merge", "mem0bench.cli.merge:merge_main",
            "merge RUN... --out DIR   the shards of one run (run.shard=K/N) as one run folder, as if run unsplit"),
    Command("data", "mem0bench.cli.data:data_main",
            "data stats|download      the LOCOMO file: counts, or download it (sha256-checked)"),
    Command("import", "mem0bench.cli.import_answers:import_main",
            "import FILE --out RUN_DIR  another system's published answers as a run directory, scored our way"),
    Command("compare", "mem0bench.cli.compare:compare_main",
            "compare RUN_A RUN_B      paired differences (bootstrap CI, exact McNemar, detectable difference)"),
    Command("judge-check", "mem0bench.cli.judge_check:judge_check_main",
            "judge-check [OVERRIDES]  the judge's false-accept and false-reject rates on a calibration set"),
    Command("check-system", "mem0bench.cli.check_system:check_system_main",
            "check-system TARGET      does your memory system (a class, or an http URL) keep the protocol? a checklist"),
    Command("setup-system", "mem0bench.cli.setup_system:setup_system_main",
            "setup-system NAME        a system's own environment, made once from its pinned requirements"),
)  # fmt: skip

USAGE = (
    "usage: python -m mem0bench COMMAND [ARGS]\n\ncommands:\n"
    + "".join(f"  {c.line}\n" for c in COMMANDS)
    + """
`python -m mem0bench COMMAND --help` explains each, with examples; `run --help` shows Hydra's options
and config groups.

examples:
  python -m mem0bench run +exp=mem0g
  python -m mem0bench status results/runs/2026-12-01_09-30-00-000000_mem0g
  python -m mem0bench report results/sweeps/2026-12-01_08-00-00-000000_rag --out results/report
"""
)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    name, rest = args[0], args[1:]
    command = next((c for c in COMMANDS if c.name == name), None)
    if command is None:
        print(f"error: unknown command {name!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    module, function = command.target.split(":")
    entry: Callable[[list[str]], int] = getattr(importlib.import_module(module), function)
    if command.hydra:
        from mem0bench.cli.errors import hydra_errors_in_one_line

        with hydra_errors_in_one_line():
            return entry(rest)
    return entry(rest)


def _exit(code: int) -> None:
    """Exit with `code`, skipping the cyclic garbage collector's passes over every object still alive.

    At exit the interpreter tears down its modules and runs full collections over everything a run
    imported and made: ~0.8 s of CPU after the last request, measured (`python -m benchmarks startup`)
    when a run still imported the openai SDK's thousands of model classes. Frozen objects are still released and every atexit
    handler still runs (logs are flushed as before); only the collector's scans of them are skipped.
    """
    import gc

    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    _exit(main())
