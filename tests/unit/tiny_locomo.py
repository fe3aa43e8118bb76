"""Tiny LoCoMo-shaped conversations for the evaluation tests (chat conditions, nested cross-validation)."""

from __future__ import annotations

from datetime import datetime, timezone

from sgmem.eval.locomo import Conversation, Question

T0 = datetime(2023, 5, 1, 10, 0, tzinfo=timezone.utc)


def make_conv(sample: str, lines: list[tuple[str, str]], questions: list[Question]) -> Conversation:
    msgs = [
        {"role": "user" if who == "Mia" else "assistant", "name": who, "content": text, "id": f"D1:{i}", "at": T0}
        for i, (who, text) in enumerate(lines, start=1)
    ]
    return Conversation(sample, [("session_1", T0, msgs)], questions)


#: two short conversations of Mia and Leo, each with questions whose evidence is one turn
CONVS = [
    make_conv(
        "a",
        [
            ("Mia", "Hi Leo!"),
            ("Leo", "Hey Mia, how was your week?"),
            ("Mia", "Busy. I started volunteering at the animal shelter on Saturdays."),
            ("Leo", "That's great!"),
            ("Mia", "My brother Sam moved to Toronto for his engineering job."),
            ("Leo", "Wow, Canada! I just bought a red kayak for the summer."),
        ],
        [
            Question("Where does Mia volunteer?", 4, ["D1:3"], "at the animal shelter"),
            Question("Where did Sam move?", 4, ["D1:5"], "Toronto"),
            Question("What did Leo buy?", 4, ["D1:6"], "a red kayak"),
        ],
    ),
    make_conv(
        "b",
        [
            ("Mia", "Hello!"),
            ("Leo", "I adopted a beagle puppy named Biscuit last month."),
            ("Mia", "Cute! I signed up for a pottery class on Tuesdays."),
            ("Leo", "Nice."),
            ("Mia", "My grandmother taught me to bake sourdough bread."),
        ],
        [
            Question("What is the name of Leo's puppy?", 4, ["D1:2"], "Biscuit"),
            Question("When is Mia's pottery class?", 2, ["D1:3"], "Tuesdays"),
            Question("Who taught Mia to bake bread?", 1, ["D1:5"], "her grandmother"),
        ],
    ),
]
