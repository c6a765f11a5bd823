"""One clear line for every error a user can fix; a traceback only for our own bugs.

Exit codes: 2 for a problem the user must fix before any work (configuration, key, server, dataset); 1 for
a run that ended badly (run.strict=true, too many failures); 130 for Ctrl-C.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.jsonl import DamagedFileError
from mem0bench.common.text import one_line
from mem0bench.data.errors import DatasetError

CONFIG_ERROR_EXIT = 2


def report_errors(body: Callable[[], int], errors: list[str] | None = None) -> int:
    """Run `body`; a user-fixable error becomes one `error:` line (also appended to `errors`)."""
    try:
        return body()
    except (ConfigurationError, DatasetError, DamagedFileError) as exc:
        line = one_line(str(exc))
        if errors is not None:
            errors.append(line)
        print(f"error: {line}", file=sys.stderr)
        return CONFIG_ERROR_EXIT
    except KeyboardInterrupt:
        print("interrupted: rerun the same command (same hydra.run.dir) to continue", file=sys.stderr)
        return 130


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in str(text).splitlines() if line.strip()]


def describe_hydra_error(exc: BaseException) -> str:
    """Hydra's (and OmegaConf's) multi-line message about a bad override or config group, in one line."""
    lines = _lines(str(exc))
    head = lines[0].strip() if lines else type(exc).__name__
    override = getattr(exc, "override", None)
    if override is not None and type(exc).__name__ == "OverrideParseException":
        head = f"cannot parse the override '{override}': {head}"
    parts = [head.rstrip(".")]
    cause = exc.__cause__ or exc.__context__
    first = _lines(str(cause)) if cause is not None and cause is not exc else []
    if head.startswith("Could not override '") and first and "is not in struct" in first[0]:
        parts = [f"unknown config key '{head.split(chr(39))[1]}'"]  # chr(39): a single quote
    elif first and first[0].strip() not in head:
        parts.append(first[0].strip().rstrip("."))
    options: list[str] = []
    collecting = False
    for line in lines[1:]:
        if line.startswith("Available options in"):
            collecting = True
            group = line.split("'")[1] if line.count("'") >= 2 else ""
            options.extend(_nested_options(group))
            continue
        if collecting and line.startswith(("\t", " ")):
            options.append(line.strip())
        else:
            collecting = False
    if options:
        parts.append("available: " + ", ".join(sorted(options, key=lambda o: ("/" in o, o))))
    for line in lines[1:]:
        if line.startswith("To append to your config use"):
            parts.append("to add a new key use " + line.split(" use ", 1)[1].strip())
        elif line.startswith("See https://"):
            parts.append(line.strip().removesuffix(" for details").replace("See ", "see ", 1))
    return one_line("; ".join(parts))


def _nested_options(group: str) -> list[str]:
    """The options in a config group's subfolders (exp/paper/mem0.yaml -> paper/mem0), which Hydra's own
    list of a group's options leaves out."""
    from mem0bench.paths import CONFIG_DIR

    folder = CONFIG_DIR / group
    if not group or not folder.is_dir():
        return []
    return sorted(
        path.relative_to(folder).with_suffix("").as_posix()
        for path in folder.rglob("*.yaml")
        if path.parent != folder
    )


def _is_config_error(exc: BaseException) -> bool:
    from hydra.errors import CompactHydraException
    from omegaconf.errors import OmegaConfBaseException

    return isinstance(exc, CompactHydraException | OmegaConfBaseException)


@contextlib.contextmanager
def hydra_errors_in_one_line() -> Iterator[None]:
    """While active, an error Hydra reports about the command line or the config (an unknown key, a
    missing config group option, an override it cannot parse) is printed as one `error:` line and the
    process exits with 2, instead of Hydra's multi-line message and exit code 1. Other errors keep Hydra's
    reporting (HYDRA_FULL_ERROR=1 included)."""
    try:
        import hydra._internal.utils as hydra_utils
    except ImportError:  # pragma: no cover - hydra without its internals: keep its own reporting
        yield
        return
    original = getattr(hydra_utils, "run_and_report", None)
    if original is None:  # pragma: no cover - another Hydra version
        yield
        return

    def run_and_report(func: Callable[[], Any]) -> Any:
        try:
            return func()
        except Exception as exc:
            if _is_config_error(exc) and not _full_error_wanted():
                print(f"error: {describe_hydra_error(exc)}", file=sys.stderr)
                sys.exit(CONFIG_ERROR_EXIT)
            os_error = _os_error_in(exc)
            if os_error is not None and not _full_error_wanted():
                print(f"error: {describe_os_error(os_error)}", file=sys.stderr)
                sys.exit(CONFIG_ERROR_EXIT)
            error = exc

        def again() -> Any:
            raise error

        return original(again)  # Hydra's own reporting, for everything else

    hydra_utils.run_and_report = run_and_report
    try:
        yield
    finally:
        hydra_utils.run_and_report = original


def _os_error_in(exc: BaseException) -> OSError | None:
    """The file-system error behind `exc`, if any: Hydra creating the run folder (mkdir) or opening its
    log file there (logging wraps that one in a ValueError)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.filename:
            return current
        current = current.__cause__ or current.__context__
    return None


def describe_os_error(exc: OSError) -> str:
    """One line for a folder Hydra could not create or write: the run (or sweep) folder."""
    reason = exc.strerror or type(exc).__name__
    return (
        f"cannot create or write {exc.filename} ({reason}): choose a writable hydra.run.dir=... "
        "(hydra.sweep.dir=... for a sweep)"
    )


def _full_error_wanted() -> bool:
    import os

    return os.environ.get("HYDRA_FULL_ERROR") == "1"
