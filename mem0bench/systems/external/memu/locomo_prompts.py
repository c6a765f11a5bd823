"""memU's LOCOMO memory prompts in our words: each says what memU's own prompt instructs (the same numbered
rules, the same inputs, the same reply format and JSON keys), none of its sentences. Theirs are the files of
NevaMind-AI/memU at commit 44ef388, `scripts/evals/locomo/prompts/` (`FILES` names them); their harness,
which produced memU's published 92.09% on LOCOMO, read each with `.strip()` and filled it with `str.format`.

`method.prompts_dir` runs memU's own files instead (a checkout's `scripts/evals/locomo/prompts/`): `load`
reads and checks them, in the adapter before any work and again in the service. memU's answer prompt
(`generate_answer.txt`) is not here: the harness answers (answer.prompt=memu, our wording of it).

Standard library only: imported by the service in memU's venv (its own folder is on its path) and by the
adapter and its cost plan.
"""

from __future__ import annotations

import string
from pathlib import Path

__all__ = [
    "CHECK_CONTENT",
    "CHECK_EVENTS",
    "EVENTS",
    "FIELDS",
    "FILES",
    "NEW_QUERY",
    "OURS",
    "REFINE_EVENTS",
    "PromptsError",
    "fields_of",
    "load",
]

# Ours for analyze_session_for_events.txt: a speaker's new events in one session.
EVENTS = """Task: write down the new events in {character_name}'s life that this conversation session reveals.

Rules:
1. Go through the conversation and find every new event, activity and interaction that concerns {character_name}.
2. Put related material together in coherent, readable paragraphs.
3. Begin every paragraph with the prefix "Mentioned at {session_date}: ".
4. Write only what is new: leave out anything the existing events already hold.
5. Give the particulars: who took part, what happened, when, where and why.
6. Where someone's exact words carry important information, quote them.
7. When {character_name} talks about something that happened before, record it too, phrased like "{character_name} mentioned that ...".
8. Record as well the events of people close to {character_name}, for example parents or children.
9. Keep every time expression as given, exact or relative (such as "last weekend"), rather than turning it into something vague like "recently".
10. Every message must end up in at least one paragraph, except a message that is only a greeting (for example "Hello").

Character:
{character_name}

Session date:
{session_date}

Conversation:
{conversation}

Existing events:
{existing_events}

What the output looks like:
Mentioned at {session_date}: Took the train to the coast with her brother Tom to visit their grandmother, who turned 90 on Saturday. They stayed two nights, and Tom promised to come back for the harvest festival in October.

Mentioned at {session_date}: Started a pottery class at the community centre on Tuesday evenings. Her first bowl cracked in the kiln, but the teacher, Ms. Lee, told her that happens to every beginner.

Notes:
- Write the new event paragraphs and nothing else: no headings, no comments.
- Be exhaustive: every event counts, however small.
- Within the session, keep the order in which things happened.
- Write in the third person throughout.
- Do not reproduce whole sentences of the conversation in the form "{character_name} said '...'" or "..., saying '...'"; quote or copy wording only for key facts and keywords, and only where needed."""

# Ours for check_events_completeness.txt: did the extraction leave out anything about the speaker?
CHECK_EVENTS = """Your job: find out whether the extracted events below leave out anything the conversation says about the speaker.

Speaker: {character_name}

Conversation:
{conversation}

Extracted events:
{extracted_events}

Set the two side by side and decide whether every event about the speaker in the conversation appears in the extracted events.

Check in particular:
1. Is every event involving {character_name} there, even a minor one?
2. Does an event lack an important detail (who, what, when, where, why, how)?
3. Are the events of people close to {character_name}, such as family members, there as well?

Reply with a JSON object with these keys:
- "sufficient": true or false, whether the information is complete
- "missing_info": a string saying exactly what is missing, if anything; you may copy the conversation's own text where the events lack it
- "confidence": a number from 0 to 1, how sure you are of the verdict

JSON reply:"""

# Ours for refine_events_extraction.txt: the extraction again, told what the check found missing.
REFINE_EVENTS = """Task: write down the events in {character_name}'s life that this conversation session reveals.

An earlier attempt at {character_name}'s events left things out; write a fuller set this time.

Rules:
1. Go through the conversation and find every event, activity and interaction that concerns {character_name}.
2. Put related material together in coherent, readable paragraphs.
3. Begin every paragraph with the prefix "Mentioned at {session_date}: ".
4. Give the particulars: who took part, what happened, when, where and why.
5. Where someone's exact words carry important information, quote them.
6. When {character_name} talks about something that happened before, record it too, phrased like "{character_name} mentioned that ...".
7. Record as well the events of people close to {character_name}, for example parents or children.
8. Every message must end up in at least one paragraph, except a message that is only a greeting (for example "Hello").

Character:
{character_name}

Session date:
{session_date}

Conversation:
{conversation}

Earlier attempt:
{previous_extraction}

What it left out:
{missing_info}

What the output looks like:
Mentioned at {session_date}: Took the train to the coast with her brother Tom to visit their grandmother, who turned 90 on Saturday. They stayed two nights, and Tom promised to come back for the harvest festival in October.

Mentioned at {session_date}: Started a pottery class at the community centre on Tuesday evenings. Her first bowl cracked in the kiln, but the teacher, Ms. Lee, told her that happens to every beginner.

Notes:
- Write the event paragraphs and nothing else: no headings, no comments.
- Be exhaustive: every event counts, however small.
- Within the session, keep the order in which things happened.
- Write in the third person throughout.
- Do not reproduce whole sentences of the conversation in the form "{character_name} said '...'" or "..., saying '...'"; quote or copy wording only for key facts and keywords, and only where needed.
- Paragraphs of the earlier attempt that are correct and lack nothing may be kept as they are.
- Above all, make sure that what it left out is in your answer."""

# Ours for check_content_sufficiency.txt: is what the search found enough to answer?
CHECK_CONTENT = """Your job: decide whether the information below is enough for answering a question.

Question: {question}

Information found:
{current_content}

Judge whether this information allows a complete and correct answer to the question.

Reply with a JSON object with these keys:
- "sufficient": true or false, whether the information is enough
- "missing_info": a string saying exactly what is missing, if anything
- "confidence": a number from 0 to 1, how sure you are of the verdict

JSON reply:"""

# Ours for generate_new_query.txt: the next round's search query, aimed at what is missing.
NEW_QUERY = """Your job: write a new search query that finds the information still missing.

Question asked: {original_question}
Still missing: {missing_info}

Start of what the search found so far:
{current_content}...

Write a query aimed at the missing information, one that would bring up what the question needs.

The query should:
- target the missing information
- contain precise search words likely to occur in the relevant events or profile entries
- be short, yet cover what is needed

Reply with a JSON object with these keys:
- "new_query": a string, the new search query
- "keywords": an array of strings, its main search words
- "reasoning": a string, how this query would reach what is missing

JSON reply:"""

OURS = {
    "EVENTS": EVENTS,
    "CHECK_EVENTS": CHECK_EVENTS,
    "REFINE_EVENTS": REFINE_EVENTS,
    "CHECK_CONTENT": CHECK_CONTENT,
    "NEW_QUERY": NEW_QUERY,
}
FILES = {
    "EVENTS": "analyze_session_for_events.txt",
    "CHECK_EVENTS": "check_events_completeness.txt",
    "REFINE_EVENTS": "refine_events_extraction.txt",
    "CHECK_CONTENT": "check_content_sufficiency.txt",
    "NEW_QUERY": "generate_new_query.txt",
}
"""memU's file (at 44ef388) for each prompt."""
FIELDS = {
    "EVENTS": frozenset({"character_name", "session_date", "conversation", "existing_events"}),
    "CHECK_EVENTS": frozenset({"character_name", "conversation", "extracted_events"}),
    "REFINE_EVENTS": frozenset(
        {"character_name", "session_date", "conversation", "previous_extraction", "missing_info"}
    ),
    "CHECK_CONTENT": frozenset({"question", "current_content"}),
    "NEW_QUERY": frozenset({"original_question", "missing_info", "current_content"}),
}
"""The fields the service fills in each prompt, by name, as memU's scripts did."""


class PromptsError(ValueError):
    """A prompts folder that cannot stand in for ours (one line naming the folder and the file)."""


def fields_of(text: str) -> frozenset[str]:
    """The named fields `str.format` fills in `text`; ValueError for a stray brace or a positional field."""
    found = set()
    for _, name, _, _ in string.Formatter().parse(text):
        if name is None:
            continue
        if not name.isidentifier():
            raise ValueError(f"field {{{name}}} is not a name the service fills")
        found.add(name)
    return frozenset(found)


def load(folder: str | Path) -> dict[str, str]:
    """memU's own prompt files in `folder`, each read as their loader did (UTF-8, `.strip()`), checked to
    hold exactly the fields the service fills (a different set is another version of the files)."""
    where = Path(folder).expanduser()
    texts = {}
    for key, name in FILES.items():
        path = where / name
        try:
            text = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise PromptsError(
                f"method.prompts_dir={folder}: no {name} in it (memU's prompt files)"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise PromptsError(f"method.prompts_dir={folder}: cannot read {name} ({exc})") from None
        try:
            found = fields_of(text)
        except ValueError as exc:
            raise PromptsError(f"method.prompts_dir={folder}: {name}: {exc}") from None
        if found != FIELDS[key]:
            shown = ", ".join("{" + f + "}" for f in sorted(found)) or "none"
            wanted = ", ".join("{" + f + "}" for f in sorted(FIELDS[key]))
            raise PromptsError(
                f"method.prompts_dir={folder}: {name} has the fields {shown}; the service fills {wanted}"
            )
        texts[key] = text
    return texts
