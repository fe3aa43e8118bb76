"""The full benchmark suite in one command: ``python -m benchmarks``.

Runs quality on LoCoMo (:mod:`benchmarks.quality`), speed and scale
(:mod:`benchmarks.speed`), write cost (:mod:`benchmarks.write_cost`) and memory
and disk with many small scopes (:mod:`benchmarks.scopes`), each
against its baselines in the same run, and writes ``benchmarks/RESULTS.md``
with the PNG plots under ``benchmarks/plots/``. Scratch output (embedding
cache, raw JSON, temporary stores) goes to ``benchmarks/out/``.

The full run takes hours on a 2-core machine (the 1M-sentence store alone);
``--sizes 1000 10000 100000`` or ``--only quality`` shorten it, and
``--smoke`` runs everything at toy sizes in about a minute (what
``pytest -m benchmark`` checks). Run it on a quiet machine: timings taken
under load are flagged in the report.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

PARTS = ("quality", "chat", "speed", "write", "gate", "postgres", "scopes")
HERE = Path(__file__).resolve().parent


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS), help="run only these parts")
    p.add_argument("--locomo", default=None, help="LoCoMo JSON file (default ../shared/data/locomo/locomo-dev.json)")
    p.add_argument("--limit", type=int, default=None, help="LoCoMo: only the first N conversations")
    p.add_argument("--max-questions", type=int, default=None, help="LoCoMo: only the first N questions each")
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000, 1_000_000])
    p.add_argument("--queries", type=int, default=200, help="queries timed per size")
    p.add_argument("--gate-candidates", type=int, default=200, help="candidates timed through the novelty gate")
    p.add_argument("--max-build-hours", type=float, default=6.0,
                   help="speed: skip a size whose ingest is expected to take longer (reported as skipped)")
    p.add_argument("--real-embed-max", type=int, default=10_000, help="largest size embedded for real")
    p.add_argument("--turns", type=int, default=1000, help="write cost: turns written")
    p.add_argument("--write-locomo", action="store_true", help="write cost: take the turns from the LoCoMo file")
    p.add_argument("--scopes", type=int, default=10_000, help="scopes: how many small scopes (5 messages each)")
    p.add_argument("--cache", default=str(HERE / "out" / "cache"), help="embedding cache directory")
    p.add_argument("--results", default=str(HERE / "RESULTS.md"), help="where RESULTS.md goes")
    p.add_argument("--plots", default=str(HERE / "plots"), help="where the PNG plots go")
    p.add_argument("--scratch", default=str(HERE / "out"), help="scratch output (raw JSON results)")
    p.add_argument("--in-process", action="store_true", help="speed: no child processes (approximate RSS)")
    p.add_argument("--smoke", action="store_true", help="toy sizes everywhere (about a minute)")
    p.add_argument("--pg-url", default=os.environ.get("SGMEM_BENCH_PG_URL") or os.environ.get("SGMEM_TEST_PG_URL"),
                   help="postgres: a PostgreSQL server (skipped with a message when none answers)")
    p.add_argument("--pgvector-url", default=os.environ.get("SGMEM_BENCH_PGVECTOR_URL"),
                   help="postgres: a server with pgvector for LangGraph's PostgresStore (the peer)")
    return p


def _smoke(args: argparse.Namespace) -> None:
    args.sizes = [min(min(args.sizes), 150)]
    args.queries = min(args.queries, 5)
    args.gate_candidates = min(args.gate_candidates, 5)
    args.real_embed_max = args.sizes[0]
    args.turns = min(args.turns, 40)
    args.limit = args.limit or 1
    args.max_questions = args.max_questions or 5
    args.in_process = True
    args.scopes = min(args.scopes, 30)


#: what the chat part measures, for readers of RESULTS.md
_CHAT_HOW = (
    "A deployed agent stores its whole chat: in the *echo* condition every evaluation question of a "
    "conversation was asked once before, after the last session, and answered \"I'm not sure, I don't "
    "remember.\"; in *answered* it was answered with the reference answer (a hit on that reply finds the "
    "answer). sgmem's dialogue-act weights are chosen leave-one-conversation-out by the mean of the three "
    "conditions; the baselines have no setting to tune."
)


def _rel(path: Path, start: Path) -> str:
    try:
        return os.path.relpath(path, start)
    except ValueError:
        return str(path)


def _summary(quality: Any, speed: dict[int, dict[str, Any]] | None, write: Any) -> list[str]:
    """Headline ratios, one line each."""
    out: list[str] = []
    if quality is not None:
        from functools import partial

        from benchmarks.quality import SystemResult, reference

        sg = quality.system("sgmem hybrid") if any(s.name == "sgmem hybrid" for s in quality.systems) else None
        if sg and any(s.is_reference for s in quality.systems):
            k = 10 if 10 in quality.ks else quality.ks[0]
            name, best = reference(quality, partial(SystemResult.mean, k=k))
            out.append(f"- LoCoMo evidence recall@{k} (cat 1–4, in-sample): sgmem hybrid {sg.mean(k):.1f} % vs "
                       f"{name} {best:.1f} % — **{sg.mean(k) / best:.2f}×**.")
            b = 1000 if 1000 in quality.budgets else quality.budgets[0]
            for whole, how in ((True, "whole turns"), (False, "fragments")):
                name, best = reference(quality, partial(SystemResult.ctx_mean, budget=b, whole=whole))
                mine = sg.ctx_mean(b, whole=whole)
                out.append(f"- Evidence inside a {b:,}-token prompt block, counting {how} (in-sample): sgmem hybrid "
                           f"{mine:.1f} % vs {name} {best:.1f} % — **{mine / best:.2f}×**.")
    rows = [r for _, r in sorted((speed or {}).items()) if "skipped" not in r]
    real = [r for r in rows if r.get("ingest_ratio")]
    if real:
        r = real[-1]
        out.append(f"- Ingest at {r['sentences']:,} sentences runs at **{r['ingest_ratio']:.2f}×** the raw "
                   "embedding throughput of the same texts.")
    if rows:
        r = rows[-1]
        out.append(f"- Query p50 at {r['sentences']:,} sentences: hybrid {r['hybrid_p50']:.1f} ms = "
                   f"**{r['hybrid_p50'] / r['dense_p50']:.2f}×** dense FAISS ({r['dense_p50']:.1f} ms).")
        g = r.get("gate") or {}
        if g.get("exact_p50_us") and g.get("flat_p50_us"):
            out.append(f"- One novelty-gate decision against {g['memories']:,} memories: {g['exact_p50_us']:.0f} µs "
                       f"exact = **{g['exact_p50_us'] / g['flat_p50_us']:.1f}×** a flat top-1 search.")
    if write is not None:
        mem0 = next((p for p in write.paths if p.name.startswith("Mem0")), None)
        gate = next((p for p in write.paths if "gate" in p.name), None)
        if mem0 and gate and mem0.total:
            per = 1000 / write.turns
            out.append(f"- LLM calls per 1,000 turns: sgmem (LLM facts, gate routing) {gate.total * per:.0f} vs "
                       f"Mem0-style {mem0.total * per:.0f} — **{gate.total / mem0.total:.2f}×**; without an LLM, 0.")
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.smoke:
        _smoke(args)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from benchmarks import env
    from benchmarks.quality import default_locomo_path

    info = env.environment()
    command = env.command_line("benchmarks", argv)
    results_path = Path(args.results).resolve()
    plots = Path(args.plots).resolve()
    out_dir = Path(args.scratch).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    say = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    t0 = time.perf_counter()
    sections: list[str] = []
    images: list[Path] = []
    quality = speed = write = None
    embedder = None

    def shared_embedder() -> Any:
        nonlocal embedder
        if embedder is None:
            from sgmem.embed import default_embedder
            from sgmem.eval import CachingEmbedder

            embedder = CachingEmbedder(default_embedder(), args.cache)
        return embedder

    if "quality" in args.only:
        from benchmarks import quality as q

        path = Path(args.locomo) if args.locomo else default_locomo_path()
        if path.exists():
            say(f"quality: {path}")
            quality = q.run_quality(path, shared_embedder(), limit=args.limit, max_questions=args.max_questions,
                                    progress=say)
            shared_embedder().save()
            images += q.plot(quality, plots)
            sections += ["## Quality: LoCoMo evidence recall", "", q.render(quality), "",
                         f"![recall@k]({_rel(plots / 'quality_recall.png', results_path.parent)})",
                         f"![context budget]({_rel(plots / 'quality_context.png', results_path.parent)})", ""]
        else:
            sections += ["## Quality: LoCoMo evidence recall", "",
                         f"Not run: no LoCoMo file at `{path}` (pass `--locomo PATH`).", ""]
    if "chat" in args.only:
        from sgmem.eval.chat import evaluate_chat, render_chat
        from sgmem.eval.locomo import load_locomo

        path = Path(args.locomo) if args.locomo else default_locomo_path()
        if path.exists():
            say("chat: LoCoMo with its questions asked before (echo, answered) beside the clean protocol")
            chat = evaluate_chat(load_locomo(path, max(args.limit or 0, 2) if args.limit else None),
                                 shared_embedder(), max_questions=args.max_questions, progress=say)
            shared_embedder().save()
            sections += ["## Quality inside a chat: questions asked before, non-answers, filler", "",
                         "Measured by `sgmem eval locomo FILE --chat` (the same code). " + (_CHAT_HOW or ""), "",
                         render_chat(chat), ""]
    if "speed" in args.only:
        from benchmarks import speed as sp
        from benchmarks import speed_report

        say(f"speed: sizes {args.sizes}")
        speed = sp.measure(args.sizes, real_embed_max=args.real_embed_max, n_queries=args.queries,
                           gate_candidates=args.gate_candidates, cache_dir=args.cache,
                           max_build_hours=args.max_build_hours, isolate=not args.in_process, progress=say)
        img = speed_report.plot(speed, plots)
        images += [img] if img else []
        sections += ["## Speed and scale", "", speed_report.render(speed), "",
                     f"![scale]({_rel(plots / 'speed_scale.png', results_path.parent)})", ""]
        from benchmarks import bulk
        from benchmarks import scale as sc

        # the engine alone (stand-in hashing embedder) at the sizes ≥ 10k, 1M included when asked for
        sizes = [n for n in args.sizes if n >= 10_000] or [max(args.sizes)]
        say(f"engine scale: sizes {sizes}")
        engine = sc.measure(sizes, n_queries=min(args.queries, 100), progress=say,
                            max_build_s=args.max_build_hours * 3600 if args.max_build_hours else None)
        say("bulk ingest vs the embedding floor")
        bulk_res = bulk.measure(min(2000, max(args.sizes)), embedder=shared_embedder().base)
        sections += ["### Engine scale (stand-in embedder, `python -m benchmarks.scale`)", "", sc.render(engine), "",
                     "### Bulk ingest vs the embedding floor (`python -m benchmarks.bulk`)", "", bulk.render(bulk_res), ""]
    if "write" in args.only:
        from benchmarks import write_cost as wc

        say(f"write cost: {args.turns} turns")
        locomo = (Path(args.locomo) if args.locomo else default_locomo_path()) if args.write_locomo else None
        write = wc.run_write_cost(shared_embedder(), args.turns, locomo)
        shared_embedder().save()
        images.append(wc.plot(write, plots))
        sections += ["## Write cost: LLM calls", "", wc.render(write), "",
                     f"![write cost]({_rel(plots / 'write_cost.png', results_path.parent)})", ""]

    if "gate" in args.only:
        import shutil

        from benchmarks import gate as gb

        path = Path(args.locomo) if args.locomo else default_locomo_path()
        if path.exists():
            say("gate: routing, LLM calls, context, decision latency")
            gate_argv = ["--locomo", str(path), "--cache", args.cache, "--out", str(out_dir),
                         "--candidates", str(args.gate_candidates),
                         "--sizes", *[str(n) for n in sorted(set(args.sizes)) if n <= 100_000]]
            if args.limit:
                gate_argv += ["--limit", str(args.limit)]
            gb.main(gate_argv, embedder=shared_embedder())
            text = (out_dir / "gate.md").read_text(encoding="utf-8")
            png = out_dir / "gate_trace.png"
            sections += ["## Novelty gate (SAGE): routing, store size, recall, LLM calls, latency", "",
                         re.sub(r"(?m)^trace plot: .*$", "", text).strip(), ""]
            if png.exists():
                plots.mkdir(parents=True, exist_ok=True)
                shutil.copy(png, plots / "gate_trace.png")
                images.append(plots / "gate_trace.png")
                sections += [f"![gate trace]({_rel(plots / 'gate_trace.png', results_path.parent)})", ""]

    if "postgres" in args.only:
        from benchmarks import postgres as pg

        path = Path(args.locomo) if args.locomo else default_locomo_path()
        say("postgres: agreement with the embedded store, throughput, LangGraph PostgresStore")
        text = pg.run_part(args.pg_url, args.pgvector_url, path, shared_embedder,
                           max_questions=10 if args.smoke else args.max_questions, adds=2 if args.smoke else 20,
                           writers=(1, 2) if args.smoke else (1, 2, 4))
        if embedder is not None:
            embedder.save()
        sections += ["## PostgreSQL store: many hosts, one truth", "", text, ""]
    if "scopes" in args.only:
        from benchmarks import scopes as sc

        say(f"scopes: {args.scopes} scopes")
        many = sc.run_scopes(args.scopes, scratch=out_dir, progress=say)
        (out_dir / "scopes.json").write_text(json.dumps(many, indent=1), encoding="utf-8")
        sections += ["## Many scopes: memory and disk", "", sc.render(many), ""]

    head = [
        "# sgmem benchmarks",
        "",
        "Every figure is measured against its baselines in the same run and reported as a ratio. "
        "Regenerate this file with the command below (`python -m benchmarks --help` for options).",
        "",
        env.render_environment(info, command),
        f"- Wall time: {(time.perf_counter() - t0) / 60:.1f} min" + (" (smoke run: toy sizes)" if args.smoke else ""),
        "",
    ]
    summary = _summary(quality, speed, write)
    if summary:
        head += ["## Summary", "", *summary, ""]
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text("\n".join(head + sections).rstrip() + "\n", encoding="utf-8")
    raw = {
        "environment": info,
        "command": command,
        "quality": None if quality is None else {
            "path": quality.path, "questions": quality.questions,
            "recall": {s.name: {k: s.mean(k) for k in quality.ks} for s in quality.systems},
            "context": {s.name: {b: s.ctx_mean(b) for b in quality.budgets} for s in quality.systems},
            "context_whole_turns": {
                s.name: {b: s.ctx_mean(b, whole=True) for b in quality.budgets} for s in quality.systems
            },
        },
        "speed": speed,
        "write": None if write is None else asdict(write),
    }
    (out_dir / ("results-smoke.json" if args.smoke else "results.json")).write_text(
        json.dumps(raw, indent=1, default=str), encoding="utf-8")
    say(f"wrote {results_path} and {len(images)} plots under {plots}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
