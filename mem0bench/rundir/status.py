"""The status a run's run.json records: one of a closed set, written by the process that runs it and read
by `status`, `report` and a sweep's summary."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["RunState"]


class RunState(StrEnum):
    """run.json's `status`. A str enum: the file holds the same strings it always did.

    (Named RunState, not RunStatus: `mem0bench status`'s report of where a run stands is the RunStatus of
    status/reader.py.)
    """

    RUNNING = "running"
    """A process is at work on it (or was killed outright: the heartbeat tells which)."""
    COMPLETE = "complete"
    """The run ended with its failures within run.max_failure_rate."""
    FAILED = "failed"
    """Failures above run.max_failure_rate, a system that crashed, or an error that stopped the run
    (`reason` says which); the same command continues it."""
    STOPPED = "stopped"
    """The LLM server (or the memory service) stopped answering, or the disk (or quota) filled
    (`rundir.storage`); the same command continues it."""
    INTERRUPTED = "interrupted"
    """Ctrl-C or SIGTERM; the same command continues it."""
    ABORTED = "aborted"
    """run.strict=true and a call failed for good."""

    @classmethod
    def of(cls, value: object) -> RunState | None:
        """The state a run.json `status` names; None when it is absent or not one of these."""
        try:
            return cls(value) if isinstance(value, str) else None
        except ValueError:
            return None
