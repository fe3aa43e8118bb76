"""Soak: resident memory (RSS) over a long ingest, then in a steady state.

Phase ``grow`` adds ``--turns`` turns (default 50,000) in adds of ``--per-add``
turns, with a search after every add (modes in turn) and a context block every
tenth add: RSS should grow with what the store holds (vectors, postings), not
with how many calls were made. Phase ``steady`` keeps the store's size fixed —
every ``--delete-every`` adds, the oldest adds are deleted (in one call)
down to ``--turns`` — for ``--steady`` more turns: here RSS must plateau, and its
slope is the leak rate. (A delete makes the next call rebuild the scope's
index from SQLite, in time linear in the scope's size, so deleting after
every add would measure rebuilds, not leaks.) Phase
``reopen`` closes the store and opens it again (the index reloads from its
caches).

Run::

    python -m benchmarks.soak                  # fast hashing embedder, about an hour on 2 cores
    python -m benchmarks.soak --real           # MiniLM, much slower
    python -m benchmarks.soak --turns 5000 --steady 2000 --sample 500   # a quick look

Prints the RSS curve as a table and writes ``soak-rss.json`` and
``soak-rss.png`` to ``--out`` (default ``benchmarks/out/``, git-ignored).
The fast embedder is a hashed bag of words (64 dims): it exercises every
store, index and retrieval structure; only the embedding model's own memory
is left out (``--real`` includes it).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import sgmem
from benchmarks.env import command_line, dir_bytes, environment, render_environment, rss_bytes
from benchmarks.synth import conversation

__all__ = ["HashingEmbedder", "main", "soak"]

_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """Hashed bag of words, unit-normalised: deterministic and model-free."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = f"soak-hash-bow-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in _WORD.findall(text.lower()) or [text]:
                h = int.from_bytes(
                    hashlib.blake2b(tok.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little"
                )
                out[i, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
            norm = float(np.linalg.norm(out[i]))
            if norm:
                out[i] /= norm
            else:
                out[i, 0] = 1.0
        return out


def _adds(per_add: int, seed: int) -> Any:
    """An endless stream of (thread, messages) adds of ``per_add`` turns."""
    while True:
        yield from conversation(10**9, seed=seed, per_add=per_add)


def soak(
    turns: int = 50_000,
    steady: int = 20_000,
    per_add: int = 10,
    delete_every: int = 50,
    sample: int = 2_500,
    real: bool = False,
    path: Path | None = None,
    progress: Any = None,
) -> dict[str, Any]:
    """Run the soak; return the RSS samples and summary figures."""
    embedder: Any = sgmem.embed.default_embedder() if real else HashingEmbedder()
    tmp = None
    if path is None:
        tmp = tempfile.TemporaryDirectory(prefix="sgmem-soak-")
        path = Path(tmp.name) / "store"
    modes = tuple(m for m in sgmem.MODES if m != "entity")  # the entity layer is opt-in (off here)
    samples: list[dict[str, Any]] = []
    processed = stored = calls = 0
    t_start = time.perf_counter()
    mem = sgmem.Memory(path, embedder=embedder)
    add_ms: list[float] = []

    def record(phase: str) -> None:
        gc.collect()
        row = {
            "phase": phase,
            "turns_processed": processed,
            "turns_stored": stored,
            "rss_mb": round(rss_bytes() / 2**20, 1),
            "store_mb": round(dir_bytes(path) / 2**20, 1),
            "ms_per_add": round(float(np.mean(add_ms)) if add_ms else 0.0, 1),
            "seconds": round(time.perf_counter() - t_start, 1),
        }
        add_ms.clear()
        samples.append(row)
        if progress:
            progress(row)

    added: list[tuple[str, ...]] = []  # message ids of each add, oldest first
    stream = _adds(per_add, seed=7)
    record("start")
    next_sample = sample
    try:
        for phase, target in (("grow", turns), ("steady", turns + steady)):
            while processed < target:
                thread, msgs = next(stream)
                thread = f"{thread}-{processed}"  # the stream repeats after 10**9 sentences; keep threads unique
                t0 = time.perf_counter()
                res = mem.add(msgs, scope="soak", thread=thread)
                add_ms.append((time.perf_counter() - t0) * 1e3)
                added.append(res.message_ids)
                processed += len(msgs)
                stored += len(msgs)
                calls += 1
                query = msgs[0]["content"].split(".")[0]
                mem.search(query, scope="soak", k=10, mode=modes[calls % len(modes)])
                if calls % 10 == 0:
                    mem.context(query, scope="soak", budget_tokens=500)
                if phase == "steady" and calls % delete_every == 0:
                    doomed: list[str] = []
                    while stored - len(doomed) > turns:
                        doomed.extend(added.pop(0))
                    if doomed:  # one call: a delete costs time linear in the scope's size, whatever it removes
                        stored -= mem.delete(scope="soak", message_ids=doomed).messages
                if processed >= next_sample:
                    record(phase)
                    next_sample += sample
        mem.close()
        mem = sgmem.Memory(path, embedder=embedder)
        mem.search("a trip to Lisbon", scope="soak", k=10)
        record("reopen")
    finally:
        mem.close()
        if tmp is not None:
            tmp.cleanup()

    def slope(phase: str) -> float:
        rows = [r for r in samples if r["phase"] == phase]
        if len(rows) < 3:
            return float("nan")
        half = rows[len(rows) // 3 :]  # skip the first third: allocator warm-up
        x = np.array([r["turns_processed"] for r in half], dtype=np.float64)
        y = np.array([r["rss_mb"] for r in half], dtype=np.float64)
        return float(np.polyfit(x, y, 1)[0] * 10_000)

    grow = [r for r in samples if r["phase"] == "grow"]
    return {
        "embedder": embedder.name,
        "turns": turns,
        "steady": steady,
        "per_add": per_add,
        "delete_every": delete_every,
        "samples": samples,
        "grow_mb_per_10k_turns": round(slope("grow"), 2),
        "steady_mb_per_10k_turns": round(slope("steady"), 2),
        "rss_start_mb": samples[0]["rss_mb"],
        "rss_end_of_grow_mb": grow[-1]["rss_mb"] if grow else None,
        "rss_peak_mb": max(r["rss_mb"] for r in samples),
    }


def _plot(result: dict[str, Any], out: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the plots extra is optional
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for phase, colour in (("grow", "tab:blue"), ("steady", "tab:orange"), ("reopen", "tab:green")):
        rows = [r for r in result["samples"] if r["phase"] in (phase, "start" if phase == "grow" else "")]
        if rows:
            ax.plot(
                [r["turns_processed"] for r in rows], [r["rss_mb"] for r in rows], "o-", ms=3, color=colour, label=phase
            )
    ax.set_xlabel("turns processed (added; in 'steady' each add also deletes the oldest thread)")
    ax.set_ylabel("RSS (MiB)")
    ax.set_title(f"sgmem soak: {result['turns']:,} turns + {result['steady']:,} steady, {result['embedder']}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    png = out / "soak-rss.png"
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return png


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=50_000, help="turns added in the grow phase")
    p.add_argument("--steady", type=int, default=20_000, help="turns added (and as many deleted) in the steady phase")
    p.add_argument("--per-add", type=int, default=10, help="turns per add")
    p.add_argument("--delete-every", type=int, default=50, help="steady phase: delete down to --turns every N adds")
    p.add_argument("--sample", type=int, default=2_500, help="sample RSS every this many turns")
    p.add_argument("--real", action="store_true", help="use the MiniLM embedder")
    p.add_argument("--path", default=None, help="store directory (default: a temporary one)")
    p.add_argument("--out", default=str(Path(__file__).with_name("out")), help="where to write JSON and PNG")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print("| phase | turns processed | turns stored | RSS MiB | store MiB | ms/add | s |")
    print("|---|---:|---:|---:|---:|---:|---:|")

    partial: list[dict[str, Any]] = []

    def show(r: dict[str, Any]) -> None:
        print(
            f"| {r['phase']} | {r['turns_processed']:,} | {r['turns_stored']:,} | {r['rss_mb']} | {r['store_mb']} "
            f"| {r['ms_per_add']} | {r['seconds']} |",
            flush=True,
        )
        partial.append(r)  # a long run stopped early still leaves its curve behind
        (out / "soak-rss.partial.json").write_text(json.dumps(partial, indent=2), encoding="utf-8")

    result = soak(
        args.turns,
        args.steady,
        args.per_add,
        args.delete_every,
        args.sample,
        args.real,
        Path(args.path) if args.path else None,
        show,
    )
    result["environment"] = environment()
    result["command"] = command_line("benchmarks.soak", argv)
    print(
        f"\nRSS: start {result['rss_start_mb']} MiB, end of grow {result['rss_end_of_grow_mb']} MiB, "
        f"peak {result['rss_peak_mb']} MiB; slope while growing {result['grow_mb_per_10k_turns']} MiB / 10k turns, "
        f"in steady state {result['steady_mb_per_10k_turns']} MiB / 10k turns"
    )
    print(render_environment(result["environment"], result["command"]))
    (out / "soak-rss.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    png = _plot(result, out)
    print(f"wrote {out / 'soak-rss.json'}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
