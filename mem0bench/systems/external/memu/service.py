"""memU as its authors ran LOCOMO, behind the HTTP system protocol (docs/http_system.openapi.yaml), run by
the harness in memU's own virtual environment (mem0bench.systems.external.memu.env): this file imports
nothing of mem0bench, only the standard library, the pinned memu-py 0.1.7, its sibling `locomo_prompts`
and the service kit (own_env/kit, on its PYTHONPATH).

The published 92.09% came from NevaMind-AI/memU's `scripts/evals/locomo/` (commit 44ef388; its result.json
at 6941e9a): a memory agent (`mem_agent.py`) and a response agent (`response_agent.py`) written for the
benchmark on memu's LLM and embedding clients. Their steps are reproduced here, with their settings and
scoring, and their prompts in our words (`locomo_prompts`) or, with `prompts_dir`, their own files:

Ingestion, one session at a time in order, for each speaker (`MemAgent.update_character_memory`): the
session as `"<speaker>: <text>"` lines (a shared image's caption first as `"(<speaker> shares <caption>.)"`,
their `--use-image` default), an event extraction (temperature 0.3, with the session's date, "None" as the
existing events), then up to `max_iterations` (3) rounds of a completeness check (0.1, JSON) and, when it
finds the events incomplete, a refined extraction (0.3) naming what was missing. The events are appended to
the speaker's events (kept here per session, so a session sent again replaces itself). Each event line is
embedded once (their answer run's `cache_events_semantic`; here at ingestion, under the ingest stage).

Search (`ResponseAgent.answer_question`, up to `max_rounds` (3) rounds): both speakers' event lines scored by
0.3 x a string match + 0.3 x BM25 (on the question's keywords) + 2.0 x the cosine of the round's query
(embedded), the round's top 25, 15, 15; after each round an LLM judges whether what was found suffices (0.1,
JSON) and, if not, writes the next query (0.2, JSON). The items are the events found, deduplicated, in the
order found; the adapter renders them as memU's answer context ("RELEVANT EVENTS:").

A memU client reports a failed call as `success=False` and the scripts went on (a failed check counted as
"complete"); here a failed call (after the harness's retries) fails the request, so the harness records it.
The bridge scope a request names (`X-Mem0bench-Scope`) is sent with the calls it causes (a thread-local:
each request is served in its own thread, and a session's two speakers in two more).
"""

from __future__ import annotations

import array
import base64
import difflib
import hashlib
import json
import math
import re
import shutil
import threading
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import quote

import locomo_prompts as prompts  # type: ignore[import-not-found]
from service_kit import SCOPE_HEADER, read_settings, serve  # type: ignore[import-not-found]

_scope = threading.local()
STOP_WORDS = {
    "what", "where", "when", "who", "why", "how", "is", "are", "was", "were", "do", "does", "did", "can",
    "could", "would", "should", "about", "the", "a", "an", "and", "or", "but", "in", "on", "at", "to", "for",
    "of", "with",
}  # fmt: skip


def _stamp(request: Any) -> None:
    token = getattr(_scope, "token", None)
    if token:
        request.headers[SCOPE_HEADER] = token


def _json_reply(content: str) -> dict[str, Any] | None:
    """The scripts' reading of a JSON reply: fences stripped, then json.loads; None when it is not JSON."""
    text = content.strip()
    if text.startswith("```json"):
        text = text.replace("```json", "").replace("```", "").strip()
    elif text.startswith("```"):
        text = text.replace("```", "").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _said_sufficient(content: str) -> bool:
    """The scripts' fallback for a reply that is not JSON."""
    lower = content.lower()
    return "sufficient" in lower and "true" in lower


class Conversation:
    """One conversation's memory: per speaker and session the extracted events, and each event line's
    embedding, in its folder; memu's clients routed to the bridge."""

    def __init__(
        self, settings: dict[str, Any], conversation: str, folder: Path, texts: dict[str, str]
    ) -> None:
        import httpx2  # openai 3.x's HTTP library
        from memu.llm import OpenAIClient  # type: ignore[import-not-found]
        from memu.memory.embeddings import EmbeddingClient  # type: ignore[import-not-found]
        from openai import OpenAI

        self.settings, self.folder, self.prompts = settings, folder, texts
        self.lock = threading.Lock()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        route = settings["bridge_base"] + quote(conversation, safe="") + "/v1"
        key = settings["bridge_key"]
        # memu makes its OpenAI clients itself; ours reach the bridge, stamp the scope and wait as long as
        # the bridge needs (its retries).
        client = OpenAI(api_key=key, base_url=route, max_retries=0,
                        http_client=httpx2.Client(timeout=900.0, event_hooks={"request": [_stamp]}))  # fmt: skip
        self.llm = OpenAIClient(api_key=key, base_url=route, model=settings["model"])
        self.llm._client = client
        self.embedder = EmbeddingClient("openai", api_key=key, model=settings["embedding_model"])
        self.embedder.client = client
        self.vectors: dict[str, list[float]] = self._load_vectors()
        self.round_top_k = [int(k) for k in settings["round_top_k"]]  # response_agent.py's (25, 15, 15, ...)

    # ---- storage ------------------------------------------------------------------------------------------

    def _events_file(self, speaker: int, session: int) -> Path:
        return self.folder / f"events_{speaker}_{session:04d}.txt"

    def speakers(self) -> list[str]:
        saved = self.folder / "speakers.json"
        return list(json.loads(saved.read_text(encoding="utf-8"))) if saved.is_file() else []

    def events(self, speaker: int) -> list[str]:
        """A speaker's event lines, sessions in order (`_get_character_events`: lines, stripped, non-empty)."""
        lines: list[str] = []
        for path in sorted(self.folder.glob(f"events_{speaker}_*.txt")):
            lines += [line.strip() for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
        return lines

    def _load_vectors(self) -> dict[str, list[float]]:
        path = self.folder / "vectors.jsonl"
        found: dict[str, list[float]] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    found[row["text"]] = array.array("f", base64.b64decode(row["vector"])).tolist()
                except (ValueError, KeyError, TypeError):
                    continue  # a line torn by a kill: that event is embedded again
        return found

    def vector(self, text: str) -> list[float]:
        """An event's embedding (memu's `embed`: one call a text), made once and kept on disk."""
        with self.lock:
            known = self.vectors.get(text)
        if known is not None:
            return known
        vector = [float(x) for x in self.embedder.embed(text)]
        packed = base64.b64encode(array.array("f", vector).tobytes()).decode("ascii")
        with self.lock:
            self.vectors[text] = vector
            with (self.folder / "vectors.jsonl").open("a", encoding="utf-8") as out:
                out.write(json.dumps({"text": text, "vector": packed}) + "\n")
        return vector

    # ---- LLM ----------------------------------------------------------------------------------------------

    def chat(self, prompt: str, max_tokens: int, temperature: float) -> str:
        reply = self.llm.chat_completion(
            [{"role": "user", "content": prompt}], max_tokens=max_tokens, temperature=temperature
        )
        if not reply.success:
            raise RuntimeError(f"memU's LLM call failed: {reply.error}")
        return str(reply.content or "")

    # ---- ingestion (mem_agent.py) ---------------------------------------------------------------------------

    def add_session(
        self, number: int, body: dict[str, Any], pool: ThreadPoolExecutor, scope: str | None
    ) -> None:
        speakers = list(body["speakers"])
        (self.folder / "speakers.json").write_text(json.dumps(speakers), encoding="utf-8")
        conversation = ""
        for turn in body["turns"]:
            speaker, text, caption = turn["speaker"], turn["text"], turn.get("caption")
            # their --use-image (default true): the caption first, unless the dataset folded it in already
            if self.settings["captions"] and caption and caption.strip() not in text:
                conversation += f"({speaker} shares {caption}.)\n"
            conversation += f"{speaker}: {text}\n"
        jobs = [
            pool.submit(self._speaker_session, position, speaker, number, conversation, body["date"], scope)
            for position, speaker in enumerate(speakers)
        ]
        for job in jobs:
            job.result()

    def _speaker_session(
        self, position: int, name: str, number: int, conversation: str, date: str, scope: str | None
    ) -> None:
        _scope.token = scope
        try:
            events = self._extract(name, conversation, date)
            path = self._events_file(position, number)
            if events.strip():
                path.write_text(events, encoding="utf-8")
            else:
                path.unlink(missing_ok=True)  # their "No events extracted": nothing appended
            for line in events.split("\n"):
                if line.strip():
                    self.vector(line.strip())
        finally:
            _scope.token = None

    def _extract(self, name: str, conversation: str, date: str) -> str:
        """`update_character_memory`'s loop: extract, check, refine what the check found missing."""
        current = ""
        log: list[dict[str, Any]] = []
        for iteration in range(int(self.settings["max_iterations"])):
            if iteration == 0:
                prompt = self.prompts["EVENTS"].format(
                    character_name=name, conversation=conversation, session_date=date, existing_events="None"
                )
            else:
                missing = log[-1].get("missing_info", "")
                if not missing:
                    missing = "Unknown"
                elif isinstance(missing, list):
                    missing = "\n".join(f"{i + 1}. {info}" for i, info in enumerate(missing))
                prompt = self.prompts["REFINE_EVENTS"].format(
                    character_name=name, conversation=conversation, session_date=date,
                    previous_extraction=log[-1].get("events", ""), missing_info=missing,
                )  # fmt: skip
            current = self.chat(prompt, 4000, 0.3).strip()
            check = self._completeness(name, conversation, current)
            if check.get("sufficient", False):
                break
            log.append({"events": current, "missing_info": check.get("missing_info", "")})
        return current

    def _completeness(self, name: str, conversation: str, events: str) -> dict[str, Any]:
        prompt = self.prompts["CHECK_EVENTS"].format(
            character_name=name, conversation=conversation, extracted_events=events
        )
        content = self.chat(prompt, 1000, 0.1)
        found = _json_reply(content)
        if found is not None:
            return found
        if _said_sufficient(content):
            return {"sufficient": True, "missing_info": "", "confidence": 0.7}
        return {
            "sufficient": False,
            "missing_info": "Could not determine missing information",
            "confidence": 0.5,
        }

    # ---- search (response_agent.py) ------------------------------------------------------------------------

    def search(self, question: str, scope: str | None) -> list[dict[str, Any]]:
        _scope.token = scope
        try:
            return self._answer_rounds(question)
        finally:
            _scope.token = None

    def _answer_rounds(self, question: str) -> list[dict[str, Any]]:
        records = [
            {"character": name, "text": event, "id": f"{name}_e{i}"}
            for position, name in enumerate(self.speakers())
            for i, event in enumerate(self.events(position))
        ]
        contents: list[str] = []
        found: list[dict[str, Any]] = []
        query = question
        rounds = int(self.settings["max_rounds"])
        for iteration in range(rounds):
            for record in self._search(
                query, records, self.round_top_k[min(iteration, len(self.round_top_k) - 1)]
            ):
                found.append(record)
                contents.append(f"Event - {record['character']}: {record['text']}")
            current = "\n".join(contents)
            check = self._sufficiency(question, current)
            if check.get("sufficient", False) or iteration == rounds - 1:
                break
            new = self._new_query(question, check.get("missing_info", ""), current)
            query = new
        seen: set[str] = set()
        items = []
        for record in found:  # `_deduplicate_events`
            key = f"{record['character']}:{record['text'].strip().lower()}"
            if key in seen or not record["text"].strip():
                continue
            seen.add(key)
            items.append(
                {"text": record["text"], "speaker": record["character"], "score": round(record["score"], 6)}
            )
        return items

    def _sufficiency(self, question: str, content: str) -> dict[str, Any]:
        if not content.strip():
            return {"sufficient": False, "missing_info": "No relevant information found", "confidence": 0.0}
        reply = self.chat(
            self.prompts["CHECK_CONTENT"].format(question=question, current_content=content), 500, 0.1
        )
        parsed = _json_reply(reply)
        if parsed is not None:
            return parsed
        if _said_sufficient(reply):
            return {"sufficient": True, "missing_info": "", "confidence": 0.7}
        return {
            "sufficient": False,
            "missing_info": "Could not determine missing information",
            "confidence": 0.5,
        }

    def _new_query(self, question: str, missing: Any, content: str) -> str:
        prompt = self.prompts["NEW_QUERY"].format(
            original_question=question, missing_info=missing, current_content=content[:500]
        )
        reply = self.chat(prompt, 400, 0.2)
        parsed = _json_reply(reply)
        if parsed is not None:  # their `result.get("new_query", "")`: a reply without one searches for ""
            value = parsed.get("new_query", "")
            return "" if value is None else str(value)
        words = re.findall(r"\b\w+\b", str(missing).lower())
        return " ".join(w for w in words if w not in STOP_WORDS and len(w) > 2)

    def _search(self, query: str, records: list[dict[str, Any]], top_k: int) -> list[dict[str, Any]]:
        """`search_character_events_profile` + `_multi_modal_search`: keyword scores on the query's
        keywords, the cosine on the query itself; events with a score above 0, best first."""
        if not records:
            return []
        words = re.findall(r"\b\w+\b", query.lower())
        processed = " ".join(w for w in words if w not in STOP_WORDS and len(w) > 2)
        strings = _string_scores(processed, records)
        bm25 = _bm25_scores(processed, records)
        semantic = self._semantic_scores(query, records)
        scored = []
        for record in records:
            score = 0.3 * strings[record["id"]] + 0.3 * bm25[record["id"]] + 2.0 * semantic[record["id"]]
            if score > 0:
                scored.append({**record, "score": score})
        scored.sort(key=lambda r: r["score"], reverse=True)
        return scored[:top_k]

    def _semantic_scores(self, query: str, records: list[dict[str, Any]]) -> dict[str, float]:
        wanted = self.embedder.embed(query) if query.strip() else []
        if not wanted:  # memu embeds no empty text: their fallback, the share of query words in the event
            words = set(query.lower().split())
            return {
                r["id"]: (len(words & set(r["text"].lower().split())) / len(words) if words else 0.0)
                for r in records
            }
        q_norm = math.sqrt(sum(x * x for x in wanted))
        scores = {}
        for record in records:
            vector = self.vector(record["text"])
            norm = math.sqrt(sum(x * x for x in vector))
            if q_norm > 0 and norm > 0 and len(vector) == len(wanted):
                scores[record["id"]] = max(0.0, sum(a * b for a, b in zip(wanted, vector)) / (q_norm * norm))
            else:
                scores[record["id"]] = 0.0
        return scores


def _string_scores(query: str, records: list[dict[str, Any]]) -> dict[str, float]:
    """`_string_match_search`: word overlap, substrings, fuzzy and best partial word matches."""
    scores = {}
    query_words = set(query.split())
    for record in records:
        text = record["text"].lower()
        event_words = set(text.split())
        overlap = len(query_words & event_words) / len(query_words) if query_words else 0
        substring = sum(1 for w in query_words if w in text) / len(query_words) if query_words else 0
        fuzzy = difflib.SequenceMatcher(None, query, text).ratio()
        partials = [
            max((difflib.SequenceMatcher(None, w, e).ratio() for e in event_words), default=0)
            for w in query_words
        ]
        partial = sum(partials) / len(partials) if partials else 0
        scores[record["id"]] = 0.4 * overlap + 0.3 * substring + 0.2 * fuzzy + 0.1 * partial
    return scores


def _bm25_scores(query: str, records: list[dict[str, Any]]) -> dict[str, float]:
    """`_bm25_search` (k1 1.2, b 0.75, divided by the query's length, then by the best score)."""
    k1, b = 1.2, 0.75
    tokens = [r["text"].lower().split() for r in records]
    total = len(records)
    lengths = [len(t) for t in tokens]
    average = sum(lengths) / total if total else 0
    frequency: dict[str, int] = defaultdict(int)
    for doc in tokens:
        for term in set(doc):
            frequency[term] += 1
    terms = query.split()
    scores = {}
    for record, doc, length in zip(records, tokens, lengths):
        counts = Counter(doc)
        score = 0.0
        for term in terms:
            if term in counts:
                tf, df = counts[term], frequency[term]
                idf = math.log((total - df + 0.5) / (df + 0.5)) if df > 0 else 0
                score += idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * (length / average)))
        scores[record["id"]] = max(0, score / len(terms) if terms else 0)
    best = max(scores.values(), default=0)
    if best > 0:
        scores = {k: v / best for k, v in scores.items()}
    return scores


def prompt_texts(settings: dict[str, Any]) -> dict[str, str]:
    """The memory prompts: memU's own files when `prompts_dir` names their folder (read as their loader read
    them), else ours."""
    folder = settings.get("prompts_dir")
    return prompts.load(folder) if folder else dict(prompts.OURS)


class Service:
    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.data = Path(settings["data_dir"])
        self.conversations: dict[str, Conversation] = {}
        self.lock = threading.Lock()
        self.pool = ThreadPoolExecutor(max_workers=max(2, int(settings.get("workers", 8))))
        self.prompts = prompt_texts(settings)

    def folder(self, conversation: str) -> Path:
        return self.data / hashlib.sha256(conversation.encode()).hexdigest()[:16]

    def conversation(self, conversation: str) -> Conversation:
        with self.lock:
            if conversation not in self.conversations:
                self.conversations[conversation] = Conversation(
                    self.settings, conversation, self.folder(conversation), self.prompts
                )
            return self.conversations[conversation]

    def delete(self, conversation: str) -> None:
        with self.lock:
            self.conversations.pop(conversation, None)
        shutil.rmtree(self.folder(conversation), ignore_errors=True)

    def put_session(self, conversation: str, number: int, body: dict[str, Any], scope: str | None) -> None:
        self.conversation(conversation).add_session(number, body, self.pool, scope)

    def search(self, conversation: str, body: dict[str, Any], scope: str | None) -> list[dict[str, Any]]:
        return self.conversation(conversation).search(str(body["question"]), scope)


def main() -> None:
    settings = read_settings()
    data = Path(settings["data_dir"])
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    # memu loads the first `.env` of the working folder or its parents at import (a checkout's would bring
    # the user's keys into this process): an empty one here, the service's own folder, is found first.
    (Path.cwd() / ".env").touch(exist_ok=True)
    import memu  # type: ignore[import-not-found]  # noqa: F401 - a venv that cannot import it fails here, before the port is announced

    serve(settings, Service, "memu", version("memu-py"))


if __name__ == "__main__":
    main()
