"""Chats in other languages: the default model is English; the documented multilingual option.

The bundled all-MiniLM-L6-v2 was trained on English: a fact said in Spanish is not found by the same question
asked in English. ``sgmem.embed.multilingual_embedder()`` names the multilingual model; here a stand-in with
the same name and dimension (the real one is fetched from the hub, which tests never reach) shows that a store
written with it finds a fact across languages, at the settings sgmem gives an embedder it was not calibrated
for.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import sgmem
from sgmem.embed import MULTILINGUAL_MODEL_NAME, multilingual_embedder

#: words of several languages that mean one thing (what a multilingual model's space does for them)
_CONCEPTS = {
    "work": "work", "works": "work", "job": "work", "trabajo": "work", "trabajo,": "work", "arbeite": "work",
    "nurse": "nurse", "enfermera": "nurse", "krankenpflegerin": "nurse",
    "cat": "cat", "gato": "cat", "katze": "cat",
    "lyon": "lyon",
}  # fmt: skip


class StandInMultilingual:
    """Same name and dimension as the multilingual model; a sentence's vector is the sum of its words' concepts."""

    name = MULTILINGUAL_MODEL_NAME
    dim = 384

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().replace("?", " ").replace(".", " ").split():
                concept = _CONCEPTS.get(word, word)
                slot = int(hashlib.blake2b(concept.encode(), digest_size=4).hexdigest(), 16) % self.dim
                out[i, slot] += 3.0 if concept in _CONCEPTS.values() else 0.3
            out[i] /= max(float(np.linalg.norm(out[i])), 1e-6)
        return out


def test_the_multilingual_option_names_its_model_without_loading_it() -> None:
    emb = multilingual_embedder()
    assert emb.name == MULTILINGUAL_MODEL_NAME and emb.dim == 384
    assert not emb.loaded, "nothing is downloaded or loaded until the first embedding"


def test_a_store_written_with_a_multilingual_model_finds_a_spanish_fact_by_an_english_question() -> None:
    with sgmem.Memory(embedder=StandInMultilingual()) as mem:
        assert mem.min_relevance == 0.0, "the cutoff is calibrated for MiniLM only: none for another model"
        mem.add(
            [
                {"role": "user", "content": "Trabajo como enfermera en Lyon."},
                {"role": "assistant", "content": "¡Qué bien!"},
                {"role": "user", "content": "I adopted a cat last spring."},
            ],
            scope="ana",
            thread="t",
        )
        hits = mem.search("Where do I work?", scope="ana", k=3)
        assert hits and hits[0].text == "Trabajo como enfermera en Lyon."


@pytest.mark.parametrize("query", ["Where do I work?"])
def test_the_default_english_model_misses_a_fact_said_in_spanish(embedder: sgmem.Embedder, query: str) -> None:
    """The documented limit (docs/memory.md, "Languages"), so that the page stays true."""
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add(
            [
                {"role": "user", "content": "Trabajo como enfermera en Lyon desde marzo."},
                {"role": "assistant", "content": "¡Qué bien! ¿Te gusta?"},
                {"role": "user", "content": "I adopted a cat last spring."},
                {"role": "assistant", "content": "Lovely, what's its name?"},
            ],
            scope="ana",
            thread="t",
        )
        hits = mem.search(query, scope="ana", k=3)
        assert not hits or "enfermera" not in hits[0].text
