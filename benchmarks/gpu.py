"""A GPU host: ingest and query with a CUDA embedder, against raw embedding and FAISS flat (issue 14 item 6).

On a CPU the model is the bottleneck; on a GPU it is not, and what is left is
sgmem's own engine. This benchmark measures, in one process on the GPU host:

* raw embedding of the exact texts ingest embeds (speaker-prefixed sentences):
  per add (one ``embed`` call per session, as ``Memory.add`` issues it), in
  batches of 256, and in one length-sorted call (the floor);
* ``Memory.add`` of LoCoMo sessions, one session per add, into one scope up to
  ``--sentences`` sentences (LoCoMo dev is ≈11k sentences: later passes rename
  the speakers and the message ids, so every text is new and is embedded);
  the ratio ingest ÷ per-add raw embedding, over the whole ingest and over its
  last 10 %; the same ratio against each add's texts embedded raw right
  before the add (paired: both timed in the same machine state, which the
  raw pass before the ingest is not: its rate moved by up to a third
  between processes on one host); and the per-stage milliseconds per add, with the adding
  thread's main steps timed apart (``sub:`` stages, :func:`_substage_timers`);
* ``Memory.add_many`` of ``--bulk`` sentences in one call vs the floor;
* query latency per mode (GPU query embedding included) against GPU query
  embedding + FAISS ``IndexFlatIP`` top-10 over the same sentence vectors
  (all OpenMP threads or one, whichever is faster; the all-threads search is
  timed in a pass of its own), sgmem's modes round robin per question.

Such a host may have torch and sentence-transformers but not faiss-cpu,
pysbd, simplemma or bm25s (carry their wheels), nor the MiniLM weights. The
weights then travel as ``pack``'s int8 copy (per-row scales; ≈23 MB instead
of 90), rebuilt in float32 on the host: the same architecture and
throughput, vectors within the cosine ``pack`` reports of the real model's.

Usage::

    python -m benchmarks.gpu pack --out .gpu/minilm-int8        # here, once
    python -m benchmarks.gpu run --pack .gpu/minilm-int8 --data locomo-dev.json \\
        --sentences 100000 --json out.json --md out.md         # on the GPU host
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.speed import _pct, _Timed

SCOPE = "gpu-bench"
_NAMES = ["Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Gray", "Harper", "Indigo", "Jordan", "Kai", "Logan"]


# ---------------------------------------------------------------- pack (here)
def pack(out: Path, model_dir: str | None = None, check_texts: list[str] | None = None) -> dict[str, Any]:
    """Write an int8 copy of MiniLM's weights plus its small files; report its cosine to the real model."""
    from safetensors.numpy import load_file

    from sgmem.embed.minilm import _bundled_model_path

    src = Path(model_dir or _bundled_model_path() or "")
    if not (src / "model.safetensors").exists():
        raise SystemExit(f"no model.safetensors under {src!s}: pass --model DIR")
    out.mkdir(parents=True, exist_ok=True)
    for f in src.rglob("*"):
        if f.is_file() and f.name != "model.safetensors" and f.suffix != ".md":
            dst = out / f.relative_to(src)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dst)
    tensors = load_file(str(src / "model.safetensors"))
    arrays: dict[str, np.ndarray] = {}
    for name, t in tensors.items():
        t = t.astype(np.float32)
        if t.ndim == 2:  # per-row symmetric int8
            scale = np.abs(t).max(axis=1, keepdims=True) / 127.0
            scale[scale == 0] = 1.0
            arrays[f"q::{name}"] = np.round(t / scale).astype(np.int8)
            arrays[f"s::{name}"] = scale.astype(np.float32)
        else:
            arrays[f"f::{name}"] = t
    np.savez(out / "weights-int8.npz", **arrays)
    manifest: dict[str, Any] = {"source": str(src), "tensors": len(tensors)}
    if check_texts:
        from sgmem.embed.minilm import SentenceTransformerEmbedder

        with tempfile.TemporaryDirectory() as tmp:
            rebuilt = unpack(out, Path(tmp) / "model")
            a = SentenceTransformerEmbedder(str(src)).embed(check_texts)
            b = SentenceTransformerEmbedder(str(rebuilt)).embed(check_texts)
        cos = (a * b).sum(axis=1)
        manifest["cosine_to_real"] = {"texts": len(check_texts), "mean": float(cos.mean()), "min": float(cos.min())}
    (out / "pack.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def unpack(packed: Path, dst: Path) -> Path:
    """Rebuild a float32 sentence-transformers directory from ``pack``'s output."""
    from safetensors.numpy import save_file

    shutil.copytree(packed, dst, dirs_exist_ok=True)
    z = np.load(packed / "weights-int8.npz")
    tensors: dict[str, np.ndarray] = {}
    for key in z.files:
        kind, name = key.split("::", 1)
        if kind == "q":
            tensors[name] = (z[key].astype(np.float32) * z[f"s::{name}"]).astype(np.float32)
        elif kind == "f":
            tensors[name] = z[key]
    save_file(tensors, str(dst / "model.safetensors"))
    (dst / "weights-int8.npz").unlink()
    return dst


# ---------------------------------------------------------------- the workload
def _adds(data: str, sentences: int) -> tuple[list[tuple[str, list[dict[str, Any]]]], list[list[str]], list[str]]:
    """LoCoMo sessions as (thread, messages), renamed per pass until ``sentences``; their texts; questions."""
    import sgmem
    from sgmem.eval.locomo import load_locomo
    from sgmem.ingest import prepare
    from sgmem.validate import normalise_messages

    convs = load_locomo(data)
    cfg = sgmem.Config()
    adds: list[tuple[str, list[dict[str, Any]]]] = []
    texts: list[list[str]] = []
    total, p = 0, 0
    while total < sentences:
        for conv in convs:
            speakers = sorted({m["name"] for _, _, msgs in conv.sessions for m in msgs})
            rename = {s: (s if p == 0 else f"{_NAMES[(p + i) % len(_NAMES)]} {s}") for i, s in enumerate(speakers)}
            for key, at, msgs in conv.sessions:
                new = [
                    {
                        "role": m["role"],
                        "name": rename[m["name"]],
                        "content": m["content"],
                        "id": f"p{p}-{conv.sample_id}-{m['id']}",
                        "at": at,
                    }
                    for m in msgs
                ]
                norm = normalise_messages(new, at, cfg.limits)
                prep = prepare(norm, cfg, ["t"] * len(norm), [f"x{i}" for i in range(len(norm))])
                adds.append((f"p{p}-{conv.sample_id}-{key}", new))
                texts.append(list(prep.sentence_texts))
                total += len(prep.sentence_texts)
                if total >= sentences:
                    break
            if total >= sentences:
                break
        p += 1
    questions = [q.question for conv in convs for q in conv.questions]
    return adds, texts, questions


#: the adding thread's steps timed apart during the ingest: (module, class or None, attribute, stage name)
SUBSTAGES = (
    ("sgmem.write", None, "embed_texts", "sub: embed call"),
    ("sgmem.write", None, "plan_add", "sub: keyword plan"),
    ("sgmem.derived.engine", "DerivedEngine", "plan", "sub: derived plan"),
    ("sgmem.write", None, "apply_add", "sub: transaction"),
    ("sgmem.write", None, "finish_add", "sub: cache update"),
)


def _substage_timers(acc: dict[str, float]) -> Any:
    """Wrap the add's main steps (:data:`SUBSTAGES`) so that their wall time on the calling thread adds up
    in ``acc`` (ms); returns a function that restores them."""
    import functools
    import importlib

    undo = []
    for mod_name, cls_name, attr, name in SUBSTAGES:
        mod = importlib.import_module(mod_name)
        owner = getattr(mod, cls_name) if cls_name else mod
        orig = getattr(owner, attr)

        def timed(*a: Any, _orig: Any = orig, _name: str = name, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return _orig(*a, **k)
            finally:
                acc[_name] = acc.get(_name, 0.0) + (time.perf_counter() - t) * 1e3

        setattr(owner, attr, functools.wraps(orig)(timed))
        undo.append((owner, attr, orig))

    def restore() -> None:
        for owner, attr, orig in reversed(undo):
            setattr(owner, attr, orig)

    return restore


def _sync() -> None:
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except ImportError:  # pragma: no cover
        pass


def _env(device: str) -> dict[str, Any]:
    info: dict[str, Any] = {"python": platform.python_version(), "cpus": os.cpu_count(), "device": device}
    try:
        import torch

        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:  # pragma: no cover
        pass
    import faiss

    import sgmem

    info["faiss"] = faiss.__version__
    info["sgmem"] = getattr(sgmem, "__version__", "?")
    info["faiss_threads"] = faiss.omp_get_max_threads()
    return info


def run(args: argparse.Namespace) -> dict[str, Any]:
    import faiss

    import sgmem
    from sgmem.embed.minilm import DEFAULT_MODEL_NAME, SentenceTransformerEmbedder

    out: dict[str, Any] = {"env": _env(args.device)}
    tmp = Path(tempfile.mkdtemp(prefix="sgmem-gpu-"))
    try:
        model = args.model
        if args.pack:
            model = str(unpack(Path(args.pack), tmp / "model"))
            pj = Path(args.pack) / "pack.json"
            if pj.exists():
                out["pack"] = json.loads(pj.read_text(encoding="utf-8"))
        emb = SentenceTransformerEmbedder(
            model, name=DEFAULT_MODEL_NAME, dim=384, device=args.device, batch_size=args.batch
        )
        t0 = time.perf_counter()
        emb.load()
        emb.embed(["warm up"] * 512)
        _sync()
        out["model_load_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        adds, texts, questions = _adds(args.data, args.sentences)
        flat_texts = [t for ts in texts for t in ts]
        out["workload"] = {
            "adds": len(adds),
            "sentences": len(flat_texts),
            "distinct_texts": len(set(flat_texts)),
            "prepare_s": time.perf_counter() - t0,
        }
        _log(f"workload: {out['workload']}")

        # raw embedding: per add, batches of 256, one length-sorted call (the floor)
        raw: dict[str, float] = {}
        _sync()
        t0 = time.perf_counter()
        for ts in texts:
            emb.embed(ts)
        _sync()
        raw["per_add"] = len(flat_texts) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for i in range(0, len(flat_texts), 256):
            emb.embed(flat_texts[i : i + 256])
        _sync()
        raw["batch_256"] = len(flat_texts) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        emb.embed(sorted(flat_texts, key=len))
        _sync()
        raw["one_call"] = len(flat_texts) / (time.perf_counter() - t0)
        out["raw_per_s"] = raw
        _log(f"raw: {raw}")

        # ingest, one session per add
        timed = _Timed(emb)
        per: list[tuple[int, float, float, dict[str, float], float]] = []
        done, next_log = 0, max(args.sentences // 10, 1)
        t_start = time.perf_counter()
        cfg = sgmem.Config(graph=sgmem.GraphConfig(knn_background=False)) if args.knn_inline else sgmem.Config()
        out["knn_background"] = cfg.graph.knn_background
        sub: dict[str, float] = {}
        paired_s = 0.0
        restore = _substage_timers(sub)
        with sgmem.Memory(tmp / "store", embedder=timed, config=cfg) as mem:
            prof = None
            for i_add, (thread, msgs) in enumerate(adds):
                if args.profile_every and i_add % args.profile_every == args.profile_every - 1 and prof is None:
                    import cProfile

                    prof = cProfile.Profile()
                    prof.enable()
                if args.max_ingest_s and time.perf_counter() - t_start - paired_s > args.max_ingest_s:
                    out["ingest_stopped"] = f"stopped after {args.max_ingest_s:.0f} s (--max-ingest-s)"
                    break
                pair = 0.0
                if args.paired:  # the same texts embedded raw right before the add: the same machine state
                    _sync()
                    t0 = time.perf_counter()
                    emb.embed(texts[i_add])
                    _sync()
                    pair = time.perf_counter() - t0
                    paired_s += pair
                e0, t0 = timed.seconds, time.perf_counter()
                sub.clear()
                res = mem.add(msgs, scope=SCOPE, thread=thread)
                _sync()
                dt = time.perf_counter() - t0
                per.append((res.sentences, dt, timed.seconds - e0, {**res.timings_ms, **sub}, pair))
                done += res.sentences
                if prof is not None:
                    import io
                    import pstats

                    prof.disable()
                    buf = io.StringIO()
                    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(12)
                    _log(f"profile of one add at {done:,} sentences:\n" + buf.getvalue()[-2500:])
                    prof = None
                if done >= next_log:
                    next_log += max(args.sentences // 10, 1)
                    _log(
                        f"ingested {done:,} sentences, {done / (time.perf_counter() - t_start):,.0f}/s; last add {res.timings_ms}"
                    )
            ingest_s = time.perf_counter() - t_start - paired_s  # the paired raw embedding is not the ingest's
            restore()  # the queries below are timed unwrapped
            sents = np.array([p[0] for p in per], dtype=np.float64)
            secs = np.array([p[1] for p in per])
            embs = np.array([p[2] for p in per])
            cum = np.cumsum(sents)
            first = (cum - sents) < 0.1 * cum[-1]
            last = cum > 0.9 * cum[-1]
            stages = sorted({k for p in per for k in p[3]})

            def stage_ms(mask: np.ndarray) -> dict[str, float]:
                rows = [p[3] for p, m in zip(per, mask, strict=True) if m]
                return {k: statistics.fmean(r.get(k, 0.0) for r in rows) for k in stages}

            n_sent = float(cum[-1])
            # the raw baselines above embedded the whole workload; an ingest stopped early is compared per sentence
            out["ingest"] = {
                "sentences": int(n_sent),
                "seconds": ingest_s,
                "per_s": n_sent / ingest_s,
                "ratio_per_add_raw": n_sent / ingest_s / raw["per_add"],
                "ratio_one_call": n_sent / ingest_s / raw["one_call"],
                "last10_per_s": sents[last].sum() / secs[last].sum(),
                "first10_per_s": sents[first].sum() / secs[first].sum(),
                "engine_us_per_sentence": (secs.sum() - embs.sum()) / n_sent * 1e6,
                "engine_us_first10": (secs[first].sum() - embs[first].sum()) / sents[first].sum() * 1e6,
                "engine_us_last10": (secs[last].sum() - embs[last].sum()) / sents[last].sum() * 1e6,
                "stage_ms_first10": stage_ms(first),
                "stage_ms_last10": stage_ms(last),
            }
            out["ingest"]["ratio_last10_per_add_raw"] = out["ingest"]["last10_per_s"] / raw["per_add"]
            if args.paired:
                pairs = np.array([p[4] for p in per])
                # raw embedding of each add's texts timed next to the add itself: the ratio does not move
                # with the machine's speed between the raw pass above and the ingest
                out["ingest"]["paired"] = {
                    "raw_s": float(pairs.sum()),
                    "add_s": float(secs.sum()),
                    "raw_per_s": n_sent / pairs.sum(),
                    "ratio": pairs.sum() / secs.sum(),
                    "ratio_first10": pairs[first].sum() / secs[first].sum(),
                    "ratio_last10": pairs[last].sum() / secs[last].sum(),
                }
            _log(f"ingest: {out['ingest']}")

            if args.queries:  # 0: ingest only
                # queries: GPU query embedding included everywhere
                modes = [m for m in sgmem.MODES if m != "entity"]
                rng = np.random.default_rng(0)
                qs = [
                    questions[i]
                    for i in rng.choice(len(questions), size=min(args.queries, len(questions)), replace=False)
                ]
                for mode in modes:  # load every channel's index once, as a long-lived app would
                    mem.search("warm up", scope=SCOPE, k=10, mode=mode)
                # variants on the same store, each in a Memory of its own: the approximate dense index
                # (Config.dense_index="hnsw") and the exact scan on the GPU (Config.dense_device)
                variants: dict[str, sgmem.Config] = {}
                if args.ann:
                    variants["hnsw"] = sgmem.Config(dense_index="hnsw", dense_ann_min_sentences=0)
                # sgmem's own rows use the default config: with dense_device="auto" the exact scan runs on
                # the embedder's GPU; the variant is the other place (the CPU scan, or --dense-device)
                out["dense_device"] = mem.config.dense_device
                if args.dense_device != "none":
                    if mem.config.dense_device is not None:
                        variants["CPU scan"] = sgmem.Config(dense_device=None)
                    else:
                        variants[f"{args.dense_device} scan"] = sgmem.Config(dense_device=args.dense_device)
                others = {tag: sgmem.Memory(tmp / "store", embedder=timed, config=c) for tag, c in variants.items()}
                var_modes = ("hybrid", "vector")
                for other in others.values():
                    for mode in var_modes:
                        other.search("warm up", scope=SCOPE, k=10, mode=mode)
                hits: dict[str, list[set[tuple[str, ...]]]] = {}
                idx = next(iter(mem._indexes.values()))
                vecs = np.ascontiguousarray(idx.sentence_vectors(), dtype=np.float32)
                flat = faiss.IndexFlatIP(vecs.shape[1])
                flat.add(vecs)
                omp = faiss.omp_get_max_threads()
                shown = [*modes, *(f"{m} ({tag})" for tag in others for m in var_modes)]
                which = {f"{m} ({tag})": (m, other) for tag, other in others.items() for m in var_modes}
                lat: dict[str, list[float]] = {s: [] for s in ("flat_omp", "flat_1t", "embed", *shown)}
                engine: dict[str, list[float]] = {m: [] for m in shown}
                # pass 1: the query embedding alone and with FAISS flat on one thread; pass 2: sgmem, every mode
                # round robin per question; pass 3: FAISS flat on all OpenMP threads, on its own (its idle
                # workers spin after each search and would slow whatever is timed next)
                for q in qs:  # each question's shapes once (kernel caches), before anything is timed
                    emb.embed([q])
                faiss.omp_set_num_threads(1)
                for q in qs:
                    t = time.perf_counter()
                    emb.embed([q])
                    lat["embed"].append((time.perf_counter() - t) * 1e3)
                    t = time.perf_counter()
                    flat.search(emb.embed([q]), 10)
                    lat["flat_1t"].append((time.perf_counter() - t) * 1e3)
                faiss.omp_set_num_threads(omp)
                for q in qs:
                    for name in shown:
                        mode, m = which.get(name, (name, mem))
                        e0 = timed.seconds
                        t = time.perf_counter()
                        found = m.search(q, scope=SCOPE, k=10, mode=mode)  # type: ignore[union-attr]
                        dt = time.perf_counter() - t
                        lat[name].append(dt * 1e3)
                        engine[name].append((dt - (timed.seconds - e0)) * 1e3)
                        hits.setdefault(name, []).append({tuple(h.message_ids) for h in found})
                for other in others.values():
                    other.close()
                for q in qs:
                    t = time.perf_counter()
                    flat.search(emb.embed([q]), 10)
                    lat["flat_omp"].append((time.perf_counter() - t) * 1e3)
                best = min(("flat_omp", "flat_1t"), key=lambda s: _pct(lat[s], 0.5))
                q_out: dict[str, Any] = {
                    "queries": len(qs),
                    "sentences": int(vecs.shape[0]),
                    "baseline": f"GPU query embedding + FAISS IndexFlatIP ({omp if best == 'flat_omp' else 1} OpenMP threads)",
                    "baseline_p50": _pct(lat[best], 0.5),
                    "baseline_p95": _pct(lat[best], 0.95),
                    "embed_p50": _pct(lat["embed"], 0.5),
                }
                for mode in shown:
                    q_out[mode] = {
                        "p50": _pct(lat[mode], 0.5),
                        "p95": _pct(lat[mode], 0.95),
                        "ratio_p50": _pct(lat[mode], 0.5) / q_out["baseline_p50"],
                        "ratio_p95": _pct(lat[mode], 0.95) / q_out["baseline_p95"],
                        "engine_p50": _pct(engine[mode], 0.5),
                        "ratio_per_query_median": statistics.median(
                            a / b for a, b in zip(lat[mode], lat[best], strict=True)
                        ),
                    }
                    if mode in which:  # the share of the exact top-10 the variant's search returns
                        pairs = [(w, g) for w, g in zip(hits[which[mode][0]], hits[mode], strict=True) if w]
                        q_out[mode]["overlap"] = (
                            statistics.fmean(len(w & g) / len(w) for w, g in pairs) if pairs else None
                        )
                out["query"] = q_out
                _log(f"query: {q_out}")

        # bulk: add_many of the first --bulk sentences into a fresh store vs the floor of the same texts
        if args.bulk:
            n, items = 0, []
            for (thread, msgs), ts in zip(adds, texts, strict=True):
                items.append((thread, msgs))
                n += len(ts)
                if n >= args.bulk:
                    break
            bt = [t for ts in texts[: len(items)] for t in ts]
            _sync()
            t0 = time.perf_counter()
            emb.embed(sorted(bt, key=len))
            _sync()
            floor_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            with sgmem.Memory(tmp / "bulk", embedder=emb) as mem:
                res = mem.add_many(items, scope=SCOPE)
            _sync()
            bulk_s = time.perf_counter() - t0
            n_b = sum(r.sentences for r in res)
            out["bulk"] = {
                "sentences": n_b,
                "floor_per_s": len(bt) / floor_s,
                "add_many_per_s": n_b / bulk_s,
                "ratio": (n_b / bulk_s) / (len(bt) / floor_s),
            }
            _log(f"bulk: {out['bulk']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def render(r: dict[str, Any]) -> str:
    e, raw, ing = r["env"], r["raw_per_s"], r["ingest"]
    lines = [
        f"GPU host: {e.get('gpu', e['device'])}, {e['cpus']} CPU cores, torch {e.get('torch')}, faiss {e['faiss']} "
        f"({e['faiss_threads']} OpenMP threads), Python {e['python']}. Embedder: MiniLM architecture on {e['device']}"
        + (
            f", int8-packed real weights rebuilt in float32 (cosine to the real model mean "
            f"{r['pack']['cosine_to_real']['mean']:.4f}, min {r['pack']['cosine_to_real']['min']:.4f})"
            if r.get("pack", {}).get("cosine_to_real")
            else ""
        )
        + (f". Ingest {r['ingest_stopped']} at {ing['sentences']:,} sentences" if r.get("ingest_stopped") else "")
        + f". Workload: {r['workload']['sentences']:,} sentences in {r['workload']['adds']:,} adds (LoCoMo dev sessions, "
        f"speakers renamed per pass), {r['workload']['distinct_texts']:,} distinct texts. An add's kNN search and "
        + (
            "HNSW insertion on the write path's worker thread (`GraphConfig.knn_background`)."
            if r.get("knn_background", True)
            else "HNSW insertion on the adding thread (`--knn-inline`)."
        ),
        "",
        "| ingest | sentences/s | ÷ per-add raw embedding | ÷ one-call floor |",
        "|---|---|---|---|",
        f"| raw embedding, per add | {raw['per_add']:,.0f} | 1.00× | {raw['per_add'] / raw['one_call']:.2f}× |",
        f"| raw embedding, batches of 256 | {raw['batch_256']:,.0f} | {raw['batch_256'] / raw['per_add']:.2f}× | {raw['batch_256'] / raw['one_call']:.2f}× |",
        f"| raw embedding, one length-sorted call (floor) | {raw['one_call']:,.0f} | {raw['one_call'] / raw['per_add']:.2f}× | 1.00× |",
        f"| **`Memory.add` per session, whole ingest** | {ing['per_s']:,.0f} | **{ing['ratio_per_add_raw']:.2f}×** | {ing['ratio_one_call']:.2f}× |",
        f"| `Memory.add` per session, last 10 % | {ing['last10_per_s']:,.0f} | **{ing['ratio_last10_per_add_raw']:.2f}×** | {ing['last10_per_s'] / raw['one_call']:.2f}× |",
    ]
    if ing.get("paired"):
        pr = ing["paired"]
        lines.append(
            f"| `Memory.add` ÷ the same add's texts embedded raw right before it (paired), whole ingest | "
            f"{ing['per_s']:,.0f} | **{pr['ratio']:.2f}×** (paired raw {pr['raw_per_s']:,.0f}/s; first 10 % "
            f"{pr['ratio_first10']:.2f}×, last 10 % {pr['ratio_last10']:.2f}×) | |"
        )
    if r.get("bulk"):
        b = r["bulk"]
        lines.append(
            f"| `Memory.add_many`, {b['sentences']:,} sentences in one call | {b['add_many_per_s']:,.0f} | "
            f"{b['add_many_per_s'] / raw['per_add']:.2f}× | **{b['ratio']:.2f}×** (floor of the same texts {b['floor_per_s']:,.0f}/s) |"
        )
    lines += [
        "",
        f"Engine µs per sentence (embedder excluded): {ing['engine_us_per_sentence']:.0f} overall, "
        f"{ing['engine_us_first10']:.0f} first 10 %, {ing['engine_us_last10']:.0f} last 10 %. "
        "Stage ms per add, first 10 % → last 10 %: "
        + ", ".join(
            f"{k} {ing['stage_ms_first10'][k]:.1f} → {ing['stage_ms_last10'][k]:.1f}" for k in ing["stage_ms_first10"]
        )
        + ".",
        "",
    ]
    if not r.get("query"):
        return "\n".join(lines) + "\n"
    q = r["query"]
    lines += [
        f"Query latency at {q['sentences']:,} sentences, {q['queries']} LoCoMo questions, k = 10, ms, GPU query "
        f"embedding included (alone: p50 {q['embed_p50']:.2f} ms). Baseline: {q['baseline']}. sgmem's rows: "
        f"the default config, whose exact scan ran on {_where(r.get('dense_device'))} "
        '(`Config.dense_device="auto"`).',
        "",
        "| system | p50 | p95 | ÷ baseline p50 | ÷ baseline p95 | median per-query ratio | engine p50 (embedding excluded) |",
        "|---|---|---|---|---|---|---|",
        f"| baseline | {q['baseline_p50']:.2f} | {q['baseline_p95']:.2f} | 1.00× | 1.00× | | |",
    ]
    overlaps = []
    for mode, v in q.items():
        if isinstance(v, dict):
            lines.append(
                f"| {mode} | {v['p50']:.2f} | {v['p95']:.2f} | **{v['ratio_p50']:.2f}×** | {v['ratio_p95']:.2f}× | "
                f"{v.get('ratio_per_query_median', float('nan')):.2f}× | {v['engine_p50']:.2f} |"
            )
            if v.get("overlap") is not None:
                overlaps.append(f"{mode} {v['overlap']:.3f}")
    if overlaps:
        lines += [
            "",
            '(hnsw): `Config(dense_index="hnsw", dense_ann_min_sentences=0)`; (DEVICE scan): '
            "`Config(dense_device=DEVICE)`, the exact scan on that device; (CPU scan): `Config(dense_device=None)`; "
            "each on the same store. Top-10 overlap "
            "with the exact search of the same mode: " + ", ".join(overlaps) + ".",
        ]
    return "\n".join(lines) + "\n"


def _where(device: str | None) -> str:
    return "the CPU" if device is None else f"`{device}`"


def _log(msg: str) -> None:
    print(f"[gpu {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="write an int8 copy of MiniLM for a host without its weights")
    p.add_argument("--out", required=True)
    p.add_argument("--model", default=None, help="sentence-transformers directory (default: the bundled MiniLM)")
    p.add_argument("--data", default=None, help="LoCoMo JSON: check the packed copy's cosine on its first turns")
    r = sub.add_parser("run", help="measure ingest and query on this host")
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--pack", help="directory written by `pack`")
    src.add_argument("--model", help="sentence-transformers directory or hub name")
    r.add_argument("--data", required=True, help="LoCoMo JSON (the dev split)")
    r.add_argument("--sentences", type=int, default=100_000)
    r.add_argument("--queries", type=int, default=200)
    r.add_argument("--bulk", type=int, default=20_000, help="sentences for the add_many comparison (0: skip)")
    r.add_argument(
        "--no-paired",
        dest="paired",
        action="store_false",
        help="do not embed each add's texts raw right before the add (the paired per-add baseline)",
    )
    r.add_argument("--max-ingest-s", type=float, default=0.0, help="stop adding after this many seconds (0: no limit)")
    r.add_argument("--profile-every", type=int, default=0, help="cProfile one add in every N and log its top functions")
    r.add_argument(
        "--knn-inline",
        action="store_true",
        help="GraphConfig(knn_background=False): the kNN search and HNSW insertion on the adding thread",
    )
    r.add_argument(
        "--no-ann",
        dest="ann",
        action="store_false",
        help="skip the hybrid and vector queries with the approximate dense index (Config.dense_index='hnsw')",
    )
    r.add_argument(
        "--dense-device",
        default=None,
        help="also time hybrid and vector with the exact scan elsewhere than the default config's: with the "
        "CPU scan (Config(dense_device=None)) where the default (dense_device='auto') scans on the embedder's GPU, "
        "else on this device (default: --device when it is a CUDA device; 'none' skips)",
    )
    r.add_argument("--device", default="cuda")
    r.add_argument("--batch", type=int, default=256, help="embedder batch size")
    r.add_argument("--json", default=None)
    r.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    if args.cmd == "pack":
        texts = None
        if args.data:
            from sgmem.eval.locomo import load_locomo

            texts = [
                f"{m['name']}: {m['content']}"
                for _, _, msgs in load_locomo(args.data, limit=1)[0].sessions
                for m in msgs
            ][:300]
        print(json.dumps(pack(Path(args.out), args.model, texts), indent=1))
        return 0
    if args.cmd == "run" and args.dense_device is None:
        args.dense_device = args.device if str(args.device).startswith("cuda") else "none"
    result = run(args)
    md = render(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    if args.md:
        Path(args.md).write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
