"""`mem0bench import FILE --out RUN_DIR [dataset=SUITE ...]`: another system's published answers as a run
directory.

The answers are scored with our F1, BLEU-1 and LOCOMO F1 against LOCOMO's gold (or `--answer-key`); a
judge field in the file becomes one run of an imported judge, kept apart from ours (its signature is
`imported:<system>`). `report`, `compare` and `judge` then treat the folder like any other run;
`python -m mem0bench judge RUN_DIR` judges the same answers with our judge.

Other suites (config overrides after the file, as for `run`): `dataset=longmemeval_s dataset.path=FILE`
reads LongMemEval's hypothesis JSONL ({question_id, hypothesis}, optionally its judge's `autoeval_label`),
`dataset=locomo_plus` the output of Locomo-Plus's evaluation framework (its judge_label graded 1 / 0.5 /
0): `importing/imported_suites.py`. A folder imports as one run: Backboard's one file per conversation, or
LongMemEval's hypotheses file beside a labels file ({question_id, question_type, correct}). With no
LongMemEval file at hand, a file carrying question types and labels is scored on its own (nothing matched).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mem0bench.cli.errors import describe_hydra_error, report_errors
from mem0bench.cli.examples import with_examples
from mem0bench.common.errors import ConfigurationError


def import_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mem0bench import", description=__doc__.split("\n")[0], **with_examples("import")
    )
    parser.add_argument(
        "file", type=Path,
        help="JSON object of conversations, JSON list or JSONL of records, or a folder of such files (one run)",
    )  # fmt: skip
    parser.add_argument("overrides", nargs="*", help="config overrides such as dataset=longmemeval_s")
    parser.add_argument("--out", required=True, type=Path, help="the run directory to create")
    parser.add_argument("--dataset", help="the LOCOMO file (default: the config's dataset.path)")
    parser.add_argument(
        "--fields", help="ROLE=FIELD,... for question, prediction, gold, category, judge, conversation"
    )
    parser.add_argument("--system", help="the system's name in tables (default: the file's stem)")
    parser.add_argument("--answer-key", help="score against this answer key instead of LOCOMO's gold")
    parser.add_argument("--bootstrap-replicates", type=int, default=2000, help="for the 95%% intervals")
    parser.add_argument("--include-adversarial", action="store_true", help="match category 5 questions too")
    args = parser.parse_intermixed_args(argv)
    return report_errors(lambda: _import(args))


def _import(args: argparse.Namespace) -> int:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from mem0bench.cli.config import plain
    from mem0bench.cli.run import CONFIG_DIR
    from mem0bench.importing.import_run import write_imported_run
    from mem0bench.importing.imported import parse_fields
    from mem0bench.importing.match_file import match_file, source_sha256
    from mem0bench.pipeline.experiment import public_config
    from mem0bench.pipeline.spec import ExperimentSpec
    from mem0bench.pipeline.statistics import BootstrapSettings
    from mem0bench.rundir.directory import RunDirectory
    from mem0bench.rundir.status import RunState

    if args.out.exists() and any(args.out.iterdir()):
        raise ConfigurationError(f"{args.out} exists and is not empty: import into a new folder")
    try:
        fields = parse_fields(args.fields)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    system = args.system or args.file.stem
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        overrides = [f"method.name={system}", *args.overrides]
        if args.dataset:
            overrides.append(f"dataset.path={Path(args.dataset).resolve()}")
        if args.answer_key:
            overrides.append(f"dataset.answer_key={Path(args.answer_key).resolve()}")
        try:
            cfg = compose(config_name="run", overrides=overrides)
        except Exception as exc:  # Hydra raises several types for a bad override
            raise ConfigurationError(describe_hydra_error(exc)) from None
    resolved = plain(cfg)
    scope = ExperimentSpec.from_mapping(resolved).scope
    suite, dataset, result = match_file(
        args.file, scope, fields, answer_key=args.answer_key, include_adversarial=args.include_adversarial
    )
    config = public_config(resolved)
    # The method block describes where the answers came from: there is no system to instantiate.
    config["method"] = {"name": system, "imported_file": str(args.file.resolve())}
    rundir = RunDirectory(args.out)
    rundir.start(
        config_yaml=OmegaConf.to_yaml(OmegaConf.create(config)),
        method=system, dataset_path=dataset.path, dataset_sha256=dataset.sha256,
    )  # fmt: skip
    metrics = write_imported_run(
        rundir, result, system, BootstrapSettings(args.bootstrap_replicates), gold=bool(dataset.sha256)
    )
    file_sha = source_sha256(args.file)
    rundir.finish(RunState.COMPLETE, imported={"file": str(args.file), "sha256": file_sha, **result.counts})
    rundir.close()
    for line in [*result.problems, *result.notes]:
        print(line)
    counts = result.counts
    print(
        f"imported {counts['matched']} of {counts['records']} records from {args.file} into {args.out}: "
        f"{counts['unmatched']} unmatched, {counts['ambiguous']} ambiguous, {counts['duplicate']} duplicate, "
        f"{counts['gold_differs']} gold differs, {counts['category_differs']} category differs, "
        f"{counts['bad_judge']} bad judge value; {counts['missing']} {suite.title} questions without a record"
        + (f"; {counts['other_suite']} records of another suite skipped" if counts.get("other_suite") else "")
    )
    judge = metrics["overall"]["judge"]
    labelled = sum(1 for a in result.answers if any(v is not None for v in a.labels))
    if judge and judge.get("mean") is not None:
        runs = judge.get("per_run") or []
        # The spread as the reference harnesses give it (mem0's, EverMemOS's: the population deviation),
        # so "92.62 ± 0.13" in a paper reads against the same number here.
        spread = (
            f" ± {100 * judge['std']:.2f} (population std over {len(runs)} runs: "
            f"{' / '.join(f'{100 * v:.2f}' for v in runs if v is not None)})"
            if len(runs) > 1 and judge.get("std") is not None
            else ""
        )
        print(
            f"imported judge ({system}): J = {100 * judge['mean']:.2f}%{spread} over {labelled} labelled answers"
        )
    overall = metrics["overall"]
    # LongMemEval's three figures, as its print_qa_metrics.py gives them
    names = (
        ("overall", "lme_overall"),
        ("task-averaged", "lme_task_averaged"),
        ("abstention", "lme_abstention"),
    )
    figures = [f"{name} {100 * overall[key]:.2f}" for name, key in names if overall.get(key) is not None]
    if figures:
        print("LongMemEval: " + ", ".join(figures))
    if overall.get("f1") is None:  # no reference answer (Locomo-Plus): the lexical scores do not apply
        print("F1 n/a, BLEU-1 n/a (no reference answer)")
    else:
        print(f"F1 {100 * overall['f1']:.2f}, BLEU-1 {100 * overall['bleu1']:.2f} (ours)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(import_main(sys.argv[1:]))
