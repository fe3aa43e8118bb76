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
from typing import Any

import numpy as np

from ..text.lexical import analyze

__all__ = ["ASSISTANT", "assistant_turns", "speaker_rows"]

#: the speaker of a message of role ``"assistant"`` stored without a name: the AI the user talks to
ASSISTANT = "assistant"

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
            for term in dict.fromkeys(analyze(str(name))) if name else ():
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
