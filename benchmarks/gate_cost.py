"""Cost of one novelty-gate decision against N memories, vs a dense top-1 FAISS search of the same N.

The gate (``sgmem.gate``, SAGE) scores a candidate against every memory of
its scope (exact vMF kernel score, O(N·d)) or against the top-k of an IVF
index plus the running sum (approximate). The baseline is the least any
write path that looks at existing memories pays: one exact top-1 search
(``faiss.IndexFlatIP``) of the same vectors. Like for like, both on one
thread: one decision's scores (a matrix-vector product) on one BLAS thread
(``single_thread_blas``), the search on one OpenMP thread. The write step's threshold update (``begin_step``: PCA
density refit when due, τ) is timed apart.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

__all__ = ["gate_decision_cost"]


def _p(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def gate_decision_cost(memories: np.ndarray, candidates: np.ndarray) -> dict[str, Any] | None:
    """Per-candidate decision time (µs) of the exact and approximate gate, and of a flat top-1 search.

    Returns ``None`` when ``sgmem.gate`` is not available.
    """
    try:
        import faiss

        from sgmem.gate import GateConfig, GateState, NoveltyGate, estimate_kappa
        from sgmem.gate.blas import single_thread_blas
    except ImportError:
        return None
    memories = np.ascontiguousarray(memories, dtype=np.float32)
    n, dim = memories.shape
    out: dict[str, Any] = {"memories": n}

    def state_for(gate: Any) -> Any:
        st = GateState(dim=dim, pca_dim=gate.config.pca_dim)
        st.load_facts(list(range(n)), memories)
        st.sum_vec = memories.astype(np.float64).sum(axis=0)
        st.kappa = estimate_kappa(st.sum_vec, n, dim, gate.config.kappa_min, gate.config.kappa_max)
        return st

    for scorer in ("exact", "approx"):
        if scorer == "approx" and n < 2:
            continue
        gate = NoveltyGate(GateConfig(scorer=scorer))  # type: ignore[arg-type]
        st = state_for(gate)
        if scorer == "approx":
            t = time.perf_counter()
            gate.attach_index(st, None, 0)
            out["approx_index_build_s"] = time.perf_counter() - t
        view = gate.fork(st)
        t = time.perf_counter()
        gate.begin_step(view)
        out[f"{scorer}_step_ms"] = (time.perf_counter() - t) * 1e3
        lat, actions = [], []
        with single_thread_blas():
            for c in candidates:
                t = time.perf_counter()
                d = gate.decide(view, c)
                lat.append((time.perf_counter() - t) * 1e6)
                actions.append(d.action)
        out[f"{scorer}_p50_us"], out[f"{scorer}_p95_us"] = _p(lat, 0.5), _p(lat, 0.95)
        out[f"{scorer}_actions"] = {a: actions.count(a) for a in ("add", "update", "noop")}
    flat = faiss.IndexFlatIP(dim)
    flat.add(memories)
    omp = faiss.omp_get_max_threads()
    lat = []
    try:
        faiss.omp_set_num_threads(1)  # one thread, as the decisions above
        for c in candidates:
            t = time.perf_counter()
            flat.search(np.asarray(c, dtype=np.float32).reshape(1, -1), 1)
            lat.append((time.perf_counter() - t) * 1e6)
    finally:
        faiss.omp_set_num_threads(omp)
    out["flat_p50_us"], out["flat_p95_us"] = _p(lat, 0.5), _p(lat, 0.95)
    out["flat_config"] = "1 thread, as the gate"
    return out
