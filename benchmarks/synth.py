"""Deterministic synthetic conversations for speed and scale benchmarks.

Sentences are built from templates over a vocabulary of people, places,
activities and objects, so texts are varied (embeddings spread out, lexical
postings have realistic skew) yet reproducible from a seed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

__all__ = ["DETAIL", "conversation", "sentences", "skeleton"]

PEOPLE = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivo", "Jonas", "Kemi", "Lea", "Mateo",
          "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tova", "Uma", "Viktor", "Wen", "Xavi", "Yara", "Zane"]
PLACES = ["Lisbon", "the lake", "the office", "Kyoto", "the gym", "my parents' house", "the farmers market",
          "the library", "Berlin", "the mountains", "a new cafe", "the beach", "Toronto", "the museum", "the park"]
ACTIVITIES = ["painting", "running", "baking sourdough", "learning Spanish", "rock climbing", "playing chess",
              "gardening", "writing a novel", "cycling", "photography", "yoga", "knitting", "coding a game",
              "volunteering at the shelter", "playing guitar", "bird watching", "pottery", "swimming"]
OBJECTS = ["a blue bicycle", "a vintage camera", "a cast-iron pan", "a puppy named Biscuit", "a used piano",
           "new hiking boots", "a standing desk", "a telescope", "a sewing machine", "an electric kettle",
           "a kayak", "a box of old letters", "a tomato plant", "a drone", "a record player"]
FEELINGS = ["excited", "nervous", "proud", "tired", "curious", "relieved", "grateful", "frustrated", "calm"]
TEMPLATES = [
    "I went to {place} with {person} last {day}.",
    "I've been {activity} every {day} since {month}.",
    "{person} gave me {obj} for my birthday.",
    "I feel {feeling} about {activity} lately.",
    "We're planning a trip to {place} in {month}.",
    "My friend {person} started {activity} and loves it.",
    "I bought {obj} at {place}.",
    "Honestly, {activity} helps me when I feel {feeling}.",
    "Did you know {person} moved to {place}?",
    "The best part of {activity} is meeting people like {person}.",
    "I lost {obj} somewhere near {place}, which made me {feeling}.",
    "Next {day} I'm trying {activity} for the first time.",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "weekend"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


# A detail clause before the final full stop makes texts distinct at every scale (a template sentence
# alone has ~9.5k variants, so 1M sentences would repeat each ~100 times and ingest, which embeds a
# repeated text once, would be flattered). ``skeleton`` strips it again (benchmarks.vectors uses that).
DETAILS = [
    ", around {h}:{m:02d} {ampm}",
    ", for about {n} minutes",
    ", with {p} other people",
    ", on day {d} of the month",
]
#: Matches the detail clause of a synthetic sentence (before its final punctuation).
DETAIL = re.compile(
    r", (?:around \d{1,2}:\d{2} [ap]m|for about \d+ minutes|with \d+ other people|on day \d+ of the month)(?=[.?!]$)"
)


def _detail(rng: random.Random) -> str:
    return rng.choice(DETAILS).format(
        h=rng.randint(1, 12), m=5 * rng.randint(0, 11), ampm=rng.choice(["am", "pm"]), n=rng.randint(5, 180),
        p=rng.randint(2, 60), d=rng.randint(1, 28),
    )


def _sentence(rng: random.Random, detail: bool = True) -> str:
    text = rng.choice(TEMPLATES).format(
        place=rng.choice(PLACES), person=rng.choice(PEOPLE), day=rng.choice(DAYS), month=rng.choice(MONTHS),
        activity=rng.choice(ACTIVITIES), obj=rng.choice(OBJECTS), feeling=rng.choice(FEELINGS),
    )
    return text[:-1] + _detail(rng) + text[-1] if detail else text


def skeleton(text: str) -> str:
    """``text`` without the detail clause of each of its synthetic sentences."""
    return DETAIL.sub("", text) if text.endswith((".", "?", "!")) else text


def sentences(n: int, seed: int = 0, detail: bool = True) -> list[str]:
    """``n`` synthetic sentences (``detail=False``: the bare templates, which repeat)."""
    rng = random.Random(seed)
    return [_sentence(rng, detail) for _ in range(n)]


def conversation(
    n_sentences: int, seed: int = 0, per_add: int = 20, detail: bool = True
) -> Iterator[tuple[str, list[dict]]]:
    """Yield ``(thread, messages)`` adds totalling about ``n_sentences`` sentences.

    Turns alternate user/assistant with 1–4 sentences each; a thread is one
    session of ``per_add`` turns, one day apart.
    """
    rng = random.Random(seed)
    made = 0
    start = datetime(2023, 1, 1, 9, 0, tzinfo=timezone.utc)
    session = 0
    while made < n_sentences:
        msgs = []
        for t in range(per_add):
            k = min(rng.randint(1, 4), n_sentences - made)
            if k <= 0:
                break
            msgs.append({
                "role": "user" if t % 2 == 0 else "assistant",
                "name": "Sam" if t % 2 == 0 else None,
                "content": " ".join(_sentence(rng, detail) for _ in range(k)),
                "at": start + timedelta(days=session, minutes=t),
            })
            made += k
        yield f"session-{session}", msgs
        session += 1
