"""SGMem sentence-graph retrieval (ALGORITHMS §1.3, arXiv 2509.21212).

Given the cosine of the query to every sentence of a scope:
1. ``sim = cos + ε`` with ε = 1, so sim ∈ [0, 2]                      (§1.3 step 1)
2. seeds ``C_q`` = the top-n sentences with ``sim ≥ γ``               (§1.3 step 3)
3. ``C* = C_q ∪ N_h(C_q)`` by BFS over similarity edges, undirected   (§1.3 step 4)
4. each sentence of C* maps to its parent chunk (turn/round/session)   (§1.3 step 5)
5. ``score(k) = (1/|C_k|) Σ_{c ∈ C_k} sim(q, c)``                      (§1.3 step 6)
6. the top-K chunks                                                    (§1.3 step 7)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..config import GraphConfig
from .index import ScopeIndex
from .topk import top_k

__all__ = ["Expansion", "chunk_key", "expand", "hop_origins", "rank_chunks", "seed_partition", "turn_means"]

EPSILON = 1.0  # §1.3 step 1: sim = cos + ε


@dataclass
class Expansion:
    """The sentences C* reached from the seeds, with how each was reached."""

    rows: list[int] = field(default_factory=list)
    hop: dict[int, int] = field(default_factory=dict)
    origin: dict[int, int] = field(default_factory=dict)  # sentence row -> seed row
    seeds: list[int] = field(default_factory=list)


#: float32 cosines closer to 0 than this may become equal once ``+ ε`` in float64 (see :func:`expand`)
_TINY = 2e-9


def seed_partition(cos: np.ndarray, n: int) -> np.ndarray | None:
    """The ``n`` best rows of ``sim = float64(cos) + ε`` (:func:`.topk.top_k`: best first, ties by row),
    computed over ``cos``.

    The same rows in the same order: ``float64(c) + 1`` orders two float32
    cosines as they are ordered unless both are within 2e-9 of 0, where the
    float64 sum can make them equal. Such values can only matter when the
    n-th best cosine is below 2e-9: None then (and when n covers every row).
    """
    if n >= cos.size:
        return None
    top = top_k(cos, n)
    if top.size < n or cos[top[-1]] < _TINY:
        return None
    return top


def expand(
    idx: ScopeIndex,
    sim: np.ndarray,
    cfg: GraphConfig,
    allowed: np.ndarray | None,
    cos: np.ndarray | None = None,
    part: np.ndarray | None = None,
) -> Expansion:
    """Seeds (top-n with sim ≥ γ) plus everything within h hops of them.

    Args:
        sim: ``cos + 1`` for every sentence row.
        allowed: boolean mask over sentence rows (time/thread filters), or None.
        cos: optional, the float32 cosines ``sim`` was computed from. The
            seeds' selection then runs over them (half the bytes, the same
            rows: :func:`seed_partition`; with a filter it runs over ``sim``).
        part: optional, :func:`seed_partition` of ``cos`` for ``cfg.seeds``,
            already computed (the hybrid computes it on another thread while
            it works on its other channels); ignored with a filter.
    """
    out = Expansion()
    if sim.size == 0:
        return out
    cand = sim
    if allowed is not None:
        cand = sim.copy()
        cand[~allowed] = -np.inf
    n = min(cfg.seeds, cand.size)
    found: np.ndarray | None = None
    if n >= cand.size:
        found = np.argsort(-cand, kind="stable")  # every row, best first, ties by row
    elif allowed is None:
        found = part if part is not None else seed_partition(cos, n) if cos is not None else None
    top = found if found is not None else top_k(cand, n)  # best first, ties by row
    seeds = [int(r) for r in top if cand[r] >= cfg.gamma and np.isfinite(cand[r])]
    out.seeds = seeds
    queue: deque[int] = deque()
    for r in seeds:
        out.hop[r] = 0
        out.origin[r] = r
        out.rows.append(r)
        queue.append(r)
    # BFS over similarity edges only; membership edges are used for mapping (§1.3 step 4 [C])
    while queue:
        r = queue.popleft()
        h = out.hop[r]
        if h >= cfg.hops:
            continue
        for nb in idx.adjacency[r]:
            if nb in out.hop or (allowed is not None and not allowed[nb]):
                continue
            out.hop[nb] = h + 1
            out.origin[nb] = out.origin[r]
            out.rows.append(nb)
            queue.append(nb)
    return out


def chunk_key(idx: ScopeIndex, msg_row: int, level: str) -> object:
    """The chunk a turn belongs to at ``level``."""
    if level == "turn":
        return msg_row
    if level == "round":
        return ("r", idx.round_ids[msg_row])
    return ("s", idx.threads[msg_row], idx.sessions[msg_row])


def chunk_rows(idx: ScopeIndex, key: object, level: str) -> list[int]:
    """Turn rows of a chunk, in conversation order."""
    if level == "turn":
        return [int(key)]  # type: ignore[call-overload]
    if level == "round":
        rid = key[1]  # type: ignore[index]
        return [int(r) for r in np.flatnonzero(idx.array("round_ids") == rid)]
    thread, session = key[1], key[2]  # type: ignore[index]
    sessions = idx.array("sessions")
    threads = idx.array("threads")
    return [int(r) for r in np.flatnonzero((sessions == session) & (threads == thread))]


def rank_chunks(
    idx: ScopeIndex, sim: np.ndarray, exp: Expansion, level: str, score: str, rest_weight: float
) -> list[tuple[object, float, list[int]]]:
    """Chunks touched by C*, best first: ``(key, score, sentence rows)``.

    ``score="mean"`` is §1.3 step 6; ``"max_plus_rest"`` [D] is
    ``max + rest_weight · mean(others)``.
    """
    members: dict[object, list[int]] = {}
    owners = idx.array("sent_msg")[np.asarray(exp.rows, dtype=np.int64)].tolist() if exp.rows else []
    for r, owner in zip(exp.rows, owners, strict=True):
        members.setdefault(owner if level == "turn" else chunk_key(idx, owner, level), []).append(r)
    ranked = []
    for key, rows in members.items():
        vals = sim[rows]
        if score == "mean":
            s = float(vals.mean())
        else:
            best = float(vals.max())
            rest = (float(vals.sum()) - best) / (len(vals) - 1) if len(vals) > 1 else 0.0
            s = best + rest_weight * rest
        ranked.append((key, s, rows))
    ranked.sort(key=lambda t: -t[1])
    return ranked


def turn_means(idx: ScopeIndex, sim: np.ndarray, exp: Expansion) -> tuple[np.ndarray, np.ndarray]:
    """§1.3 step 6 at turn level, vectorised: the turns C* touches and the mean ``sim`` of their rows in C*.

    The same scores as ``rank_chunks(idx, sim, exp, "turn", "mean", 0.0)`` (sums in C* order).
    """
    if not exp.rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    rows = np.asarray(exp.rows, dtype=np.int64)
    owners = idx.array("sent_msg")[rows]
    # over the few hundred turns C* touches, not the scope's (bincount adds in C* order either way)
    turns, slot = np.unique(owners, return_inverse=True)
    counts = np.bincount(slot, minlength=turns.size)
    sums = np.bincount(slot, weights=sim[rows], minlength=turns.size)
    return turns.astype(np.int64, copy=False), sums / counts


def hop_origins(idx: ScopeIndex, exp: Expansion, turns: list[int]) -> dict[int, tuple[int, int]]:
    """For each of ``turns`` that C* touches: (hop, seed row) of its first sentence in C* at its fewest hops."""
    if not exp.rows or not turns:
        return {}
    rows = np.asarray(exp.rows, dtype=np.int64)
    owners = idx.array("sent_msg")[rows]
    out: dict[int, tuple[int, int]] = {}
    for t in turns:
        mine = rows[owners == t].tolist()
        if mine:
            r0 = min(mine, key=lambda r: exp.hop[r])
            out[t] = (exp.hop[r0], exp.origin[r0])
    return out
