"""Query words that name a speaker of the scope (the hybrid's ``speaker_match``).

A turn's lexical terms include its speaker's name, so a query naming a
speaker matches her own turns — and also every turn that names her, mostly
lines said *to* her ("Thanks, Melanie!", "Wow, Melanie, ..."), which tell
little about her. With ``HybridConfig.speaker_match`` > 0 a query word that
names one of the scope's speakers ("What activities does Melanie partake
in?") matches only the turns that speaker said, weighted by its IDF over them.
[D] Our design choice, off by default: on the LoCoMo dev split it lifts
multi-hop recall@10 by 1.2 points and costs the adversarial questions (which
ask about one speaker what the other said) 1.8; the nested cross-validation keeps
it off (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..text.lexical import analyze, tokenize

__all__ = ["ASSISTANT", "PLAIN_MODES", "assistant_turns", "named_speakers", "speaker_rows", "without_names"]

#: the speaker of a message of role ``"assistant"`` stored without a name: the AI the user talks to
ASSISTANT = "assistant"
#: the plain baselines' modes (dense and lexical alone), whose query is embedded as typed
PLAIN_MODES = frozenset({"vector", "bm25"})

_cache: weakref.WeakKeyDictionary[Any, tuple[int, dict[str, np.ndarray]]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def speaker_rows(idx: Any) -> dict[str, np.ndarray]:
    """Each lexical term of a speaker's name → the turn rows that speaker said (cached per index size).

    A name of several words ("Anna Lee") gives each of its terms; a term shared
    by two speakers' names maps to the turns of both.
    """
    n = idx.n_turns
    with _lock:
        hit = _cache.get(idx)
    if hit is not None and hit[0] == n:
        return hit[1]
    codes = np.asarray(idx.speakers.codes()[:n])
    out: dict[str, np.ndarray] = {}
    if n:
        by_term: dict[str, list[int]] = {}
        uniq, first = np.unique(codes, return_index=True)
        for code, row in zip(uniq.tolist(), first.tolist(), strict=True):
            name = idx.speakers[int(row)]
            for term in dict.fromkeys(analyze(str(name), idx.analyzer)) if name else ():
                by_term.setdefault(term, []).append(code)
        out = {t: np.flatnonzero(np.isin(codes, cs)) for t, cs in by_term.items()}
    with _lock:
        _cache[idx] = (n, out)
    return out


def assistant_turns(idx: Any) -> np.ndarray:
    """A boolean mask over the turns: those the assistant said (role ``"assistant"``, no name; cached until the
    index changes). A named speaker is a person, whatever the role that carried the message."""

    def build() -> np.ndarray:
        codes = np.asarray(idx.speakers.codes()[: idx.n_turns])
        uniq, first = np.unique(codes, return_index=True)
        ours = [c for c, r in zip(uniq.tolist(), first.tolist(), strict=True) if idx.speakers[int(r)] == ASSISTANT]
        return np.isin(codes, ours)

    return idx.derived("assistant_turns", build)


def named_speakers(idx: Any, query: str) -> list[str]:
    """The speakers of the scope that ``query`` names, as the query writes them ("Marco" for a speaker stored as
    "Marco Rossi" asked about as "Marco"); empty when it names none."""
    spoken = speaker_rows(idx)
    if not spoken:
        return []
    terms = set(analyze(query, idx.analyzer))
    named = [t for t in spoken if t in terms]
    if not named:
        return []
    words = set(tokenize(query))
    out: dict[str, None] = {}
    for t in named:
        name = str(idx.speakers[int(spoken[t][0])])
        out[" ".join(w for w in name.split() if w.lower() in words) or name] = None
    return list(out)


def without_names(idx: Any, query: str, q: np.ndarray, embed_names: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """[D] The query vector ``q`` without the direction of the speakers' names it holds.

    Ingest embeds a sentence with its speaker's name in front ("Marco: Two weeks.", ``Config.speaker_prefix``),
    so "What is Marco allergic to?" is close to every short line Marco said, whatever it says (cosine 0.50 to
    "Marco: Two weeks." against 0.67 to "Marco: I'm allergic to shellfish..."). The name says whose turns to
    prefer, not what they say: its direction (the name embedded alone, the directions of several names made
    orthogonal) is removed from the query, which then finds what was said (0.07 against 0.47), and the hybrid
    weighs the named speaker's turns by what they say (``HybridConfig.speaker_weight``). A query whose only
    content words are the names ("Who is Priya?", "Tell me about Marco") is about the person: it keeps them.
    """
    names = named_speakers(idx, query)
    if not names:
        return q
    terms = set(analyze(query, idx.analyzer))
    if not terms - set(analyze(" ".join(names), idx.analyzer)):  # "Who is Priya?": the name is the whole topic
        return q
    basis: list[np.ndarray] = []
    for u in np.asarray(embed_names(names), dtype=np.float64):
        for b in basis:  # Gram-Schmidt: two names are removed once each
            u = u - (u @ b) * b
        norm = float(np.linalg.norm(u))
        if norm > 1e-6:
            basis.append(u / norm)
    out = np.asarray(q, dtype=np.float64)
    for b in basis:
        out = out - (out @ b) * b
    norm = float(np.linalg.norm(out))
    return (out / norm).astype(np.float32) if norm > 1e-6 else q
