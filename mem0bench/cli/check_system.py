"""`mem0bench check-system TARGET [KEY=VALUE ...]`: does a memory system keep the protocol's promises?

TARGET is a class (package.module.Class, imported from the current folder or PYTHONPATH; KEY=VALUE are its
settings, YAML values) or the URL of a memory service (+exp=http_system). The system runs on a small
built-in conversation against an in-process stand-in LLM server (no key, no network) and the checklist
is printed; the exit code is 0 only when every check holds.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

import yaml

from mem0bench.cli.errors import report_errors
from mem0bench.cli.examples import with_examples
from mem0bench.common.errors import ConfigurationError

_MARK = {True: "ok  ", False: "FAIL", None: "--  "}


def check_system_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mem0bench check-system", description=__doc__.split("\n")[0], **with_examples("check-system")
    )
    parser.add_argument("target", help="package.module.Class, or http://HOST:PORT of a memory service")
    parser.add_argument(
        "settings", nargs="*", metavar="KEY=VALUE", help="the system's settings (YAML values)"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds any one call may take (120)")
    parser.add_argument(
        "--keep", type=Path, help="keep the systems' state folders here (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
    return report_errors(lambda: _check(args))


def _settings(pairs: list[str]) -> dict[str, Any]:
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigurationError(f"check-system: settings are KEY=VALUE, not {pair!r}")
        settings[key.removeprefix("method.")] = yaml.safe_load(value)
    return settings


def _check(args: argparse.Namespace) -> int:
    from mem0bench.conformance.checks import run_checks
    from mem0bench.conformance.targets import target

    chosen = target(args.target, _settings(args.settings))
    print(
        f"check-system {chosen.label}: the built-in conversation (3 sessions, 4 questions), in-process stand-in"
    )
    with tempfile.TemporaryDirectory(prefix="mem0bench-check-") as scratch:
        workdir = args.keep or Path(scratch)
        results = asyncio.run(run_checks(chosen, workdir, timeout_s=args.timeout))
    for result in results:
        print(f"  {_MARK[result.ok]}  {result.name}: {result.detail}")
    held = sum(1 for r in results if r.ok)
    print(
        f"{held} of {len(results)} checks hold"
        + ("" if held == len(results) else ": fix the FAIL lines above")
    )
    return 0 if held == len(results) else 1
