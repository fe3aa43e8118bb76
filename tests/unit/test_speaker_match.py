"""``HybridConfig.speaker_match``: a speaker's name in the question matches what that speaker said.

In this chat Omar keeps addressing Nina by name ("Nina, pets are such a
joy…") while Nina, who owns the cats, never says her own name. Matched as a
word, "Nina" lifts Omar's lines about pets above Nina's answer; with
``speaker_match`` it lifts Nina's own turns; by default the name is left out of
the query's vector and Nina's turns gain by what they say (``speaker_weight``).
Ranks measured with all-MiniLM-L6-v2.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import sgmem

TURNS = [
    ("Omar", "Hey Nina, how was your week?"),
    ("Nina", "Busy! My two cats kept knocking things off the shelves."),
    ("Omar", "Nina, pets are such a joy, even when they make a mess."),
    ("Nina", "True. I also repainted the hallway a soft yellow."),
    ("Omar", "Ha, Nina, I have always wanted pets but my landlord says no."),
    ("Nina", "That's a shame. Maybe a fish tank would be allowed?"),
    ("Omar", "Maybe! Nina, do your pets get along with visitors?"),
    ("Nina", "The older one hides under the bed, the kitten climbs on everyone."),
    ("Omar", "I started a pottery class on Tuesdays, it's relaxing."),
    ("Nina", "Nice, bring me a mug when you get good at it."),
    ("Omar", "Deal, Nina! Talk soon."),
]


def ranks(
    embedder: sgmem.Embedder, speaker_match: float, question: str, speaker_weight: float | None = None
) -> tuple[list[str], list[str]]:
    """(message ids, speakers) of every turn, ranked for ``question``."""
    base = sgmem.Config(min_relevance=0.0)  # ranks are read to the end: no relevance cutoff
    named = {} if speaker_weight is None else {"speaker_weight": speaker_weight}
    cfg = base.with_(hybrid=dataclasses.replace(base.hybrid, speaker_match=speaker_match, **named))
    msgs = [
        {"role": "user" if s == "Omar" else "assistant", "name": s, "content": t, "id": f"t{i + 1}"}
        for i, (s, t) in enumerate(TURNS)
    ]
    with sgmem.Memory(embedder=embedder, config=cfg) as mem:
        mem.add(msgs, scope="s", thread="t", at=datetime(2024, 5, 1, tzinfo=timezone.utc))
        hits = mem.search(question, scope="s", k=len(TURNS))
    return [h.message_ids[0] for h in hits], [str(h.speaker) for h in hits]


def test_a_speakers_name_finds_what_she_said_not_what_was_said_to_her(embedder: sgmem.Embedder) -> None:
    ids, _ = ranks(embedder, 1.0, "What pets does Nina have?")
    assert ids.index("t2") < 2
    ids, who = ranks(embedder, 1.0, "Which animals live with Nina?")
    assert who[:3] == ["Nina"] * 3 and {"t2", "t8"} <= set(ids[:3])  # Omar's "Nina, … pets" lines after hers


def test_by_default_the_named_speakers_own_turns_come_first(embedder: sgmem.Embedder) -> None:
    """The default needs no speaker_match: the query's vector leaves the name out and the named speaker's turns
    gain by what they say (``speaker_weight``); without both, Omar's lines that say "Nina" come first."""
    assert sgmem.HybridConfig().speaker_match == 0.0
    ids, who = ranks(embedder, 0.0, "What pets does Nina have?")
    assert who[:2] == ["Nina"] * 2 and {"t2", "t8"} == set(ids[:2])
    ids, who = ranks(embedder, 0.0, "What pets does Nina have?", speaker_weight=0.0)
    assert who[:2] == ["Omar"] * 2  # "Nina, pets are such a joy…" and "Ha, Nina, I have always wanted pets…"
