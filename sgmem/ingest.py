"""Write path, the parts that need no lock: segmenting, embedding, kNN edges.

message → turn → sentences (offline splitter); embedded texts are
speaker-prefixed; identical texts are embedded once per add (and not at all
when the scope already holds their vector).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from .config import Config
from .embed.base import Embedder, check_embeddings
from .errors import LimitExceededError
from .retrieval.index import ScopeIndex
from .store.sqlite import MessageRow, SentenceRow
from .text.lexical import DEFAULT_ANALYZER, analyze, has_word
from .text.segment import sentence_spans
from .text.tokens import count_tokens

__all__ = ["Prepared", "embed_texts", "kept_spans", "knn_edges", "prepare", "text_hash", "turn_vectors"]


def text_hash(text: str) -> str:
    """Stable key of an embedded text (dedupes embedding work)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


@dataclass
class Prepared:
    """Messages and sentences of one add, segmented but not yet embedded."""

    messages: list[MessageRow]
    sentences: list[SentenceRow]
    sentence_texts: list[str]


def speaker_of(m: dict[str, Any]) -> str:
    """The label used for a message in embeddings and context."""
    return str(m["name"] or m["role"])


def kept_spans(content: str) -> list[tuple[int, int, int]]:
    """The sentences a message is stored as: ``(index, start, end)`` of each (what counts against
    ``Limits.max_sentences_per_add``)."""
    spans = sentence_spans(content)
    out: list[tuple[int, int, int]] = []
    for j, (a, b) in enumerate(spans):
        if (len(spans) > 1 or out) and not has_word(content[a:b]):
            continue  # punctuation- or emoji-only fragments carry nothing to retrieve
        out.append((j, a, b))
    if not out:  # every fragment was punctuation or emoji: keep the message whole
        out.append((0, len(content) - len(content.lstrip()), len(content.rstrip())))
    return out


def prepare(
    msgs: list[dict[str, Any]],
    config: Config,
    sessions: list[str],
    ext_ids: list[str],
    analyzer: str = DEFAULT_ANALYZER,
) -> Prepared:
    """Segment validated messages into rows (vectors still empty); their lexical terms by the store's
    ``analyzer`` (:mod:`sgmem.text.lexical`)."""
    rows: list[MessageRow] = []
    sents: list[SentenceRow] = []
    sent_texts: list[str] = []
    empty = np.zeros(0, dtype=np.float32)
    for i, m in enumerate(msgs):
        content: str = m["content"]
        speaker = speaker_of(m)
        prefix = f"{speaker}: " if config.speaker_prefix else ""
        # the speaker's name is a term of the turn, so "What did Caroline say…"
        # can match her turns even when her name is not in them
        terms = set(analyze(content, analyzer))
        if m["name"]:
            terms.update(analyze(m["name"], analyzer))
        rows.append(
            MessageRow(
                ext_id=ext_ids[i],
                role=m["role"],
                name=m["name"],
                content=content,
                at=m["at"],
                session=sessions[i],
                tokens=count_tokens(content),
                terms=" ".join(sorted(terms)),
                metadata=m["metadata"],
                vec=empty,
            )
        )
        for j, a, b in kept_spans(content):
            sents.append(SentenceRow(msg=i, idx=j, start=a, end=b, text=content[a:b], embed_hash="", vec=empty))
            sent_texts.append(prefix + content[a:b])
        if len(sents) > config.limits.max_sentences_per_add:
            raise LimitExceededError(
                "messages", len(sents), config.limits.max_sentences_per_add, "sentences", "max_sentences_per_add"
            )
    for s, t in zip(sents, sent_texts, strict=False):
        s.embed_hash = text_hash(t)
    return Prepared(rows, sents, sent_texts)


def turn_vectors(prep: Prepared, dim: int) -> None:
    """Set each message's vector to the normalised mean of its sentence vectors.

    [D] A whole-turn embedding measured no better than this mean on LoCoMo
    (recall@10 74.1 vs 73.9) and would cost a second embedding pass per turn.
    """
    sums = np.zeros((len(prep.messages), dim), dtype=np.float64)
    for s in prep.sentences:
        sums[s.msg] += s.vec
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit = (sums / norms).astype(np.float32)
    for i, m in enumerate(prep.messages):
        m.vec = unit[i]


def embed_texts(
    embedder: Embedder,
    texts: list[str],
    known: dict[str, np.ndarray],
    batch_size: int,
    keys: list[str] | None = None,
) -> tuple[list[np.ndarray], int]:
    """Vectors for ``texts``, embedding each distinct unknown text once.

    ``keys``: the texts' :func:`text_hash` when already computed (:func:`prepare` keeps them).
    Returns the vectors in order and how many texts were sent to the embedder.
    """
    keys = [text_hash(t) for t in texts] if keys is None else keys
    todo: dict[str, str] = {}
    for k, t in zip(keys, texts, strict=False):
        if k not in known and k not in todo:
            todo[k] = t
    vecs = dict(known)
    items = list(todo.items())
    for i in range(0, len(items), batch_size):
        batch = items[i : i + batch_size]
        out = check_embeddings(embedder, [t for _, t in batch], embedder.embed([t for _, t in batch]))
        for (k, _), v in zip(batch, out, strict=False):
            vecs[k] = v
    return [vecs[k] for k in keys], len(items)


def _top_k_inner(queries: np.ndarray, vecs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` inner products of each query against ``vecs`` (unsorted within the k).

    A BLAS matrix product plus ``argpartition``: for the few dozen sentences of
    an add this measured 3–25× faster than FAISS's flat search on 2 cores,
    which is tuned for many queries. The product is taken in slices so that
    at most 2**24 scores (64 MB) exist at once, whatever the scope's size.
    """
    kk = min(k, len(vecs))
    step = max(1, (1 << 24) // max(len(vecs), 1))
    ds, ixs = [], []
    for s0 in range(0, len(queries), step):
        sims = queries[s0 : s0 + step] @ vecs.T
        part = (
            np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
            if kk < sims.shape[1]
            else np.broadcast_to(np.arange(sims.shape[1]), sims.shape)
        )
        ds.append(np.take_along_axis(sims, part, axis=1))
        ixs.append(part)
    return np.concatenate(ds), np.concatenate(ixs)


def _merge_candidates(
    cands: list[tuple[np.ndarray, np.ndarray, bool]], k: int, min_cos: float, b0: int
) -> list[tuple[int, int, float]]:
    """Each row's ``k`` best candidates with cosine ≥ ``min_cos``, best first: ``(b0 + row, target, cos)``.

    ``cands`` holds ``(cosines, targets, is_new)`` blocks of the same rows,
    existing rows first; a non-finite cosine (-inf marks a later new
    sentence) or an existing target < 0 (FAISS's padding) is no candidate.
    Ties keep the order of the blocks and of the columns within a block (a
    stable sort, as the row-by-row loop it replaced, which
    ``tests/unit/test_ingest_fast.py`` keeps as its reference).
    """
    dist = np.concatenate([d.astype(np.float64) for d, _, _ in cands], axis=1)
    tgt = np.concatenate([-ix.astype(np.int64) - 1 if is_new else ix.astype(np.int64) for _, ix, is_new in cands], 1)
    bad = ~np.isfinite(dist)
    lo = 0
    for _, ix, is_new in cands:
        if not is_new:
            bad[:, lo : lo + ix.shape[1]] |= ix < 0
        lo += ix.shape[1]
    dist[bad] = -np.inf
    order = np.argsort(-dist, axis=1, kind="stable")[:, :k]
    top_d = np.take_along_axis(dist, order, axis=1)
    top_t = np.take_along_axis(tgt, order, axis=1)
    rows, cols = np.nonzero(np.isfinite(top_d) & (top_d >= min_cos))
    return [(b0 + r, int(top_t[r, c]), float(top_d[r, c])) for r, c in zip(rows.tolist(), cols.tolist(), strict=True)]


#: [D] an add's new sentences are compared with each other exactly up to this many (every ordinary message and
#: batch); past it by an HNSW graph (:func:`knn_edges`): exactly, one message of 40,000 short lines spent
#: most of its add comparing its own sentences with each other (quadratic)
EXACT_NEW_SENTENCES = 8192


def _new_hnsw(dim: int, ann: Any) -> Any:
    """An empty HNSW graph (inner product) with the scope's HNSW settings when it has one, else the defaults."""
    import faiss

    from .config import GraphConfig

    g = GraphConfig()
    m, ef_c, ef_s = (
        (ann.m, ann.ef_construction, ann.ef_search)
        if ann is not None
        else (g.knn_hnsw_m, g.knn_hnsw_ef_construction, g.knn_hnsw_ef_search)
    )
    graph = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = ef_c
    graph.hnsw.efSearch = ef_s
    return graph


def knn_edges(
    idx: ScopeIndex,
    new_vecs: np.ndarray,
    k: int,
    min_cos: float,
    block: int = 1024,
    ann: Any = None,
    threads: int = 1,
    exact_new: int | None = None,
) -> list[tuple[int, int, float]]:
    """SGMem similarity edges for new sentences (ALGORITHMS §1.2 step 4).

    Each new sentence ``i`` gets its ``k`` most similar *earlier* sentences of
    the scope — existing rows, or new sentences before it — with cosine ≥
    ``min_cos``. Returns ``(i, target, cos)`` where ``target >= 0`` is an
    existing sentence row and ``target < 0`` encodes new sentence ``-target-1``.
    With ``ann`` (:class:`sgmem.retrieval.ann.AnnIndex` over the existing
    rows), the existing candidates come from it (exact cosines, approximate
    neighbour sets); the new sentences are always compared exactly.
    ``threads``: the HNSW search's threads (:meth:`AnnIndex.candidates`; same ids).
    The new sentences are compared with each other exactly for the first
    ``exact_new`` of them (default :data:`EXACT_NEW_SENTENCES`); past that
    (one message of tens of thousands of lines), each block of ``block`` new
    sentences is compared exactly with itself and finds its earlier ones in an
    HNSW graph over them, so the add's cost grows as n log n, not n².
    """
    n_new = len(new_vecs)
    if k <= 0 or n_new == 0:
        return []
    exact_new = EXACT_NEW_SENTENCES if exact_new is None else exact_new
    graph: Any = None
    existing = idx.sentence_vectors()  # zero-copy view of the FAISS flat index
    edges: list[tuple[int, int, float]] = []
    for b0 in range(0, n_new, block):
        blk = new_vecs[b0 : b0 + block]
        cands: list[tuple[np.ndarray, np.ndarray, bool]] = []
        if len(existing):
            found = ann.top_k(blk, existing, k, threads) if ann is not None else _top_k_inner(blk, existing, k)
            cands.append((*found, False))
        if b0 >= exact_new:  # a very long add: its earlier sentences from an HNSW graph, its own block exactly
            if graph is None:
                graph = _new_hnsw(new_vecs.shape[1], ann)
            if graph.ntotal < b0:
                graph.add(np.ascontiguousarray(new_vecs[graph.ntotal : b0], dtype=np.float32))
            graph.hnsw.efSearch = max(int(graph.hnsw.efSearch), k)
            d_far, ix_far = graph.search(np.ascontiguousarray(blk, dtype=np.float32), k)
            d_far = np.where(ix_far >= 0, d_far, -np.inf)
            cands.append((d_far, np.maximum(ix_far, 0), True))
            sims = blk @ blk.T
            sims = np.where(np.arange(len(blk))[None, :] < np.arange(len(blk))[:, None], sims, -np.inf)
            kk = min(k, len(blk))
            part = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
            cands.append((np.take_along_axis(sims, part, axis=1), part + b0, True))
        elif b0 > 0 or len(blk) > 1:
            prev = new_vecs[: b0 + len(blk)]
            sims = blk @ prev.T  # (blk, b0+len(blk))
            # only strictly earlier new sentences
            cols = np.arange(prev.shape[0])[None, :]
            rows = (b0 + np.arange(len(blk)))[:, None]
            sims = np.where(cols < rows, sims, -np.inf)
            kk = min(k, prev.shape[0])
            part = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
            cands.append((np.take_along_axis(sims, part, axis=1), part, True))
        if cands:
            edges.extend(_merge_candidates(cands, k, min_cos, b0))
    return edges
