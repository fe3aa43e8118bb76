"""SGRM: segment-graph retrieval (ALGORITHMS §5; seed paper §3.1–3.6), ``mode="sgrm"``.

Segments are built from a scope's turn index on first use and cached per
scope generation (a cache of SQLite like the rest of the index): each
thread's turns, in order, are packed into windows of ``segment_tokens``
tokens (§3.1; [D] whole turns only). A segment's vector is the normalised sum
of its turns' sentence vectors ([D]: the paper embeds the segment's text; this
costs no embedding and equals the turn-vector rule of :func:`sgmem.ingest.turn_vectors`).
Edges (§3.3): chronological ``(v_{i-1}, v_i)`` within a thread, and for each
segment directed edges to its ``knn_k`` most similar earlier segments; the
walk follows both directions ([C]: the paper's BFS direction is not stated).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import numpy as np

__all__ = ["Segments", "segments_of", "sgrm_search"]


class Segments:
    """One scope's segment graph."""

    def __init__(self, rows: list[list[int]], vecs: np.ndarray, adj: list[set[int]]) -> None:
        self.rows = rows
        self.vecs = vecs
        self.adj = adj


_CACHE: dict[tuple[int, int, int, int, int], Segments] = {}
_LOCK = threading.Lock()


def _build(idx: Any, window: int, k: int) -> Segments:
    threads = idx.array("threads")
    tokens = idx.array("tokens")
    order: dict[str, list[int]] = {}
    for r in range(idx.n_turns):
        order.setdefault(str(threads[r]), []).append(r)
    rows: list[list[int]] = []
    chrono: list[tuple[int, int]] = []
    for turns in order.values():
        cur: list[int] = []
        used = 0
        first = len(rows)
        for r in turns:
            t = int(tokens[r])
            if cur and used + t > window:
                rows.append(cur)
                cur, used = [], 0
            cur.append(r)
            used += t
        if cur:
            rows.append(cur)
        chrono += [(i, i + 1) for i in range(first, len(rows) - 1)]
    tv = idx.turn_vectors()  # float32, derived from the sentence vectors; summed in float64 per segment
    vecs = np.zeros((len(rows), tv.shape[1] if tv.ndim == 2 else 0), dtype=np.float32)
    for i, rs in enumerate(rows):
        v = tv[rs].astype(np.float64).sum(axis=0)
        nrm = np.linalg.norm(v)
        vecs[i] = v / nrm if nrm > 0 else v
    adj: list[set[int]] = [set() for _ in rows]
    for a, b in chrono:
        adj[a].add(b)
        adj[b].add(a)
    if len(rows) > 1 and k > 0:
        # similarities a block of segments at a time: memory O(block · segments), not O(segments²)
        # (17.8k segments at 100k sentences made a 1.3 GB matrix)
        block = 512
        for b0 in range(1, len(rows), block):
            b1 = min(b0 + block, len(rows))
            sims = vecs[b0:b1] @ vecs[:b1].T
            for i in range(b0, b1):
                # §3.3: directed edges to the top-k most similar earlier segments (j < i)
                prev = sims[i - b0, :i]
                for j in np.argsort(-prev)[:k]:
                    adj[i].add(int(j))
                    adj[int(j)].add(i)
    return Segments(rows, vecs, adj)


def segments_of(idx: Any, window: int, k: int) -> Segments:
    """The scope's segment graph for these parameters (cached per scope generation)."""
    key = (idx.scope_id, idx.generation, idx.n_turns, window, k)
    with _LOCK:
        seg = _CACHE.get(key)
    if seg is None:
        seg = _build(idx, window, k)
        with _LOCK:
            for old in [x for x in _CACHE if x[0] == idx.scope_id]:
                del _CACHE[old]
            _CACHE[key] = seg
    return seg


def sgrm_search(
    idx: Any, q: np.ndarray, k: int, allowed: np.ndarray | None, cfg: Any
) -> list[tuple[str, list[int], float, dict[str, Any]]]:
    """Seed segment (§3.5), BFS to ``cfg.depth`` (§3.6), the ``top_n`` reachable segments by similarity."""
    seg = segments_of(idx, cfg.segment_tokens, cfg.knn_k)
    if not seg.rows:
        return []
    sims = seg.vecs @ q.astype(np.float32)
    ok = np.ones(len(seg.rows), dtype=bool)
    if allowed is not None:
        ok = np.array([bool(allowed[rs].any()) for rs in seg.rows])
    if not ok.any():
        return []
    seed = int(np.argmax(np.where(ok, sims, -np.inf)))
    hop = {seed: 0}
    queue = deque([seed])
    while queue:
        u = queue.popleft()
        if hop[u] >= cfg.depth:
            continue
        for v in seg.adj[u]:
            if v not in hop:
                hop[v] = hop[u] + 1
                queue.append(v)
    reach = sorted((v for v in hop if ok[v]), key=lambda v: (-sims[v], v))[: min(cfg.top_n, k)]
    sent = idx.sentence_vectors()
    out = []
    for v in reach:
        # a hit's messages are in conversation order (``Hit.message_ids``): a thread's turns by message row id
        rs = sorted((r for r in seg.rows[v] if allowed is None or allowed[r]), key=lambda r: int(idx.msg_ids[r]))
        why = {
            "mode": "sgrm",
            "segment": v,
            "seed": seg.rows[seed][0] == seg.rows[v][0],
            "hop": hop[v],
            "cosine": round(float(sims[v]), 4),
            "turns": len(rs),
        }
        if cfg.order == "similarity":
            # [D] which turns matched best: positions in the hit's messages, best sentence cosine first
            best = {r: max((float(sent[s] @ q) for s in idx.msg_sents[r]), default=-1.0) for r in rs}
            why["best_turns"] = sorted(range(len(rs)), key=lambda i: (-best[rs[i]], i))
        out.append(("segment", rs, float(sims[v]), why))
    return out
