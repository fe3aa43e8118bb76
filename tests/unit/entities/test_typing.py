"""Entity typing on a small hand-written set (tests/data/entity_types.json): the measured accuracy holds.

42 LoCoMo-like chat sentences, six each of people, places, pets, organisations,
works (books, films, games, music, art), events and foods, one named mention
each. The rules find every span; the types come from the stated-type cue words
("my dog Biscuit", "Dr. Patel", "Shelly the turtle") and, for the rest, the
zero-shot embedder typing (sgmem.entities.extract). Measured with MiniLM:
0.905 (38/42; 0.738 before the cue words); this test keeps it from sliding.
"""

from __future__ import annotations

import json
from pathlib import Path

import sgmem
from sgmem.entities.extract import TypeModel, find_spans

DATA = Path(__file__).resolve().parents[2] / "data" / "entity_types.json"


def _typed(embedder: sgmem.Embedder) -> list[tuple[str, str, str | None]]:
    """(mention, gold type, predicted type or None when no span was found) per item."""
    from sgmem.pyramid.retrieve import WordVectors

    words = WordVectors(embedder)
    model = TypeModel(words, sgmem.EntityConfig())
    out = []
    for item in json.loads(DATA.read_text(encoding="utf-8"))["items"]:
        spans = [m for m in find_spans(item["text"]) if m.kind in ("name", "title")]
        m = next((s for s in spans if item["mention"] in s.surface or s.surface in item["mention"]), None)
        if m is not None:
            m.sentence = 0
            model.assign([m], words([item["text"]]))
        out.append((item["mention"], item["type"], m.type if m is not None else None))
    return out


def test_typing_accuracy_on_the_hand_written_set(embedder: sgmem.Embedder) -> None:
    typed = _typed(embedder)
    assert len(typed) == 42 and all(p is not None for _, _, p in typed)  # every span found
    accuracy = sum(g == p for _, g, p in typed) / len(typed)
    assert accuracy >= 0.88, [(m, g, p) for m, g, p in typed if g != p]


def test_stated_types_win_over_the_embedder() -> None:
    cues = {
        "Our dog Biscuit chewed up my sneakers.": ("Biscuit", "animal"),
        "Shelly the turtle is twelve years old now.": ("Shelly", "animal"),
        "I asked Dr. Patel about my knee.": ("Patel", "person"),
        "Nothing beats my mom's Tiramisu.": ("Tiramisu", None),  # a possessive is no stated type
    }
    for text, (name, cue) in cues.items():
        found = {m.surface: m.cue for m in find_spans(text)}
        assert name in found and found[name] == cue, (text, found)
