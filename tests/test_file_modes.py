"""Every file of a run directory gets the same permissions: those of an ordinary new file under the
process's umask (before, atomically written files were 0600 and appended ones 0644)."""

from __future__ import annotations

import json
import stat
import subprocess
import sys

from devtools.e2e import REPO

SCRIPT = """
import json, os, stat, sys
os.umask(0o027)
from pathlib import Path
from mem0bench.rundir.directory import RunDirectory, write_json
run = RunDirectory(Path(sys.argv[1]))
run.start(config_yaml="a: 1\\n", method="rag", dataset_path="x", dataset_sha256="y")
run.appender("answers.jsonl").append({"qid": "q"})
run.rewrite("predictions.jsonl", [{"qid": "q"}])
write_json(run.file("metrics.json"), {})
run.finish("complete")
run.close()
print(json.dumps({p.name: stat.S_IMODE(p.stat().st_mode) for p in Path(sys.argv[1]).iterdir()}))
"""


def test_run_files_share_one_mode(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "run")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    modes = json.loads(out.stdout)
    assert set(modes) == {"run.json", "config.yaml", "answers.jsonl", "predictions.jsonl", "metrics.json"}
    assert set(modes.values()) == {0o640}, {k: oct(v) for k, v in modes.items()}
    assert all(v & stat.S_IRGRP for v in modes.values())
