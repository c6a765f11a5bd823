"""One clear line for every error a user can fix; a traceback only for our own bugs."""

from __future__ import annotations

import sys
from collections.abc import Callable

from mem0bench.data.errors import DatasetError
from mem0bench.llm.types import ConfigurationError


def report_errors(body: Callable[[], int]) -> int:
    try:
        return body()
    except (ConfigurationError, DatasetError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: rerun the same command (same hydra.run.dir) to continue", file=sys.stderr)
        return 130
