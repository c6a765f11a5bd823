"""`mem0bench run`: Hydra composes the config; the run lives in Hydra's run directory.

Hydra 1.3 has no subcommands, so `run` is taken off argv before `hydra.main` sees it. An API key is read
from the environment (`llm.api_key_env`, OPENAI_API_KEY by default) or from a file only its owner can
read (`llm.api_key_file=PATH`, put into that environment variable before Hydra starts, so the key never
reaches a saved config, Hydra's override lists, multirun.yaml or a log). A key on the command line
(`llm.api_key=...`) is refused: a process's arguments are visible to every user (`ps`) while it runs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

from mem0bench.paths import CONFIG_DIR

__all__ = ["CONFIG_DIR", "record_failed_job", "run_main"]


def _take_secrets(argv: list[str]) -> list[str]:
    """argv without `llm.api_key_file=PATH` (with or without +/++), whose key is exported under
    llm.api_key_env; `llm.api_key=...` stops the command with one line (and exit 2) saying where a key
    goes instead, as does a key file others can read."""
    env_name = "OPENAI_API_KEY"
    for arg in argv:
        if arg.lstrip("+").startswith("llm.api_key_env="):
            env_name = arg.split("=", 1)[1]
    kept = []
    for arg in argv:
        setting = arg.lstrip("+")
        if setting.startswith("llm.api_key="):
            _refuse(
                "llm.api_key=... on the command line is visible to every user of this machine (ps) for the "
                f"whole run: set the environment variable {env_name} instead, or give "
                "llm.api_key_file=PATH (a file only you can read)"
            )
        if setting.startswith("llm.api_key_file="):
            os.environ[env_name] = _read_key_file(Path(setting.split("=", 1)[1]).expanduser())
            continue
        kept.append(arg)
    return kept


def _read_key_file(path: Path) -> str:
    """The key in `path` (surrounding whitespace dropped); one line and exit 2 when others can read the
    file, or it cannot be read, or it is empty."""
    try:
        with path.open("rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode  # the file read, not one swapped in after a check
            data = handle.read(64 * 1024)
    except OSError as exc:
        _refuse(f"llm.api_key_file: cannot read {path}: {exc.strerror or exc}")
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        _refuse(
            f"llm.api_key_file: {path} is readable by other users (mode {stat.S_IMODE(mode):o}): "
            f"chmod 600 {path}"
        )
    try:
        key = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        key = ""
    if not key or any(c.isspace() for c in key):
        _refuse(f"llm.api_key_file: {path} does not hold one key (a single line of text)")
    return key


def _refuse(line: str) -> NoReturn:
    from mem0bench.cli.errors import CONFIG_ERROR_EXIT

    print(f"error: {line}", file=sys.stderr)
    raise SystemExit(CONFIG_ERROR_EXIT)


def record_failed_job(run_dir: Path, reason: str) -> None:
    """A sweep job that stopped before its run began: a run.json that says so, and why."""
    from mem0bench.common.folder_lock import lock_owner
    from mem0bench.rundir.directory import write_json
    from mem0bench.rundir.status import RunState

    if (run_dir / "run.json").exists() or lock_owner(run_dir):
        return  # a run's own record, or a folder another process owns (it writes run.json itself)
    # If the folder itself is the problem, the error line was printed already: nothing more to do.
    with contextlib.suppress(OSError):
        write_json(
            run_dir / "run.json", {"run_id": run_dir.name, "status": RunState.FAILED, "reason": reason}
        )


# Arguments that can make composing the config change the run mode: a `hydra.mode` override, or config
# folders and files of the user's own (which may set it). No config in configs/ sets `hydra.mode`
# (tests/test_cli_startup.py checks).
_MODE_FROM_CONFIG = ("hydra.mode", "hydra.searchpath", "--config-dir", "-cd", "--config-path", "-cp",
                     "--config-name", "-cn")  # fmt: skip


def _mode_needs_config(argv: list[str]) -> bool:
    return any(arg.lstrip("+~").startswith(_MODE_FROM_CONFIG) for arg in argv)


@contextlib.contextmanager
def _mode_from_flags(argv: list[str]) -> Iterator[None]:
    """Hydra 1.3 composes the whole config once only to read `hydra.mode` (`Hydra.get_mode`), then again
    for the run: ~0.25 s of CPU before the first request. When nothing in `argv` can set that key, the
    answer is known without composing: unset, so `-m`/`--multirun` alone decides, as Hydra then does."""
    if _mode_needs_config(argv):
        yield
        return
    from hydra._internal.hydra import Hydra

    composed = Hydra.get_mode
    Hydra.get_mode = lambda self, config_name, overrides: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        Hydra.get_mode = composed  # type: ignore[method-assign]


def run_main(argv: list[str]) -> int:
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import DictConfig

    from mem0bench.cli.errors import report_errors

    exit_codes: list[int] = []

    @hydra.main(config_path=str(CONFIG_DIR), config_name="run", version_base="1.3")
    def _task(cfg: DictConfig) -> int:
        from mem0bench.cli.config import plain
        from mem0bench.pipeline.experiment import main_from_config

        # Hydra's job logging is INFO at the root: keep the HTTP libraries' per-request lines out of it.
        for noisy in (
            "httpx",
            "httpx2",
            "httpcore",
            "httpcore2",
            "openai",
            "urllib3",
            "sentence_transformers",
        ):
            logging.getLogger(noisy).setLevel(logging.WARNING)

        run_dir = Path(HydraConfig.get().runtime.output_dir)
        errors: list[str] = []
        # The one place the run's config is a DictConfig: resolved to plain data, parsed into the spec.
        code = report_errors(lambda: main_from_config(plain(cfg), run_dir), errors)
        exit_codes.append(code)
        if code and HydraConfig.get().mode != RunMode.MULTIRUN:
            sys.exit(code)
        if code and errors:
            record_failed_job(run_dir, errors[-1])  # so that `report` on the sweep can name it
        return code

    from omegaconf import OmegaConf

    from mem0bench.cli.examples import hydra_footer

    # configs/run.yaml's hydra.help.footer: `run --help` ends with examples like every other command.
    OmegaConf.register_new_resolver("mem0bench_examples", lambda _: hydra_footer(), replace=True)
    sys.argv = [sys.argv[0], *_take_secrets(argv)]
    with _mode_from_flags(sys.argv[1:]):
        _task()
    return max(exit_codes, default=0)
