"""`python -m mem0bench COMMAND ...`: a thin dispatcher."""

from __future__ import annotations

import sys

USAGE = """usage: python -m mem0bench COMMAND [ARGS]

commands:
  run [OVERRIDES]          run an experiment through Hydra, e.g. run +exp=mem0g (add -m to sweep)
  judge RUN_DIR [OVERRIDES]  judge a finished run again (e.g. judge.runs=10 judge.prompt=strict)
  report PATH... --out DIR   tables (md/csv/tex) and plots from run and sweep folders
  memories RUN_DIR --conversation ID   a run's final memories and relations, and their history
  status PATH...           where a run or sweep stands: done/left per stage, failures, cost, resume command
  data stats|download      the LOCOMO file: counts, or download it (sha256-checked)
  import FILE --out RUN_DIR  another system's published answers as a run directory, scored our way
  compare RUN_A RUN_B      paired differences (bootstrap CI, exact McNemar, detectable difference)
  judge-check [OVERRIDES]  the judge's false-accept and false-reject rates on a calibration set
  check-system TARGET      does your memory system (a class, or an http URL) keep the protocol? a checklist

`python -m mem0bench COMMAND --help` explains each, with examples; `run --help` shows Hydra's options
and config groups.

examples:
  python -m mem0bench run +exp=mem0g
  python -m mem0bench status results/runs/2026-12-01_09-30-00-000000_mem0g
  python -m mem0bench report results/sweeps/2026-12-01_08-00-00-000000_rag --out results/report
"""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    command, rest = args[0], args[1:]
    if command == "run":
        from mem0bench.cli.errors import hydra_errors_in_one_line
        from mem0bench.cli.run import run_main

        with hydra_errors_in_one_line():
            return run_main(rest)
    if command == "judge":
        from mem0bench.cli.judge import judge_main

        return judge_main(rest)
    if command == "report":
        from mem0bench.cli.report import report_main

        return report_main(rest)
    if command == "memories":
        from mem0bench.cli.memories import memories_main

        return memories_main(rest)
    if command == "status":
        from mem0bench.cli.status import status_main

        return status_main(rest)
    if command == "data":
        from mem0bench.cli.data import data_main

        return data_main(rest)
    if command == "import":
        from mem0bench.cli.import_answers import import_main

        return import_main(rest)
    if command == "compare":
        from mem0bench.cli.compare import compare_main

        return compare_main(rest)
    if command == "judge-check":
        from mem0bench.cli.judge_check import judge_check_main

        return judge_check_main(rest)
    if command == "check-system":
        from mem0bench.cli.check_system import check_system_main

        return check_system_main(rest)
    print(f"error: unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
