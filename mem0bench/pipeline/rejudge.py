"""Re-judging an existing run: the answers already in the run directory get the judge runs they lack
(with the judge settings given now); no ingestion, no answering."""

from __future__ import annotations

import asyncio

from mem0bench.llm.client import LLMClient
from mem0bench.pipeline.attempt import Attempt, RunOptions
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.pipeline.outcome import RunOutcome
from mem0bench.rundir.directory import RunDirectory

__all__ = ["Rejudger"]


class Rejudger:
    def __init__(
        self,
        *,
        client: LLMClient,
        rundir: RunDirectory,
        judge: JudgeSettings,
        options: RunOptions,
        method_name: str,
        results_subdir: str = "",
    ) -> None:
        """`results_subdir`: see `Attempt` (another judge's figures go to judges/<name>/)."""
        self.attempt = Attempt(
            rundir=rundir, client=client, judge=judge, options=options, method_name=method_name,
            questions={}, results_subdir=results_subdir,
        )  # fmt: skip

    async def run(self) -> RunOutcome:
        attempt = self.attempt
        answers = [a for qid in attempt.order if (a := attempt.answers[qid]).failure is None]
        try:
            await asyncio.gather(*(attempt.judge_all(a) for a in answers))
        finally:
            attempt.close()
        return attempt.finish()
