"""Nearest neighbours found by the database server (PostgreSQL with pgvector, ``Config.pg_dense``).

The server picks the candidates (``ORDER BY emb <=> q LIMIT n``, filtered by
scope); the host scores their turns with its own copy of the vectors (the scores
are the host path's, to float rounding). Everything else counts as cosine −1,
the contract of :func:`sgmem.retrieval.dense.ann_cosines`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["gate_nearest", "server_candidates", "server_finds"]


def _in_server(store: Any) -> bool:
    return getattr(store, "dense", "host") == "server"


def server_finds(idx: Any) -> bool:
    """Whether the server picks this scope's dense candidates (:func:`server_candidates` returns rows)."""
    return _in_server(getattr(idx, "_store", None)) and idx.n_sentences > 0


def server_candidates(idx: Any, q: np.ndarray, config: Any) -> np.ndarray | None:
    """Row ids of the scope's ``dense_ann_candidates`` sentences nearest to ``q``, found by the server.

    None when the store finds no neighbours itself (``Config.pg_dense`` resolved
    to ``"host"``). The host then scores the candidates' turns exactly, as for
    the HNSW index (:func:`sgmem.retrieval.dense.approx_from_rows`). A sentence
    the server returns that the host's index lacks (written by another host
    after this search's generation check) is left out; one the host still holds
    but the server no longer has (deleted meanwhile) is only scored when a
    candidate's turn or neighbour holds it.
    """
    if not server_finds(idx):
        return None
    store: Any = idx._store  # the store the index was built from
    n_cand = min(int(config.dense_ann_candidates), idx.n_sentences)
    qv = np.ascontiguousarray(q, dtype=np.float32).reshape(-1)
    found = store.nearest(idx.scope_id, qv, n_cand, "sentences")
    rows = [r for r in (idx.sent_row(sid) for sid, _ in found) if r is not None]
    return np.asarray(rows, dtype=np.int64)


def gate_nearest(
    store: Any, scope_id: int, state: Any
) -> Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]] | None:
    """For the gate's approximate scorer: ``(rows, cosines)`` of the ``k`` committed facts nearest to ``c``.

    Rows index ``state``'s fact matrix; cosines are computed on the host from it.
    None when the store does not find neighbours itself.
    """
    if not _in_server(store):
        return None

    def nearest(c: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        cv = np.ascontiguousarray(c, dtype=np.float32).reshape(-1)
        found = store.nearest(scope_id, cv, k, "derived", kind="fact")
        pos = state._row
        rows = np.asarray([pos[i] for i, _ in found if i in pos], dtype=np.int64)
        cos = (state.vectors[rows] @ cv).astype(np.float64) if rows.size else np.zeros(0)
        return rows, cos

    return nearest
