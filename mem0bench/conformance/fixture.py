"""The check's conversation: three short sessions between two people, and questions whose answers are
stated plainly in one turn, so any working memory finds something for them."""

from __future__ import annotations

from datetime import datetime

from mem0bench.data.loader import fold_caption
from mem0bench.data.model import Conversation, Dataset, Question, Session, Turn
from mem0bench.suites.locomo import SINGLE_HOP, TEMPORAL

__all__ = ["EVIDENT", "fixture"]

SAMPLE = "check-1"
_SESSIONS = (
    (
        "2:10 pm on 3 March, 2024",
        datetime(2024, 3, 3, 14, 10),
        (
            ("Mia", "Hi Leo! Guess what, I adopted a puppy last weekend."),
            ("Leo", "No way! What is the puppy called?"),
            ("Mia", "His name is Biscuit, he is a golden retriever."),
            ("Leo", "Biscuit is a great name for a golden retriever."),
        ),
    ),
    (
        "9:30 am on 17 April, 2024",
        datetime(2024, 4, 17, 9, 30),
        (
            ("Leo", "I finally booked my trip to Lisbon for June."),
            ("Mia", "Lisbon is lovely. Are you going alone?"),
            ("Leo", "With my sister Ana; she wants to see the tram lines."),
            ("Mia", "Take her to the castle too.", "a photo of a castle on a hill above a city"),
        ),
    ),
    (
        "6:45 pm on 2 May, 2024",
        datetime(2024, 5, 2, 18, 45),
        (
            ("Mia", "Biscuit learned to fetch the newspaper this week."),
            ("Leo", "Ha! Does he bring it back in one piece?"),
            ("Mia", "Mostly. I started a pottery class on Tuesdays, by the way."),
            ("Leo", "Pottery sounds relaxing."),
        ),
    ),
)
_QUESTIONS = (
    ("What is the name of Mia's puppy?", "Biscuit", SINGLE_HOP, ("D1:3",)),
    ("Where is Leo travelling in June?", "Lisbon", SINGLE_HOP, ("D2:1",)),
    ("Who is Leo travelling to Lisbon with?", "his sister Ana", SINGLE_HOP, ("D2:3",)),
    ("When did Mia adopt her puppy?", "the weekend before 3 March 2024", TEMPORAL, ("D1:1",)),
)
EVIDENT = 0
"""The question whose context must not be empty (its answer is a whole turn of its own)."""


def fixture() -> Dataset:
    sessions = []
    for n, (date_text, when, turns) in enumerate(_SESSIONS, start=1):
        built = []
        for i, (speaker, text, *caption) in enumerate(turns, start=1):
            shared = caption[0] if caption else None  # folded in as the loader does by default
            text = fold_caption(text, shared) if shared else text
            built.append(Turn(speaker, f"D{n}:{i}", text, shared))
        sessions.append(Session(n, when, date_text, tuple(built)))
    questions = tuple(
        Question(f"{SAMPLE}:q{i}", SAMPLE, i, q, a, category, evidence)
        for i, (q, a, category, evidence) in enumerate(_QUESTIONS)
    )
    conversation = Conversation(SAMPLE, "Mia", "Leo", tuple(sessions), questions)
    return Dataset(path="<check-system fixture>", sha256="", conversations=(conversation,))
