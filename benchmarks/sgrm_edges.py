"""SGRM's segment-graph build: exact vs HNSW similarity edges (issue 14), cost and edge recall.

``python -m benchmarks.sgrm_edges --npz FILE`` takes real MiniLM vectors (an
:class:`sgmem.eval.CachingEmbedder` ``.npz``, e.g. of the LoCoMo dev split)
and builds the similarity edges of :mod:`sgmem.retrieval.sgrm` both ways over
the vectors as they are and over segment-like vectors (normalised sums of
5 consecutive ones). ``--store DIR`` opens a ``benchmarks.scale`` store
(``DIR/store-N``: pass a *copy*) and builds the scope's segment graph with
``knn_index="exact"`` and ``"hnsw"``, timing each.

Edge recall: of the ``k`` exact "most similar earlier segment" edges of each
segment, the share the approximate build also found; tie-aware (an
approximate neighbour counts when its cosine reaches the k-th exact one, as
:func:`benchmarks.scale.edge_recall`) and by identical ids.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.env import rss_bytes

__all__ = ["recall", "run_vectors", "run_store"]


def recall(vecs: np.ndarray, exact: np.ndarray, approx: np.ndarray, k: int) -> dict[str, float]:
    """Tie-aware and same-id recall of the ``approx`` (i, j) pairs against the ``exact`` ones."""
    n = len(vecs)
    cos_e = np.einsum("ij,ij->i", vecs[exact[:, 0]], vecs[exact[:, 1]])
    kth = np.full(n, np.inf, dtype=np.float64)
    np.minimum.at(kth, exact[:, 0], cos_e)
    cos_a = np.einsum("ij,ij->i", vecs[approx[:, 0]], vecs[approx[:, 1]])
    tied = int((cos_a >= kth[approx[:, 0]] - 1e-6).sum())
    key_e = set((exact[:, 0] * n + exact[:, 1]).tolist())
    same = sum(1 for x in (approx[:, 0] * n + approx[:, 1]).tolist() if x in key_e)
    earlier = bool((approx[:, 1] < approx[:, 0]).all())
    return {
        "recall": min(tied, len(exact)) / max(len(exact), 1),
        "recall_ids": same / max(len(exact), 1),
        "only_earlier": float(earlier),
        "edges": float(len(exact)),
    }


def _both(vecs: np.ndarray, cfg: Any) -> dict[str, float]:
    from sgmem.retrieval.sgrm import approximate_edges, exact_edges

    t0 = time.perf_counter()
    ex = exact_edges(vecs, cfg.knn_k)
    t_exact = time.perf_counter() - t0
    t0 = time.perf_counter()
    ap = approximate_edges(vecs, cfg.knn_k, cfg.knn_hnsw_m, cfg.knn_hnsw_ef_construction, cfg.knn_hnsw_ef_search)
    t_ann = time.perf_counter() - t0
    return {"n": float(len(vecs)), "exact_s": t_exact, "hnsw_s": t_ann, **recall(vecs, ex, ap, cfg.knn_k)}


def run_vectors(path: Path, cfg: Any) -> dict[str, Any]:
    vecs = np.ascontiguousarray(np.load(path)["vecs"], dtype=np.float32)
    n5 = len(vecs) // 5
    seg = vecs[: n5 * 5].astype(np.float64).reshape(n5, 5, -1).sum(axis=1)
    seg = (seg / np.linalg.norm(seg, axis=1, keepdims=True)).astype(np.float32)
    return {"raw": _both(vecs, cfg), "windows_of_5": _both(seg, cfg)}


def run_store(workdir: Path, size: int, cfg: Any) -> dict[str, Any]:
    import sgmem
    from benchmarks.speed import SCOPE
    from sgmem.retrieval.sgrm import build_segments

    from .scale import _Timed

    out: dict[str, Any] = {}
    with sgmem.Memory(workdir / f"store-{size}", embedder=_Timed()) as mem:
        sid = mem._store.scope_id(SCOPE)
        assert sid is not None, f"no scope {SCOPE!r} in this store"
        idx = mem._index(sid)
        for mode in ("exact", "hnsw"):  # the whole build (windows, vectors, edges, CSR) as mode="sgrm" runs it
            gc.collect()
            r0 = rss_bytes()
            t0 = time.perf_counter()
            g = build_segments(idx, dataclasses.replace(cfg, knn_index=mode))
            out[f"{mode}_build_s"] = time.perf_counter() - t0
            out[f"{mode}_rss_growth_mb"] = (rss_bytes() - r0) / 2**20
            out[f"{mode}_nbytes_per_sentence"] = g.nbytes() / idx.n_sentences
            out[f"{mode}_edges"] = int(len(g.indices))
            del g
        out["sentences"], out["segments"] = idx.n_sentences, len(g := build_segments(idx, cfg))
        edges = _both(g.vecs, cfg)
        out.update({f"edges_{k}": v for k, v in edges.items()})
    return out


def run_scaling(workdir: Path, size: int, cfg: Any, sizes: list[int], exact_max: int, sample: int = 1000) -> list[Any]:
    """Edge build cost vs node count, the store's *sentence* vectors standing in for segments (1M sentences
    make about 178k segments): HNSW at every size, exact up to ``exact_max``; recall on ``sample`` nodes."""
    import sgmem
    from benchmarks.speed import SCOPE
    from sgmem.retrieval.sgrm import approximate_edges, exact_edges

    from .scale import _Timed

    with sgmem.Memory(workdir / f"store-{size}", embedder=_Timed()) as mem:
        sid = mem._store.scope_id(SCOPE)
        assert sid is not None, f"no scope {SCOPE!r} in this store"
        allv = np.ascontiguousarray(mem._index(sid).sentence_vectors()).copy()
    rows = []
    rng = np.random.default_rng(0)
    for n in sizes:
        vecs = allv[:n]
        row: dict[str, Any] = {"nodes": n}
        t0 = time.perf_counter()
        ap = approximate_edges(vecs, cfg.knn_k, cfg.knn_hnsw_m, cfg.knn_hnsw_ef_construction, cfg.knn_hnsw_ef_search)
        row["hnsw_s"] = time.perf_counter() - t0
        if n <= exact_max:
            t0 = time.perf_counter()
            exact_edges(vecs, cfg.knn_k)
            row["exact_s"] = time.perf_counter() - t0
        # exact top-k earlier of a sample of nodes (the recall's reference)
        pick = np.sort(rng.choice(np.arange(cfg.knn_k + 1, n), size=min(sample, n - cfg.knn_k - 1), replace=False))
        ex = []
        for i in pick.tolist():
            top = np.argsort(-(vecs[:i] @ vecs[i]))[: cfg.knn_k]
            ex += [(i, int(j)) for j in top]
        mine = ap[np.isin(ap[:, 0], pick)]
        row.update(recall(vecs, np.asarray(ex, dtype=np.int64), mine, cfg.knn_k))
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    from sgmem.config import SGRMConfig

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--npz", type=Path)
    p.add_argument("--store", type=Path, help="a benchmarks.scale workdir holding store-SIZE (a copy)")
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--k", type=int, default=SGRMConfig().knn_k)
    p.add_argument("--scaling", type=int, nargs="*", help="node counts for run_scaling (needs --store)")
    p.add_argument("--exact-max", type=int, default=40_000)
    args = p.parse_args(argv)
    cfg = SGRMConfig(knn_k=args.k)
    res: dict[str, Any] = {}
    if args.npz:
        res["vectors"] = run_vectors(args.npz, cfg)
    if args.store and args.scaling:
        res["scaling"] = run_scaling(args.store, args.size, cfg, args.scaling, args.exact_max)
    elif args.store:
        res["store"] = run_store(args.store, args.size, cfg)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
