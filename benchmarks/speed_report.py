"""Markdown tables and the log–log plot of :mod:`benchmarks.speed` results."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

__all__ = ["growth", "plot", "render"]

Results = dict[int, dict[str, Any]]


def _measured(results: Results) -> list[dict[str, Any]]:
    return [results[n] for n in sorted(results) if "skipped" not in results[n]]


def _modes(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    return [k[: -len("_p50")] for k in rows[0] if k.endswith("_p50") and not k.startswith("dense")]


def _get(row: dict[str, Any], key: str) -> float | None:
    """``row[key]``, reaching into ``row["gate"]`` for ``gate.<name>`` keys."""
    if key.startswith("gate."):
        gate = row.get("gate") or {}
        v = gate.get(key[5:])
    else:
        v = row.get(key)
    return float(v) if isinstance(v, (int, float)) and v == v and v > 0 else None


def growth(rows: list[dict[str, Any]], key: str) -> float | None:
    """Least-squares slope of log(value) against log(sentences): the exponent a in value ∝ Nᵃ."""
    pts = [(math.log(r["sentences"]), math.log(v)) for r in rows if (v := _get(r, key)) is not None]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / den if den else None


def _f(v: Any, fmt: str = "{:.1f}") -> str:
    return fmt.format(v) if isinstance(v, (int, float)) and v == v else "–"


def render(results: Results) -> str:
    """The speed and scale section of ``RESULTS.md``."""
    rows = _measured(results)
    modes = _modes(rows)
    lines = [
        "### Ingest vs raw embedding of the same texts",
        "",
        "Ingest = `Memory.add` of 20-turn sessions, everything included; raw = `embedder.embed` of the same "
        "speaker-prefixed sentences in batches of 64. Sizes built with precomputed vectors have no ingest ratio: "
        "their ingest excludes embedding (see *Sampling* below).",
        "",
        "| sentences | vectors | distinct texts | raw embed sent/s | ingest sent/s | **ingest ÷ raw** "
        "| ingest µs/sentence excluding the embedder | peak RSS of the ingesting process, model included (MiB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        raw = _f(r["raw_embed_per_s"], "{:.0f}") + (f" (sample of {r['raw_sampled']:,})" if r.get("raw_sampled") else "")
        ratio = f"**{r['ingest_ratio']:.2f}**" if r.get("ingest_ratio") else "— (precomputed vectors)"
        lines.append(
            f"| {r['sentences']:,} | {'MiniLM' if r['real_vectors'] else 'precomputed'} | {r['distinct_texts']:,} | "
            f"{raw} | {_f(r['ingest_per_s'], '{:.0f}')} | {ratio} | {_f(r['non_embed_us_per_sentence'], '{:.0f}')} | "
            f"{_f(r['peak_rss_build'] / 2**20, '{:.0f}')} |"
        )
    lines += [
        "",
        "### Query latency vs dense-only FAISS search",
        "",
        "p50 / p95 in ms, query embedding included, k = 10; in brackets p50 and p95 ÷ the dense p50 and p95 "
        "(embed the query + `IndexFlatIP` top-10 over the same sentence vectors, on as many threads as sgmem's "
        "dense scan of that scope: one below 50,000 sentences, the cores above — the dense column says how many).",
        "",
        "| sentences | dense | " + " | ".join(modes) + " |",
        "|---|---|" + "---|" * len(modes),
    ]
    for r in rows:
        cells = [
            f"{r[f'{m}_p50']:.1f} / {r[f'{m}_p95']:.1f} "
            f"(**{r[f'{m}_p50'] / r['dense_p50']:.2f}× / {r[f'{m}_p95'] / r['dense_p95']:.2f}×**)"
            for m in modes
        ]
        conf = f" ({r['dense_config']})" if r.get("dense_config") else ""
        lines.append(
            f"| {r['sentences']:,} | {r['dense_p50']:.1f} / {r['dense_p95']:.1f}{conf} | " + " | ".join(cells) + " |"
        )
    lines += [
        "",
        "### Memory, disk and the novelty gate",
        "",
        "Resident = RSS of a fresh process after every mode answered once, minus the same process with only the "
        "model loaded. Gate = one SAGE decision for a new candidate against N memories (the store's sentence "
        "vectors), exact and approximate (IVF top-k); in brackets ÷ one flat top-1 FAISS search of the same N "
        "(one thread each: a decision's scores on one BLAS thread, the search on one OpenMP thread).",
        "",
        "| sentences | resident bytes/sentence | disk bytes/sentence | gate exact p50 µs | gate approx p50 µs "
        "| flat top-1 p50 µs | threshold step ms (exact) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        g = r.get("gate") or {}
        flat = g.get("flat_p50_us")

        def gcell(key: str, g: dict[str, Any] = g, flat: Any = flat) -> str:
            v = g.get(key)
            return f"{v:.0f} ({v / flat:.1f}×)" if v and flat else "–"

        lines.append(
            f"| {r['sentences']:,} | {_f(r.get('rss_bytes_per_sentence'), '{:.0f}')} | "
            f"{_f(r['disk_bytes_per_sentence'], '{:.0f}')} | {gcell('exact_p50_us')} | {gcell('approx_p50_us')} | "
            f"{_f(flat, '{:.0f}')}{' (' + g['flat_config'] + ')' if g.get('flat_config') else ''} | "
            f"{_f(g.get('exact_step_ms'), '{:.1f}')} |"
        )
    series = [(f"{m} p50", f"{m}_p50") for m in modes] + [
        ("dense p50", "dense_p50"),
        ("ingest µs/sentence excl. embedder", "non_embed_us_per_sentence"),
        ("resident bytes/sentence", "rss_bytes_per_sentence"),
        ("disk bytes/sentence", "disk_bytes_per_sentence"),
        ("gate exact", "gate.exact_p50_us"),
        ("gate approx", "gate.approx_p50_us"),
        ("flat top-1", "gate.flat_p50_us"),
    ]
    exps = [(name, growth(rows, key)) for name, key in series]
    if any(e is not None for _, e in exps):
        lines += [
            "",
            "Growth with N (least-squares exponent a of value ∝ Nᵃ over the sizes measured; "
            "a ≈ 0 is flat, a ≈ 1 linear): "
            + ", ".join(f"{name} **{e:+.2f}**" for name, e in exps if e is not None) + ".",
        ]
    skipped = [results[n] for n in sorted(results) if "skipped" in results[n]]
    precomputed = [r for r in rows if not r["real_vectors"]]
    notes = []
    if precomputed:
        notes.append(
            ("Sizes " if len(precomputed) > 1 else "Size ") + ", ".join(f"{r['sentences']:,}" for r in precomputed)
            + (" were" if len(precomputed) > 1 else " was") + " built with precomputed "
            "vectors (`benchmarks/vectors.py`: MiniLM vectors of each sentence's template skeleton plus a "
            "hashed perturbation, cosine ≈ 0.93 to the skeleton as MiniLM gives); "
            + ("their" if len(precomputed) > 1 else "its") + " raw-embedding rate was timed on an evenly spaced "
            "sample, and query vectors are always real MiniLM."
        )
    for s in skipped:
        notes.append(f"Size {s['size']:,} was not run: {s['skipped']}. Extrapolate with the exponents above.")
    if rows and not rows[0].get("isolated", True):
        notes.append("Run in one process (`--in-process`): resident memory figures are approximate.")
    if notes:
        lines += ["", "**Sampling.** " + " ".join(notes)]
    return "\n".join(lines)


def plot(results: Results, directory: Path) -> Path | None:
    """``speed_scale.png``: four log–log panels of how costs grow with N."""
    rows = _measured(results)
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    n = [r["sentences"] for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.4), dpi=90)

    def line(ax: Any, key: str, label: str, **kw: Any) -> None:
        pts = [(x, v) for x, r in zip(n, rows, strict=True) if (v := _get(r, key)) is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label, **kw)

    ax = axes[0][0]
    for m in _modes(rows):
        line(ax, f"{m}_p50", m)
    line(ax, "dense_p50", "dense FAISS (baseline)", linestyle="--", color="black")
    ax.set_title("query p50 (ms)")
    ax = axes[0][1]
    line(ax, "rss_bytes_per_sentence", "resident")
    line(ax, "disk_bytes_per_sentence", "disk")
    ax.set_title("bytes per sentence")
    ax = axes[1][0]
    line(ax, "gate.exact_p50_us", "gate, exact")
    line(ax, "gate.approx_p50_us", "gate, approx (IVF)")
    line(ax, "gate.flat_p50_us", "flat top-1 search (baseline)", linestyle="--", color="black")
    ax.set_title("one gate decision (µs)")
    ax = axes[1][1]
    real = [(r["sentences"], r["ingest_per_s"]) for r in rows if r["real_vectors"]]
    pre = [(r["sentences"], r["ingest_per_s"]) for r in rows if not r["real_vectors"]]
    if real:
        ax.plot(*zip(*real, strict=True), marker="o", label="ingest, MiniLM embedding included")
    if pre:
        ax.plot(*zip(*pre, strict=True), marker="o", markerfacecolor="none", linestyle=":",
                label="ingest, precomputed vectors (no embedding)")
    line(ax, "raw_embed_per_s", "raw embedding (baseline)", linestyle="--", color="black")
    ax.set_title("throughput (sentences/s)")
    for ax in (a for row in axes for a in row):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("sentences in the scope")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("sgmem cost as the memory grows (log–log)")
    fig.tight_layout()
    path = directory / "speed_scale.png"
    fig.savefig(path)
    plt.close(fig)
    return path
