"""Resident memory per stored sentence, and what each search mode's first use adds (issue 14).

``python -m benchmarks.resident --workdir DIR --size N`` opens ``DIR/store-N``
(a ``benchmarks.scale`` store: pass a *copy*) in a fresh process and warms
the modes one after another (hybrid, vector, graph, bm25, pyramid, sgrm),
recording the process RSS (and, with ``--tracemalloc``, the Python heap)
after each. Two baselines:

* **cold** (the figure ``benchmarks.scale`` reported before): RSS before the
  store is opened, so the ~55 MB of libraries a first search loads (bm25s,
  tiktoken, scipy, the stemmer…) count as "per sentence";
* **warm** (the fair figure): RSS after :func:`warm_libraries` ran every mode
  on a tiny in-memory scope of the same process, so only what the stored
  sentences cost is divided by their count.
"""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks.env import rss_bytes

__all__ = ["MODES", "warm_libraries", "resident"]

#: the order in which modes are warmed (the default mode first)
MODES = ("hybrid", "vector", "graph", "bm25", "pyramid", "sgrm")


def warm_libraries(embedder: Any) -> None:
    """Run every mode once on a tiny in-memory scope: loads the libraries a first search imports."""
    import sgmem

    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    with sgmem.Memory(embedder=embedder, config=sgmem.Config(min_relevance=0.0)) as mem:
        for i, text in enumerate(["I baked rye bread on Sunday.", "The kitten sleeps on the radiator."]):
            mem.add([{"role": "user", "content": text}], scope="warm-up", thread="t", at=t0 + timedelta(hours=i))
        for mode in MODES:
            mem.search("warm up", scope="warm-up", k=3, mode=mode)
    gc.collect()


def resident(path: Path, trace: bool = False) -> dict[str, Any]:
    import sgmem
    from benchmarks.scale import _Timed
    from benchmarks.speed import SCOPE

    emb = _Timed()
    emb.fixed["warm up"] = emb.base.embed(["warm up"])[0]
    gc.collect()
    out: dict[str, Any] = {"rss_cold": rss_bytes()}
    warm_libraries(emb)
    out["rss_warm"] = rss_bytes()
    if trace:
        tracemalloc.start()
    prev_rss, prev_py = out["rss_warm"], 0
    with sgmem.Memory(path, embedder=emb) as mem:
        for mode in MODES:
            mem.search("warm up", scope=SCOPE, k=10, mode=mode)
            gc.collect()
            rss = rss_bytes()
            py = tracemalloc.get_traced_memory()[0] if trace else 0
            out[f"{mode}_rss_added"], out[f"{mode}_py_added"] = rss - prev_rss, py - prev_py
            prev_rss, prev_py = rss, py
        idx = next(iter(mem._indexes.values()))
        n = idx.n_sentences
        out["sentences"] = n
        out["nbytes"] = idx.nbytes()
        if trace:
            snap = tracemalloc.take_snapshot()
            out["top_python"] = [
                f"{s.size / n:.0f} B/sentence {s.traceback.format()[-1].strip()}"
                for s in snap.statistics("lineno")[:15]
            ]
        out["rss_final"] = rss_bytes()
    out["per_sentence_cold"] = (out["rss_final"] - out["rss_cold"]) / n
    out["per_sentence_warm"] = (out["rss_final"] - out["rss_warm"]) / n
    for mode in MODES:
        out[f"{mode}_per_sentence"] = out[f"{mode}_rss_added"] / n
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--workdir", type=Path, required=True)
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--tracemalloc", action="store_true", help="also the Python heap by mode (slower)")
    args = p.parse_args(argv)
    r = resident(args.workdir / f"store-{args.size}", trace=args.tracemalloc)
    print(json.dumps(r, indent=1))


if __name__ == "__main__":
    main()
