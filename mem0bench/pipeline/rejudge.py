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
        # The run's own order (predictions.jsonl: the dataset's), not answers.jsonl's (the order answers
        # happened to finish in): the bootstrap's clusters come in this order, so another judge's intervals
        # are the same for the same labels, in a run done whole or merged from shards.
        shown = [
            str(row["qid"])
            for row in rundir.rows("predictions.jsonl")
            if row.get("qid") in self.attempt.answers
        ]
        self.attempt.order = list(dict.fromkeys([*shown, *self.attempt.order]))

    async def run(self) -> RunOutcome:
        attempt = self.attempt
        answers = [a for qid in attempt.order if (a := attempt.answers[qid]).failure is None]
        try:
            await asyncio.gather(*(attempt.judge_all(a) for a in answers))
        finally:
            attempt.close()
        return attempt.finish()
