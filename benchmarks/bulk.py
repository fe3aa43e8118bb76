"""Bulk ingest vs its floor: ``Memory.add_many`` against embedding the same texts in one ``embed`` call.

The floor is what no ingest can beat: the distinct texts an ingest embeds
(speaker-prefixed sentences), sent to the real embedder in one call. The
same synthetic conversations (:mod:`benchmarks.synth`, one session of 20
turns per item) are then ingested into a fresh store by ``add_many`` (one
call) and, for reference, by one ``add`` per session. The floor is timed
before and after the ingests and averaged, so load drifting during the run
hits both sides alike; the report gives throughput ratios.

Usage::

    python -m benchmarks.bulk --sentences 2000
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.speed import _texts
from benchmarks.synth import conversation

__all__ = ["measure", "render"]


def measure(n_sentences: int = 2000, embedder: Any = None, workdir: Path | None = None) -> dict[str, Any]:
    """Floor, add_many and per-session add throughput (sentences/s) over the same texts."""
    import sgmem
    from sgmem.embed import default_embedder
    from sgmem.gate.blas import single_thread_blas

    emb = embedder or default_embedder()
    emb.embed(["load the model before timing"])
    items = list(conversation(n_sentences, seed=7))
    texts = list(dict.fromkeys(_texts(items)))  # what an ingest embeds: each distinct text once

    def floor() -> float:
        with single_thread_blas():  # as Memory.add runs (numpy's BLAS threads would slow the model)
            t0 = time.perf_counter()
            emb.embed(texts)
            return time.perf_counter() - t0

    out: dict[str, Any] = {"texts": len(texts), "load_at_start": os.getloadavg()[0]}
    floors = [floor()]
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        with sgmem.Memory(Path(tmp) / "many", embedder=emb) as mem:
            t0 = time.perf_counter()
            res = mem.add_many(items, scope="bulk")
            out["add_many_s"] = time.perf_counter() - t0
        out["sentences"] = sum(r.sentences for r in res)
        floors.append(floor())
        with sgmem.Memory(Path(tmp) / "each", embedder=emb) as mem:
            t0 = time.perf_counter()
            for thread, msgs in items:
                mem.add(msgs, scope="bulk", thread=thread)
            out["per_add_s"] = time.perf_counter() - t0
    floors.append(floor())
    out["floor_s"] = sum(floors) / len(floors)
    out["floor_runs_s"] = floors
    n = out["sentences"]
    out["floor_per_s"] = len(texts) / out["floor_s"]
    out["add_many_per_s"] = n / out["add_many_s"]
    out["per_add_per_s"] = n / out["per_add_s"]
    out["add_many_ratio"] = out["floor_s"] / out["add_many_s"]  # same texts: a time ratio
    out["per_add_ratio"] = out["floor_s"] / out["per_add_s"]
    out["load_at_end"] = os.getloadavg()[0]
    return out


def render(r: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"{r['sentences']:,} sentences ({r['texts']:,} distinct texts), MiniLM; load average "
            f"{r['load_at_start']:.1f} → {r['load_at_end']:.1f}.",
            "",
            "| ingest | seconds | sentences/s | ÷ floor |",
            "|---|---|---|---|",
            f"| floor: one `embed` call of the distinct texts (mean of 3 runs: "
            f"{', '.join(f'{x:.1f}' for x in r['floor_runs_s'])} s) | {r['floor_s']:.1f} | {r['floor_per_s']:.0f} | 1.00× |",
            f"| `Memory.add_many` (one call) | {r['add_many_s']:.1f} | {r['add_many_per_s']:.0f} | "
            f"**{r['add_many_ratio']:.2f}×** |",
            f"| `Memory.add` per session | {r['per_add_s']:.1f} | {r['per_add_per_s']:.0f} | {r['per_add_ratio']:.2f}× |",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    from benchmarks.env import command_line, environment, render_environment

    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--sentences", type=int, default=2000)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = "\n".join(
        [
            "# sgmem bulk ingest",
            "",
            render_environment(environment(), command_line("benchmarks.bulk", argv)),
            "",
            render(measure(args.sentences)),
        ]
    )
    print(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(report + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
