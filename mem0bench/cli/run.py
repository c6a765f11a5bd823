"""`mem0bench run`: Hydra composes the config; the run lives in Hydra's run directory.

Hydra 1.3 has no subcommands, so `run` is taken off argv before `hydra.main` sees it. An API key given on
the command line (`llm.api_key=...`) is moved into the environment before Hydra starts, so it can never
reach a saved config, Hydra's override lists, multirun.yaml or a log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from mem0bench.paths import CONFIG_DIR

__all__ = ["CONFIG_DIR", "record_failed_job", "run_main"]


def _take_secrets(argv: list[str]) -> list[str]:
    """Remove `llm.api_key=...` (with or without +/++) from argv; export it under llm.api_key_env."""
    env_name = "OPENAI_API_KEY"
    for arg in argv:
        if arg.lstrip("+").startswith("llm.api_key_env="):
            env_name = arg.split("=", 1)[1]
    kept = []
    for arg in argv:
        if arg.lstrip("+").startswith("llm.api_key="):
            os.environ[env_name] = arg.split("=", 1)[1]
            continue
        kept.append(arg)
    return kept


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
    from mem0bench.cli.compose_cache import cached_compose

    with _mode_from_flags(sys.argv[1:]), cached_compose():
        _task()
    return max(exit_codes, default=0)
