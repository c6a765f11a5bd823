"""A tiny LOCOMO-format file for tests that need a dataset but not LOCOMO's content.

Two conversations, two sessions each, a handful of turns (one with an image caption) and questions in
every category, evidence included, so every stage of every experiment has something to do in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _turn(speaker: str, dia_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


def _conversation(sample_id: str, a: str, b: str, topic: str, city: str) -> dict[str, Any]:
    conversation = {
        "speaker_a": a,
        "speaker_b": b,
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            _turn(a, "D1:1", f"Hi {b}! I started learning {topic} last week."),
            _turn(b, "D1:2", f"That is great, {a}. I moved to {city} yesterday."),
            _turn(a, "D1:3", f"Welcome to {city}! My sister lives there too."),
            _turn(
                b,
                "D1:4",
                "Thanks. Look at my new flat.",
                blip_caption="a photo of a small flat with a red sofa",
            ),
        ],
        "session_2_date_time": "10:15 am on 20 June, 2023",
        "session_2": [
            _turn(b, "D2:1", f"I joined a {topic} club in {city} on Saturday."),
            _turn(a, "D2:2", "Nice! I adopted a cat named Pixel."),
            _turn(b, "D2:3", "Pixel is a lovely name. What colour is she?"),
            _turn(a, "D2:4", "She is grey with white paws."),
        ],
    }
    qa = [
        {"question": f"Where did {b} move to?", "answer": city, "evidence": ["D1:2"], "category": 4},
        {
            "question": f"When did {b} move to {city}?",
            "answer": "7 May 2023",
            "evidence": ["D1:2"],
            "category": 2,
        },
        {"question": f"What did {a} start learning?", "answer": topic, "evidence": ["D1:1"], "category": 4},
        {
            "question": f"What club did {b} join, and where?",
            "answer": f"a {topic} club, {city}",
            "evidence": ["D2:1", "D1:2"],
            "category": 1,
        },
        {
            "question": f"Would {a} like animals?",
            "answer": "yes; has a cat",
            "evidence": ["D2:2"],
            "category": 3,
        },
        {
            "question": f"What is the name of {a}'s cat?",
            "answer": "Pixel",
            "evidence": ["D2:2"],
            "category": 4,
        },
        {
            "question": f"What is the name of {b}'s dog?",
            "adversarial_answer": "Pixel",
            "evidence": ["D2:2"],
            "category": 5,
        },
    ]
    return {"sample_id": sample_id, "conversation": conversation, "qa": qa}


def write_tiny_locomo(path: Path) -> Path:
    """Write the file and return its path."""
    data = [
        _conversation("tiny-1", "Ana", "Ben", "pottery", "Lisbon"),
        _conversation("tiny-2", "Cleo", "Dev", "chess", "Oslo"),
    ]
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path
