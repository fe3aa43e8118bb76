"""The LLM-free merge rule of the gate's Update (ALGORITHMS §2.8)."""

from __future__ import annotations

from sgmem.derived.merge import normalise, rule_merge


def test_contained_text_keeps_the_longer() -> None:
    assert rule_merge("Alice has a cat named Miso.", "alice has a CAT named miso") == "Alice has a cat named Miso."
    assert rule_merge("Alice has a cat.", "Alice has a cat named Miso.") == "Alice has a cat named Miso."


def test_otherwise_texts_are_joined_without_duplicate_sentences() -> None:
    got = rule_merge("Alice has a cat.", "Alice has a cat. She runs marathons.")
    assert got == "Alice has a cat. She runs marathons."
    assert rule_merge("Alice has a cat.", "Bob has a dog.") == "Alice has a cat. Bob has a dog."


def test_the_cap_keeps_the_anchor_and_the_newest_sentence() -> None:
    merged = rule_merge("Alice has a cat. It is grey.", "It eats tuna.")
    assert merged == "Alice has a cat. It eats tuna."


def test_the_character_cap_holds() -> None:
    long = "word " * 150
    merged = rule_merge("Alice has a cat.", long.strip() + ".")
    assert len(merged) <= 400
    assert merged.startswith("Alice has a cat.")


def test_normalise_ignores_case_punctuation_and_spacing() -> None:
    assert normalise("  Hello,   World! ") == "hello world"
