"""judge-check results beside J: which judge a result measured, and its vague-answer false-accept rate.

`judge-check` writes `judge_check.json` (by default under results/judge-check/<time>_<judge model>/ of the
current folder, as `run` writes results/runs/<time>_<method>/ there). A run's J is only
as good as its judge: when a result exists for the run's judge (same model, prompt and mode), Table 1 shows
the share of deliberately wrong but vague answers that judge accepted next to J.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from mem0bench.report.collect import ReportError, RunSummary

__all__ = ["DEFAULT_DIR", "JudgeCheck", "default_out", "find_judge_checks", "judge_check_for"]

DEFAULT_DIR = Path("results") / "judge-check"
"""Where judge-check writes and `report` looks by default. Relative, so taken from the current folder: the
rule run folders follow (configs/run.yaml's `hydra.run.dir: results/runs/<time>_<method>`, which Hydra
resolves against the folder the command starts in), so one folder's results/ holds both."""
RUN_TIME_FORMAT = "%Y-%m-%d_%H-%M-%S-%f"
"""The time in a run folder's name (`${now:...}` in hydra.run.dir): to the microsecond, so two started in
the same second never share a folder."""


def default_out(judge_model: str, now: datetime | None = None) -> Path:
    """A new judge-check folder: DEFAULT_DIR/<time>_<judge model>, named as run folders are."""
    stamp = (now or datetime.now(UTC)).strftime(RUN_TIME_FORMAT)
    return DEFAULT_DIR / f"{stamp}_{re.sub(r'[^A-Za-z0-9._-]+', '-', judge_model)}"


FILE = "judge_check.json"


@dataclass(frozen=True)
class JudgeCheck:
    path: Path
    model: str
    prompt: str
    mode: str
    finished: str
    vague_rate: float
    vague_ci95: tuple[float, float] | None
    vague_n: int


def _read(path: Path) -> JudgeCheck | None:
    """The file's figures; None for a result without a stress block (made with --no-stress)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        judge = data["judge"]
        vague = (data.get("stress") or {}).get("families", {}).get("vague", {}).get("overall")
    except (OSError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ReportError(f"{path}: not a judge-check result ({exc})") from None
    if not vague or vague.get("rate") is None:
        return None
    ci = vague.get("ci95")
    return JudgeCheck(
        path=path, model=str(judge["model"]), prompt=str(judge["prompt"]), mode=str(judge["mode"]),
        finished=str(data.get("finished") or ""), vague_rate=float(vague["rate"]),
        vague_ci95=(float(ci[0]), float(ci[1])) if ci else None, vague_n=int(vague["n"]),
    )  # fmt: skip


def find_judge_checks(paths: Iterable[Path]) -> list[JudgeCheck]:
    """Every judge_check.json at or below the paths (a missing path is an error; the default folder is
    only searched when it exists)."""
    found = []
    for path in paths:
        if not path.exists():
            raise ReportError(f"{path}: no such file or directory (--judge-check)")
        files = [path] if path.is_file() else sorted(path.rglob(FILE))
        found += [check for check in map(_read, files) if check is not None]
    return found


def judge_check_for(run: RunSummary, checks: Sequence[JudgeCheck]) -> JudgeCheck | None:
    """The newest result for the run's own judge (model, prompt, mode); None for an imported judge."""
    if str(run.metrics.judge_name or "").endswith("(imported)"):
        return None
    model, prompt = run.config.get("judge.model"), run.config.get("judge.prompt")
    mode = run.config.get("judge.mode")
    same = [c for c in checks if (c.model, c.prompt, c.mode) == (model, prompt, mode)]
    return max(same, key=lambda c: (c.finished, str(c.path)), default=None)
