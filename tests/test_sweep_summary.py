"""The screen a sweep ends with, from the job folders alone (any launcher): status, J and what varied."""

from __future__ import annotations

import json
from pathlib import Path

from mem0bench.cli.sweep_summary import MAX_JOBS_SHOWN, sweep_summary


def _job(
    root: Path, n: int, status: str, overrides: list[str], judge: dict | None = None, reason: str = ""
) -> None:
    folder = root / str(n)
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"status": status, **({"reason": reason} if reason else {})}))
    beat = {
        "pid": 1,
        "host": "h",
        "session": "s",
        "cwd": "/",
        "overrides": overrides,
        "started": "",
        "updated": "",
    }
    (folder / "heartbeat.json").write_text(json.dumps(beat))
    if judge is not None:
        (folder / "metrics.json").write_text(json.dumps({"overall": {"judge": judge}}))


def test_each_job_has_its_status_j_and_what_it_varied(tmp_path):
    shared = ["+exp=rag", "dataset.path=x.json"]
    _job(tmp_path, 0, "complete", [*shared, "method.k=1"], {"mean": 0.5, "std": 0.02, "runs": 3})
    _job(tmp_path, 1, "failed", [*shared, "method.k=2"], reason="ConfigurationError: " + "x" * 200)
    lines = sweep_summary(tmp_path).splitlines()
    assert lines[0] == f"sweep {tmp_path}: 2 jobs, 1 complete, 1 failed"
    assert lines[2].split() == ["0", "complete", "50.00", "±", "2.00", "method.k=1"]
    assert (
        lines[3].split()[:4] == ["1", "failed", "-", "method.k=2"] and "(ConfigurationError: xxx" in lines[3]
    )
    assert len(lines[3]) < 130  # the reason is cut, the screen stays readable
    # A job that failed before its heartbeat: its overrides are unknown, the others' swept values stay.
    (tmp_path / "2").mkdir()
    (tmp_path / "2" / "run.json").write_text(json.dumps({"status": "failed", "reason": "bad override"}))
    lines = sweep_summary(tmp_path).splitlines()
    assert lines[2].split()[-1] == "method.k=1" and lines[4].split()[:3] == ["2", "failed", "-"]
    assert "report" in lines[-1]


def test_a_long_sweep_stays_on_one_screen(tmp_path):
    for n in range(MAX_JOBS_SHOWN + 5):
        _job(tmp_path, n, "complete", [f"method.k={n}"], {"mean": 0.5, "std": None, "runs": 1})
    lines = sweep_summary(tmp_path).splitlines()
    assert len(lines) == MAX_JOBS_SHOWN + 4 and "... and 5 more: python -m mem0bench status" in lines[-2]
    assert sweep_summary(tmp_path / "nothing") == ""
