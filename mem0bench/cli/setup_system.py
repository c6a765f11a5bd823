"""`mem0bench setup-system NAME`: a system's own environment, made once from its pinned requirements."""

from __future__ import annotations

import argparse

from mem0bench.cli.errors import report_errors
from mem0bench.systems.external.own_env.registry import OWN_ENVS


def setup_system_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mem0bench setup-system", description=__doc__.split("\n")[0])
    parser.add_argument("system", choices=sorted(OWN_ENVS), help="the system whose environment to make")
    parser.add_argument("--quiet", action="store_true", help="pip without its progress output")
    args = parser.parse_args(argv)
    return report_errors(lambda: _setup(args))


def _setup(args: argparse.Namespace) -> int:
    from mem0bench.systems.external.own_env.registry import own_env

    env = own_env(args.system)
    python = env.setup(quiet=args.quiet)
    versions = ", ".join(f"{k} {v}" for k, v in sorted(env.installed_versions().items()))
    print(f"{args.system}: ready ({versions}) in {python.parent.parent}")
    return 0
