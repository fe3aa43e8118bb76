"""A many-core host's engine, without a model: query latency by scan threads vs FAISS flat, and an add's cost by write setting.

:mod:`benchmarks.gpu` measures a GPU host end to end. This probe isolates the
engine on such a host (no GPU needed): a scope of ``--size`` sentences is
built from LoCoMo dev sessions (speakers renamed per pass, as in
:mod:`benchmarks.gpu`) with the hashing stand-in embedder of
:mod:`benchmarks.scale`, then in one process

* query latency (the stand-in's query vectors are precomputed: engine only)
  of ``vector`` and ``hybrid`` with ``Config.dense_scan_threads`` 1, 4, 8, 16
  (those the host has), against FAISS ``IndexFlatIP`` top-10 over the same
  vectors on one OpenMP thread and on all (each in a pass of its own); at
  the default thread count also the hybrid with its scan cut into 4 parts
  per thread, and with the scan not overlapped with the lexical and keyword
  channels (``SCAN_PARTS_PER_THREAD``, :class:`sgmem.retrieval.dense.ScanJob`);
* the dense scan alone (:func:`sgmem.retrieval.dense.scan`) per thread count;
* with ``--dense-device`` (default ``cuda`` when PyTorch sees a GPU), ``vector``
  and ``hybrid`` with ``Config(dense_device=...)`` and that scan alone
  (:class:`sgmem.retrieval.device.DeviceScanJob`);
* the engine wall time of 29 adds of the next sessions (after one untimed
  add that loads the scope's state) on a copy of the scope, for the default
  write path, without its early kNN search and background checkpoints
  (``GraphConfig(knn_early=False)``, ``Config(wal_checkpoint_background=False)``),
  with the early kNN search on one thread (``GraphConfig(knn_early_threads=1)``;
  by default the scan threads but one),
  with ``dense_scan_threads=1`` (no threaded kNN search) and additionally
  with ``GraphConfig(knn_background=False)`` (everything on the adding
  thread, the HNSW insertion included); twice, alternating.

Usage (on the host, with the wheels of :mod:`benchmarks.gpu`'s notes)::

    python -m benchmarks.host_probe --size 100000 --data locomo-dev.json --workdir /tmp/probe
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["main", "run"]


def run(size: int, data: str, workdir: Path, queries: int, adds: int, dense_device: str | None = None) -> list[str]:
    import faiss

    import sgmem
    from benchmarks.scale import _Timed
    from benchmarks.speed import _pct, _queries
    from benchmarks.write_path import _build, _workload
    from sgmem.retrieval import dense
    from sgmem.retrieval import search as search_mod

    out: list[str] = []
    store = workdir / f"locomo-{size}"
    store.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if not (store / "adds.json").exists():
        _build(store, "locomo", data, size)
    out.append(
        f"host: {os.cpu_count()} cores, faiss {faiss.__version__} ({faiss.omp_get_max_threads()} OpenMP threads)"
    )
    out.append(f"scope: {json.loads((store / 'adds.json').read_text())}, built in {time.perf_counter() - t0:.0f} s")
    emb = _Timed()
    qs = _queries(queries)
    for q in [*qs, "warm up"]:
        emb.fixed[q] = emb.base.embed([q])[0]
    threads = [t for t in (1, 4, 8, 16) if t <= (os.cpu_count() or 1)]
    mems: dict[Any, Any] = {
        t: sgmem.Memory(store, embedder=emb, config=sgmem.Config(dense_scan_threads=t)) for t in threads
    }
    if dense_device is not None:  # the exact scan on an accelerator (Config.dense_device)
        mems[f"dense_device={dense_device}"] = sgmem.Memory(
            store, embedder=emb, config=sgmem.Config(dense_device=dense_device, dense_scan_min_sentences=0)
        )
    try:
        for m in mems.values():
            for mode in ("vector", "hybrid"):
                m.search("warm up", scope="s", k=10, mode=mode)
        idx = next(iter(mems[threads[0]]._indexes.values()))
        flat = faiss.IndexFlatIP(idx.dim)
        flat.add(np.ascontiguousarray(idx.sentence_vectors()))
        omp = faiss.omp_get_max_threads()
        lat: dict[str, list[float]] = {}

        def flat_pass(n_threads: int) -> None:
            faiss.omp_set_num_threads(n_threads)
            for q in qs:
                t = time.perf_counter()
                flat.search(emb.fixed[q].reshape(1, -1), 10)
                lat.setdefault(f"FAISS flat, {n_threads} thread(s)", []).append((time.perf_counter() - t) * 1e3)

        # the hybrid's scan on the pool while its lexical and keyword channels run (the default, cut into
        # SCAN_PARTS_PER_THREAD parts per thread), cut into one part per thread, and not overlapped at all
        wide = dense.scan_threads(sgmem.Config(dense_scan_min_sentences=0), 1)  # the default thread count
        default_parts = search_mod.SCAN_PARTS_PER_THREAD
        variants = {"": (default_parts, True), ", 4 parts each": (4, True), ", not overlapped": (default_parts, False)}

        flat_pass(1)
        faiss.omp_set_num_threads(omp)
        for q in qs:  # round robin per question
            for th, m in mems.items():
                for mode in ("vector", "hybrid"):
                    for label, (parts, overlap) in (
                        variants.items() if mode == "hybrid" and th == wide else [("", (default_parts, None))]
                    ):
                        search_mod.SCAN_PARTS_PER_THREAD = parts if overlap is not None else default_parts
                        exact = m._retriever._scans_exactly
                        if overlap is False:
                            m._retriever._scans_exactly = lambda idx: False  # type: ignore[method-assign]
                        t = time.perf_counter()
                        m.search(q, scope="s", k=10, mode=mode)
                        name = f"{mode}, {th}" if isinstance(th, str) else f"{mode}, {th} scan thread(s){label}"
                        lat.setdefault(name, []).append((time.perf_counter() - t) * 1e3)
                        m._retriever._scans_exactly = exact  # type: ignore[method-assign]
        search_mod.SCAN_PARTS_PER_THREAD = default_parts
        flat_pass(omp)  # its own pass: its idle OpenMP workers spin after each search
        faiss.omp_set_num_threads(omp)
        best = min(_pct(v, 0.5) for k, v in lat.items() if k.startswith("FAISS"))
        out.append(f"query latency, engine only, {len(qs)} queries, k = 10 (ms; ratio to the faster FAISS flat p50):")
        for k, v in lat.items():
            out.append(f"  {k:44s} p50 {_pct(v, 0.5):7.2f}  p95 {_pct(v, 0.95):7.2f}  {_pct(v, 0.5) / best:5.2f}x")
        q0 = emb.fixed[qs[0]]
        for th in threads:
            ts = []
            for _ in range(40):
                t = time.perf_counter()
                dense.scan(idx, q0, th, True)
                ts.append((time.perf_counter() - t) * 1e3)
            out.append(f"  dense scan with turn reductions, {th:2d} thread(s): p50 {_pct(ts, 0.5):6.2f} ms")
        if dense_device is not None:
            from sgmem.retrieval.device import DeviceScanJob

            ts = []
            for _ in range(40):
                t = time.perf_counter()
                DeviceScanJob(idx, q0, dense_device).result()
                ts.append((time.perf_counter() - t) * 1e3)
            out.append(f"  dense scan with turn reductions, dense_device={dense_device}: p50 {_pct(ts, 0.5):6.2f} ms")
    finally:
        for m in mems.values():
            m.close()
    done = json.loads((store / "adds.json").read_text())["adds"]
    todo = _workload("locomo", data, size + 10_000)[done : done + adds + 1]
    cfgs: dict[str, Any] = {
        "default": sgmem.Config(),
        "knn_early=False, wal_checkpoint_background=False": sgmem.Config(
            wal_checkpoint_background=False, graph=sgmem.GraphConfig(knn_early=False)
        ),
        "knn_early_threads=1": sgmem.Config(graph=sgmem.GraphConfig(knn_early_threads=1)),
        "dense_scan_threads=1": sgmem.Config(dense_scan_threads=1),
        "dense_scan_threads=1, knn_background=False": sgmem.Config(
            dense_scan_threads=1, graph=sgmem.GraphConfig(knn_background=False)
        ),
    }
    out.append(f"adds: {adds} sessions after one untimed add, engine wall µs/sentence (embedder excluded):")
    for rep in range(2):
        for name, cfg in cfgs.items():
            cp = workdir / "copy"
            shutil.rmtree(cp, ignore_errors=True)
            shutil.copytree(store, cp)
            e2 = _Timed()
            n, eng, stages = 0, 0.0, {}  # type: ignore[var-annotated]
            with sgmem.Memory(cp, embedder=e2, config=cfg) as m:
                m.search("warm up", scope="s", k=1)
                m.add(todo[0][1], scope="s", thread=todo[0][0])
                for thread, msgs in todo[1:]:
                    e0, t = e2.seconds, time.perf_counter()
                    r = m.add(msgs, scope="s", thread=thread)
                    eng += time.perf_counter() - t - (e2.seconds - e0)
                    n += r.sentences
                    for key, v in r.timings_ms.items():
                        stages[key] = stages.get(key, 0.0) + v
            shutil.rmtree(cp, ignore_errors=True)
            out.append(
                f"  round {rep + 1}, {name:50s} {eng / n * 1e6:5.0f}  (stage ms/add: "
                + ", ".join(f"{k} {v / len(todo[1:]):.1f}" for k, v in stages.items())
                + ")"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.host_probe", description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--data", default="/work/shared/data/locomo/locomo-dev.json", help="LoCoMo JSON (the dev split)")
    ap.add_argument("--workdir", required=True, help="the built scope is kept here and reused")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--adds", type=int, default=29)
    ap.add_argument(
        "--dense-device",
        default=None,
        help="also time vector and hybrid with Config(dense_device=...) (default: 'cuda' when PyTorch sees a GPU; "
        "'none' skips)",
    )
    a = ap.parse_args(argv)
    device = a.dense_device
    if device is None:
        try:
            import torch

            device = "cuda" if torch.cuda.is_available() else None
        except ImportError:
            device = None
    print("\n".join(run(a.size, a.data, Path(a.workdir), a.queries, a.adds, None if device == "none" else device)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
