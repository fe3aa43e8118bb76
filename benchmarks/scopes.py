"""Memory and disk with many scopes (a SaaS store: thousands of users with a few messages each).

The ``scopes`` part of ``python -m benchmarks`` (``--scopes 10000``; alone,
``python -m benchmarks.scopes --scopes 10000``) writes ``--per-scope`` messages to each of
``--scopes`` scopes in one process, then searches every scope once from a second,
search-only process, and reports the resident memory (RSS) of both before and after,
per scope, and the store's bytes on disk (per scope, and the gate's state table).
Each variant runs in fresh child processes, in the same run:

- ``default``: ``Config()`` — per-scope caches bounded by ``Config.cache_bytes`` (256 MiB);
- ``unbounded``: ``Config(cache_bytes=2**62)`` — every touched scope stays cached, as
  before the cache had a budget (the baseline);
- ``small budget``: ``Config(cache_bytes=16 MiB)``.

The figure is about the engine, not the model: the embedder is a hashed bag of words
with MiniLM's 384 dimensions (:func:`stand_in`), so 50,000 messages are written in
minutes on two cores instead of being embedded by MiniLM for an hour. Vectors, sentences,
keywords, facts and the gate's state are stored exactly as with MiniLM.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["TITLE", "main", "render", "render_part", "run_part", "run_scopes", "stand_in"]

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024
VARIANTS = {"default": None, "unbounded": 2**62, "small budget": 16 * MIB}
TOPICS = ["hiking", "cello", "sourdough", "marathon", "chess", "pottery", "sailing", "gardening", "jazz", "kayaking"]


def stand_in() -> Any:
    """MiniLM's shape at no model cost: the soak benchmark's hashed bag of words, 384 dimensions."""
    from benchmarks.soak import HashingEmbedder

    return HashingEmbedder(384)


def messages(s: int, per_scope: int) -> list[dict[str, str]]:
    """Scope ``s``'s messages: a short chat with a user-specific name and topic."""
    topic = TOPICS[s % len(TOPICS)]
    lines = [
        f"Hi, I'm user{s}. I have been into {topic} for {s % 9 + 1} years now.",
        f"That's great, user{s}! What do you enjoy most about {topic}?",
        f"Mostly the people. My friend Sam{s % 97} got me started on {topic} in spring.",
        "It sounds like a lovely community to be part of.",
        f"Yes. Next month I plan a {topic} trip to city{s % 53} with my sister.",
    ]
    return [{"role": "user" if j % 2 == 0 else "assistant", "content": lines[j % len(lines)]} for j in range(per_scope)]


def _config(cache_bytes: int | None) -> Any:
    import sgmem

    return sgmem.Config() if cache_bytes is None else sgmem.Config(cache_bytes=cache_bytes)


def _rss() -> int:
    from benchmarks.env import rss_bytes

    return rss_bytes()


def _write(path: str, n: int, per_scope: int, cache_bytes: int | None) -> dict[str, Any]:
    import sgmem

    mem = sgmem.Memory(path, embedder=stand_in(), config=_config(cache_bytes))
    rss0 = _rss()
    t0 = time.perf_counter()
    for s in range(n):
        mem.add(messages(s, per_scope), scope=f"user-{s}", thread="chat")
    secs = time.perf_counter() - t0
    out = {
        "rss_before": rss0,
        "rss_after": _rss(),
        "seconds": secs,
        "cached": len(mem._caches),
        "cached_bytes": mem._caches.nbytes,
    }
    mem.close()
    return out


def _search(path: str, n: int, cache_bytes: int | None) -> dict[str, Any]:
    import sgmem

    mem = sgmem.Memory(path, embedder=stand_in(), config=_config(cache_bytes))
    rss0 = _rss()
    t0 = time.perf_counter()
    found = 0
    for s in range(n):
        hits = mem.search(f"When did user{s} start {TOPICS[s % len(TOPICS)]}?", scope=f"user-{s}", k=3)
        found += any(f"user{s}" in h.text for h in hits)
    secs = time.perf_counter() - t0
    out = {
        "rss_before": rss0,
        "rss_after": _rss(),
        "seconds": secs,
        "found": found,
        "cached": len(mem._caches),
        "cached_bytes": mem._caches.nbytes,
    }
    mem.close()
    return out


def _disk(path: Path) -> dict[str, int]:
    import sqlite3

    from benchmarks.env import dir_bytes

    conn = sqlite3.connect(path / "sgmem.db")
    try:
        gate = conn.execute(
            "SELECT COALESCE(SUM(COALESCE(LENGTH(sum_vec), 0) + COALESCE(LENGTH(pca_mean), 0) + "
            "COALESCE(LENGTH(pca_basis), 0) + COALESCE(LENGTH(pca_lo), 0) + COALESCE(LENGTH(pca_hi), 0) + "
            "COALESCE(LENGTH(ivf_centroids), 0)), 0) FROM gate_state"
        ).fetchone()[0]
    finally:
        conn.close()
    return {"store": dir_bytes(path), "db": (path / "sgmem.db").stat().st_size, "gate_state_blobs": int(gate)}


def _child(kind: str, *args: Any) -> dict[str, Any]:
    """Run ``_write``/``_search`` in a fresh interpreter (clean RSS); its JSON result."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); from benchmarks import scopes; "
        f"print(json.dumps(scopes._{kind}(*json.loads(sys.argv[2]))))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(ROOT), json.dumps(list(args))],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def run_scopes(
    n: int,
    per_scope: int = 5,
    variants: Sequence[str] = tuple(VARIANTS),
    scratch: Path | None = None,
    progress: Any = None,
) -> dict[str, Any]:
    """Write ``n`` scopes × ``per_scope`` messages and search them all, per cache variant."""
    say = progress or (lambda _s: None)
    out: dict[str, Any] = {"scopes": n, "per_scope": per_scope, "embedder": stand_in().name, "variants": {}}
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        for name in variants:
            budget = VARIANTS[name]
            path = Path(tmp) / name.replace(" ", "-")
            say(f"scopes: {name}: writing {n} x {per_scope}")
            w = _child("write", str(path), n, per_scope, budget)
            disk = _disk(path)
            say(f"scopes: {name}: searching {n} scopes")
            r = _child("search", str(path), n, budget)
            out["variants"][name] = {"cache_bytes": budget, "write": w, "search": r, "disk": disk}
    return out


def render(res: dict[str, Any]) -> str:
    """A Markdown table of the run."""
    n = res["scopes"]
    mb = lambda b: b / MIB  # noqa: E731
    kb = lambda b: b / 1024 / n  # noqa: E731
    lines = [
        f"{n:,} scopes × {res['per_scope']} messages, embedder `{res['embedder']}` (a 384-d hashed stand-in for "
        "MiniLM: the figures are the engine's). Each process is a fresh interpreter; RSS in MiB, per scope in KiB.",
        "",
        "| caches | writer RSS before → after | per scope | search-only RSS before → after | per scope "
        "| cache entries (estimated MiB) | database | per scope | gate state per scope | FAISS cache files | found |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for v in res["variants"].values():
        w, r, d = v["write"], v["search"], v["disk"]
        budget = (
            "256 MiB (default)"
            if v["cache_bytes"] is None
            else ("unbounded" if v["cache_bytes"] >= 2**60 else f"{mb(v['cache_bytes']):.0f} MiB")
        )
        lines.append(
            f"| {budget} | {mb(w['rss_before']):.0f} → {mb(w['rss_after']):.0f} | "
            f"{kb(w['rss_after'] - w['rss_before']):.1f} | {mb(r['rss_before']):.0f} → {mb(r['rss_after']):.0f} | "
            f"{kb(r['rss_after'] - r['rss_before']):.1f} | {r['cached']:,} ({mb(r['cached_bytes']):.0f}) | "
            f"{mb(d['db']):.0f} MiB | {kb(d['db']):.1f} KiB | {kb(d['gate_state_blobs']):.2f} KiB | "
            f"{mb(d['store'] - d['db']):.0f} MiB | {r['found']:,}/{n:,} |"
        )
    w0 = next(iter(res["variants"].values()))["write"]
    lines += [
        "",
        f"Writing took {w0['seconds']:.0f} s ({w0['seconds'] / n * 1e3:.1f} ms per scope) in the first variant.",
    ]
    return "\n".join(lines)


TITLE = "Many scopes: memory and disk"


def run_part(ctx: Any) -> dict[str, Any]:
    return run_scopes(ctx.args.scopes, scratch=ctx.out, progress=ctx.progress)


HOW = (
    "A store with many users and a few messages each: every scope is written in one process, then every scope "
    "is searched once from a second, search-only process, each a fresh interpreter, for three cache budgets in "
    "the same run: the default `Config.cache_bytes` (256 MiB), a small one (16 MiB), and unbounded caches (the "
    "baseline: every touched scope stays cached). The cache budget bounds an estimate of the caches' bytes, "
    "not RSS."
)


def render_part(raw: dict[str, Any]) -> str:
    return HOW + "\n\n" + render(raw)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scopes", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--scopes", type=int, default=10_000)
    p.add_argument("--per-scope", type=int, default=5)
    p.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    p.add_argument("--json", default=None, help="also write the raw result here")
    args = p.parse_args(argv)
    res = run_scopes(args.scopes, args.per_scope, args.variants, progress=lambda s: print(s, file=sys.stderr))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1), encoding="utf-8")
    print(render(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
