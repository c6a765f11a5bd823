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
from importlib import resources
from pathlib import Path

# The Hydra configs ship inside the package (mem0bench/configs; in a checkout a symlink to the top-level
# configs/, which stays the source), so an installed wheel finds them wherever it is run from.
CONFIG_DIR = Path(str(resources.files("mem0bench") / "configs"))


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
    from mem0bench.rundir.directory import write_json

    if (run_dir / "run.json").exists():
        return
    # If the folder itself is the problem, the error line was printed already: nothing more to do.
    with contextlib.suppress(OSError):
        write_json(run_dir / "run.json", {"run_id": run_dir.name, "status": "failed", "reason": reason})


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
    _task()
    return max(exit_codes, default=0)
