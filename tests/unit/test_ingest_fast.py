"""The write path's vectorised steps give what their row-by-row originals gave.

:func:`sgmem.ingest._merge_candidates` replaced a per-sentence Python loop of
:func:`sgmem.ingest.knn_edges`; the loop is kept here as the reference and
both are run on candidate blocks with ties, FAISS padding (-1), -inf and
NaN cosines and a minimum cosine.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgmem.ingest import _merge_candidates, knn_edges
from sgmem.retrieval.index import ScopeIndex


def _reference(cands: list[tuple[np.ndarray, np.ndarray, bool]], k: int, min_cos: float, b0: int) -> list:
    """The row-by-row merge :func:`knn_edges` used before (a stable sort of each row's pool)."""
    edges = []
    for r in range(len(cands[0][0])):
        pool: list[tuple[float, int]] = []
        for d, ix, is_new in cands:
            for dist, target in zip(d[r], ix[r], strict=False):
                if not np.isfinite(dist) or (not is_new and target < 0):
                    continue
                pool.append((float(dist), -int(target) - 1 if is_new else int(target)))
        pool.sort(key=lambda t: -t[0])
        for dist, target in pool[:k]:
            if dist >= min_cos:
                edges.append((b0 + r, target, dist))
    return edges


@pytest.mark.parametrize("seed", range(40))
def test_merged_candidates_equal_the_row_by_row_merge(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows, k = int(rng.integers(1, 30)), int(rng.integers(1, 6))
    cands = []
    for is_new in (False, True)[: int(rng.integers(1, 3))]:
        width = int(rng.integers(1, 2 * k + 3))
        # coarse values: many ties within and across the blocks
        d = (rng.integers(-4, 5, size=(rows, width)) / 4).astype(np.float32)
        d[rng.random(d.shape) < 0.1] = -np.inf
        d[rng.random(d.shape) < 0.03] = np.nan
        ix = rng.integers(-1 if not is_new else 0, 50, size=(rows, width))
        cands.append((d, ix, is_new))
    min_cos = float(rng.choice([-1.0, 0.0, 0.25, 0.5]))
    b0 = int(rng.integers(0, 3)) * 1024
    assert _merge_candidates(cands, k, min_cos, b0) == _reference(cands, k, min_cos, b0)


def test_knn_edges_link_each_sentence_to_its_best_earlier_ones() -> None:
    rng = np.random.default_rng(0)
    dim = 16
    idx = ScopeIndex(scope_id=1, dim=dim)
    old = rng.standard_normal((40, dim)).astype(np.float32)
    old /= np.linalg.norm(old, axis=1, keepdims=True)
    idx.sent_index.add(old)
    new = np.concatenate([old[[3, 7]], old[[3]] * 0.5 + old[[9]] * 0.5]).astype(np.float32)
    new /= np.linalg.norm(new, axis=1, keepdims=True)
    edges = knn_edges(idx, new, 2, 0.0)
    by_src: dict[int, list[int]] = {}
    for i, t, _ in edges:
        by_src.setdefault(i, []).append(t)
    assert by_src[0][0] == 3 and by_src[1][0] == 7  # a copy of an old sentence finds it first
    assert set(by_src[2]) <= {3, 9, -1}  # the blend: old rows 3 and 9, or new sentence 0 (a copy of 3)


_TEXTS = [
    "I moved to Lisbon in May — it’s sunny! Caroline's dog isn't 3-years-old; he's 2.",
    "The MAY meeting: may I join? Self-care and pottery-class on 12/05/2023 at 5 p.m.",
    "😀 !!! ...",
    "ÉCOLE, naïve café; Straße ß İstanbul 你好 。",
    "",
    "_ __ --- ''' ’’’",
]


@settings(deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ3'’-_ .,!é😀ßİ\n")), max_size=40))
def test_tokenize_and_has_word_equal_the_match_loop(text: str) -> None:
    from sgmem.text.lexical import _WORD, has_word, tokenize

    for t in [text, *_TEXTS]:
        reference = [m.group(0).replace("’", "'") for m in _WORD.finditer(t.lower())]
        assert tokenize(t) == reference
        assert has_word(t) == bool(reference)


def _candidates_reference(text: str) -> list[str]:
    """:func:`sgmem.pyramid.keywords.candidates` as it was, one token at a time without a cache."""
    from sgmem.pyramid.keywords import _MONTHS, _WORD, LIGHT_WORDS, STOPWORDS, keyword_key

    out: list[str] = []
    for tok in (p for m in _WORD.finditer(text) for p in m.group(0).split("-")):
        tok = tok.replace("’", "'")
        if tok.endswith("'s") or tok.endswith("'S"):
            tok = tok[:-2]
        low = tok.lower()
        if not tok or low in STOPWORDS:
            continue
        if low in _MONTHS:
            if tok[0].isupper():
                out.append(low)
            continue
        if tok.isdigit():
            out.append(tok)
            continue
        key = keyword_key(tok)
        if not key or key in STOPWORDS or key in LIGHT_WORDS or low in LIGHT_WORDS:
            continue
        if len(key) < 2 and not key.isdigit():
            continue
        out.append(key)
    return out


@settings(deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "May",
                "may",
                "I",
                "it’s",
                "Caroline's",
                "3",
                "x",
                "self-care",
                "the",
                "dogs",
                "a-b",
                "ran",
                "Running",
                "'s",
                "ok",
            ]
        ),
        max_size=12,
    )
)
def test_keyword_candidates_equal_the_uncached_loop(words: list[str]) -> None:
    from sgmem.pyramid.keywords import candidates

    for t in [" ".join(words), *_TEXTS]:
        assert candidates(t) == _candidates_reference(t)
        assert candidates(t) == _candidates_reference(t)  # the second call answers from the cache
