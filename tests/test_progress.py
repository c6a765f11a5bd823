"""What a person sees while a run works: the ingest bar moves during a single conversation, and the run ETA
counts the stages still to come."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from devtools.e2e import REPO, TEST_KEY, cli_env
from devtools.reliability import run_args, small_sample
from devtools.standin.server import StandinServer
from mem0bench.data import load_dataset
from mem0bench.llm.ledger import UsageLedger
from mem0bench.memory.stream import message_pairs
from mem0bench.pipeline import progress as progress_module
from mem0bench.pipeline.progress import StageProgress
from tests.pty_cli import run_in_pty, screen_lines

INGEST_BAR = re.compile(r"^\s*ingest:\s+\d+%\|[^|]*\|\s*(\d+)/(\d+) \[.*pair/s")


@pytest.mark.slow
def test_ingest_bar_advances_during_one_conversation(tmp_path, locomo_mini):
    """One conversation, Mem0 (two speakers' streams): the bar counts message pairs, not conversations."""
    # All three sessions and a server slower than the bar's refresh: on a fast machine 20 ms replies let the
    # ingestion of the fixture's ~20 pair units outrun the redraws, and the bar only showed 4 states.
    data = small_sample(tmp_path, locomo_mini, sessions=3, questions=3)
    pairs = len(message_pairs(load_dataset(data).conversations[0]))
    args = run_args("mem0", data, tmp_path / "run", "judge.runs=2", "run.progress=true")
    with StandinServer(api_key=TEST_KEY, latency_ms=60) as server:
        code, text = run_in_pty(args, cli_env(server.base_url, tmp_path / "cache"))
    assert code == 0, text[-3000:]
    lines = screen_lines(text)
    ingest = [tuple(map(int, m.groups())) for line in lines if (m := INGEST_BAR.match(line))]
    totals = {total for _, total in ingest}
    assert totals == {2 * pairs}, totals  # message pairs of both speakers' streams
    counts = [done for done, _ in ingest]
    assert counts == sorted(counts), "the bar never goes back"
    between = {done for done in counts if 0 < done < 2 * pairs}
    assert len(between) >= 5, f"the bar jumped instead of moving: {sorted(set(counts))}"
    # While ingesting, the bar keeps the calls/tokens/cost figures, and the run line an ETA for everything
    # left (it is drawn under the bars, so its states interleave with theirs).
    assert any("calls" in line and "tok" in line and "$" in line for line in lines if INGEST_BAR.match(line))
    first_full = next(i for i, line in enumerate(lines) if (m := INGEST_BAR.match(line)) and m[1] == m[2])
    etas = [line for line in lines[:first_full] if line.strip().startswith("run: eta")]
    assert any(
        re.search(r"eta (\d+:)?\d\d:\d\d \(all stages\), calls [\d,]+, paid \$", line) for line in etas
    ), etas
    assert "Traceback" not in text


class _Ledger:
    """Calls per client stage, set by the test."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    @property
    def stages(self) -> dict[str, SimpleNamespace]:
        return {
            name: SimpleNamespace(calls=calls, prompt_tokens=0, completion_tokens=0, cost_usd=0.0)
            for name, calls in self.calls.items()
        }


def test_run_eta_counts_the_stages_still_to_come(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: clock[0])
    ledger = _Ledger()
    progress = StageProgress(
        ledger, {"ingest": 100, "answer": 10, "judge": 30}, enabled=False, stream=io.StringIO()
    )
    # The plan: 4 calls per pair, search + answer 2 calls per question, 1 per label.
    progress.plan({"ingest": 400, "search": 10, "answer": 10, "judge": 30})
    assert progress.run_eta_s() is None  # nothing measured yet
    clock[0] += 10.0
    ledger.calls["ingest"] = 100  # 100 calls in 10 s: 10 calls/s
    progress.advance("ingest", 25)  # 4 calls per pair measured
    # Left: 75 pairs x 4 + 10 questions x 2 + 30 labels x 1 = 350 calls at 10 calls/s; ingestion alone
    # would be 30 s.
    assert progress.run_eta_s() == pytest.approx(35.0)
    snap = progress.snapshot()
    assert snap.done == {"ingest": 25, "answer": 0, "judge": 0} and snap.units["ingest"] == "pair"
    # Once answering moves, its own calls per question replace the plan's figure (3 measured, not 2).
    clock[0] += 10.0
    ledger.calls.update(ingest=400, search=5, answer=10)
    progress.advance("ingest", 75)
    progress.advance("answer", 5)
    # Left: 5 questions x 3 + 30 labels x 1 = 45 calls; rate 415 calls / 20 s.
    assert progress.run_eta_s() == pytest.approx(45 / (415 / 20))


def test_log_lines_carry_the_run_eta(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: clock[0])
    ledger, stream = _Ledger(), io.StringIO()  # not a terminal: plain lines
    progress = StageProgress(ledger, {"ingest": 10, "answer": 2, "judge": 4}, stream=stream, log_every_s=30)
    clock[0] = 31.0
    ledger.calls["ingest"] = 20
    progress.advance("ingest", 5)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("progress ingest: 5/10, calls 20")
    # Left: 5 pairs x 4 calls + 2 questions x 2 + 4 labels x 1 = 28 calls at 20 calls / 31 s.
    assert lines[-1] == "progress run: eta 00:43 (all stages), calls 20, paid $0.0000"


def test_the_bars_count_a_bridged_librarys_calls_and_money(standin):
    """A third-party library's calls come through the bridge under its own ledger stages (usage.json keeps
    them apart); the ingest and answer bars count them, with what they cost, and the run ETA has a rate."""
    from mem0bench.systems.external.bridge import LLMBridge
    from tests.test_systems_bridge import library_client, make_client

    async def main() -> tuple[tuple[int, int, float], tuple[int, int, float], dict[str, object]]:
        client = make_client(standin)
        client.settings = dataclasses.replace(client.settings, price_any_server=True)
        client.ledger = UsageLedger(client.settings.prices)  # priced although the stand-in is local
        progress = StageProgress(
            client.ledger, {"ingest": 4, "answer": 2, "judge": 2}, enabled=False, stream=io.StringIO()
        )
        async with LLMBridge(client) as bridge:
            lib = library_client(bridge, "conv-1")
            messages = [{"role": "user", "content": "Remember that Ann lives in Oslo."}]
            async with bridge.scope("conv-1", stage="somelib_ingest"):
                for _ in range(3):
                    await asyncio.to_thread(lib.chat.completions.create, model="x", messages=messages)
                progress.advance("ingest", 2)
            async with bridge.scope("conv-1", stage="somelib_search"):
                await asyncio.to_thread(lib.embeddings.create, model="x", input=["Where does Ann live?"])
        stages = client.ledger.snapshot()["stages"]
        await client.aclose()
        assert progress.run_eta_s() is not None, "a call rate, so an ETA"
        return progress.usage("ingest"), progress.usage("answer"), stages

    ingest, answer, stages = asyncio.run(main())
    assert set(stages) == {"somelib_ingest", "somelib_search"}  # usage.json's stages are unchanged
    calls, tokens, cost = ingest
    assert calls == 3 and tokens > 0 and cost > 0
    assert answer[0] == 1  # the library's search embedding counts with answering


def test_a_bridge_scope_must_name_a_stage_the_bars_count(standin):
    from mem0bench.systems.external.bridge import LLMBridge
    from tests.test_systems_bridge import make_client

    async def main() -> None:
        client = make_client(standin)
        try:
            async with LLMBridge(client) as bridge:
                with pytest.raises(ValueError, match="_ingest or _search"):
                    async with bridge.scope("r", stage="somelib_answer"):
                        pass
        finally:
            await client.aclose()

    asyncio.run(main())


def test_a_stage_added_late_shows_its_count_and_eta_without_calls(monkeypatch):
    """The isolated latency pass's size is known only after the answers: added then, it counts questions
    (its calls count as search calls, which the answer line shows)."""
    clock = [0.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: clock[0])
    ledger, stream = _Ledger(), io.StringIO()
    progress = StageProgress(ledger, {"answer": 2, "judge": 2}, stream=stream, log_every_s=30)
    ledger.calls["search"] = 7
    progress.add_stage("latency", 4)
    progress.add_stage("latency", 99)  # once only
    assert progress.snapshot().totals == {"answer": 2, "judge": 2, "latency": 4}
    clock[0] = 1.0
    progress.advance("latency", 1)
    clock[0] = 4.0
    progress.advance("latency", 3)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "progress latency: 0/4, eta ?"
    assert lines[-1] == "progress latency: 4/4, eta 00:00"


def test_the_latency_pass_reports_progress(tmp_path, locomo_mini):
    data = small_sample(tmp_path, locomo_mini, sessions=1, questions=3)
    args = run_args("rag", data, tmp_path / "run", "judge.runs=1", "run.progress=true")
    with StandinServer(api_key=TEST_KEY) as server:
        result = subprocess.run(
            [sys.executable, "-m", "mem0bench", *args], cwd=REPO, env=cli_env(server.base_url, tmp_path / "c"),
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    measured = len((tmp_path / "run" / "latency.jsonl").read_text(encoding="utf-8").splitlines())
    assert measured > 0
    lines = result.stderr.splitlines()
    assert f"progress latency: 0/{measured}, eta ?" in lines
    assert any(line.startswith(f"progress latency: {measured}/{measured}, eta ") for line in lines), lines


class _Terminal:
    """Just enough of a terminal for tqdm's bars: text overwrites, \\r, \\n and cursor-up (ESC [ A)."""

    def __init__(self) -> None:
        self.rows: dict[int, list[str]] = {}
        self.row = self.col = 0
        self._seen = 0
        self.stream = io.StringIO()

    def sync(self) -> list[str]:
        """Apply what was written since the last call; the screen's lines, trailing blanks removed."""
        text = self.stream.getvalue()
        new, self._seen = text[self._seen :], len(text)
        for piece in re.split(r"(\x1b\[[0-9;?]*[A-Za-z]|\r|\n)", new):
            if piece == "\r":
                self.col = 0
            elif piece == "\n":
                self.row, self.col = self.row + 1, 0
            elif piece == "\x1b[A":
                self.row = max(self.row - 1, 0)
            elif not piece:
                continue
            elif piece.startswith("\x1b["):
                raise AssertionError(f"escape sequence the test does not emulate: {piece!r}")
            else:
                line = self.rows.setdefault(self.row, [])
                line.extend(" " * (self.col + len(piece) - len(line)))
                line[self.col : self.col + len(piece)] = piece
                self.col += len(piece)
        return ["".join(self.rows.get(r, [])).rstrip() for r in range(max(self.rows, default=-1) + 1)]


def test_a_finished_bar_stays_as_it_finished(monkeypatch):
    """Once a stage is done its bar is frozen: the rate, the elapsed time and the calls it shows no longer
    change while the other stages work, closing redraws it unchanged, and no line keeps stray characters
    of an earlier, longer drawing."""
    import tqdm.std

    clock = [100.0]
    monkeypatch.setattr(tqdm.std, "time", lambda: clock[0])
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: clock[0])
    ledger, term = _Ledger(), _Terminal()
    progress = StageProgress(ledger, {"ingest": 4, "answer": 2}, enabled="always", stream=term.stream)
    for _ in range(4):
        clock[0] += 1.0
        ledger.calls["ingest"] = ledger.calls.get("ingest", 0) + 3
        progress.advance("ingest")
    finished = term.sync()[0]
    assert re.match(r"^\s*ingest: 100%\|.*\| 4/4 \[00:04<00:00, .*calls 12 ", finished), finished
    # Later: the answer stage works for a minute, and calls counted under ingest go on (a library's late
    # bookkeeping); the finished bar must not show any of it.
    for _ in range(2):
        clock[0] += 30.0
        ledger.calls["ingest"] += 5
        ledger.calls["answer"] = ledger.calls.get("answer", 0) + 2
        progress.advance("answer")
        assert term.sync()[0] == finished
    progress.add_stage("latency", 2)
    clock[0] += 30.0
    progress.advance("latency", 2)
    progress.close()
    screen = term.sync()
    assert screen[0] == finished, screen
    assert re.match(r"^\s*answer: 100%\|.*\| 2/2 \[01:04<00:00, .*calls 4 ", screen[1]), screen
    assert re.match(r"^\s*run: eta 00:00 \(all stages\), calls 26, paid \$0\.0000$", screen[2]), screen
    assert re.match(r"^\s*latency: 100%\|.*\| 2/2 \[00:30<00:00, 15.00s/question\]$", screen[3]), screen
    assert len(screen) == 4, screen
