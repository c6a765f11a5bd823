"""`mem0bench setup-system NAME`: a system's own environment, made once (mem0_v2: mem0ai 2.x's venv)."""

from __future__ import annotations

import argparse

from mem0bench.cli.errors import report_errors

_SYSTEMS = ("mem0_v2",)


def setup_system_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mem0bench setup-system", description=__doc__.split("\n")[0])
    parser.add_argument("system", choices=_SYSTEMS, help="the system whose environment to make")
    parser.add_argument("--quiet", action="store_true", help="pip without its progress output")
    args = parser.parse_args(argv)
    return report_errors(lambda: _setup(args))


def _setup(args: argparse.Namespace) -> int:
    from mem0bench.systems.external.mem0_v2 import venv

    python = venv.setup_venv(quiet=args.quiet)
    versions = ", ".join(f"{k} {v}" for k, v in sorted(venv.installed_versions().items()))
    print(f"{args.system}: ready ({versions}) in {python.parent.parent}")
    return 0
