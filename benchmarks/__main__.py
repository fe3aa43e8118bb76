"""The benchmark suite in one command: ``python -m benchmarks [--only PART ...]``.

Runs the named parts (all of them by default, see :data:`benchmarks.parts.PARTS`), stores each one's raw
results with its command, date, machine and commit in ``benchmarks/results/PART.json``, and rewrites
``benchmarks/RESULTS.md`` whole from every stored part, so a part run today and one run last week each
keep their own date. ``python -m benchmarks report`` rewrites RESULTS.md from the stored results without
measuring anything.

Every figure is measured against its baselines in the same run. The full run takes hours on a 2-core
machine; ``--sizes 1000 10000 100000`` shortens the speed part, and ``--smoke`` runs every part at toy
sizes in a few minutes into a temporary directory (what ``pytest -m benchmark`` checks), never into the
committed results.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.parts import PARTS, Context, commit, load, module, record, render_results, store

HERE = Path(__file__).resolve().parent


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=(__doc__ or "").splitlines()[0])
    p.add_argument(
        "action",
        nargs="?",
        choices=("run", "report"),
        default="run",
        help="run: measure the parts, then write RESULTS.md (default); report: only rewrite RESULTS.md",
    )
    p.add_argument("--only", nargs="+", choices=list(PARTS), default=list(PARTS), help="run only these parts")
    p.add_argument(
        "--dir",
        default=None,
        help="where RESULTS.md, results/ and plots/ go (default: benchmarks/; with --smoke a temporary directory)",
    )
    p.add_argument("--scratch", default=str(HERE / "out"), help="scratch output (temporary stores)")
    p.add_argument("--cache", default=str(HERE / "out" / "cache"), help="embedding cache directory")
    p.add_argument("--locomo", default=None, help="LoCoMo JSON file (default ../shared/data/locomo/locomo-dev.json)")
    p.add_argument("--limit", type=int, default=None, help="LoCoMo: only the first N conversations")
    p.add_argument(
        "--longmemeval",
        default=None,
        help="LongMemEval file (default ../shared/data/longmemeval/longmemeval_s_dev.json.gz)",
    )
    p.add_argument(
        "--lme-per-type", type=int, default=6, help="longmemeval: questions of each type (a stratified subset, seed 0)"
    )
    p.add_argument(
        "--lme-seeds", type=int, nargs="+", default=[0], help="longmemeval: the subset's seeds (several: the union)"
    )
    p.add_argument("--max-questions", type=int, default=None, help="LoCoMo: only the first N questions each")
    p.add_argument("--small-chats", type=int, default=100, help="small: chats composed from each wording pool")
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="quality: conversations measured at once, each in a process of its own (same figures)",
    )
    p.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[1000, 10_000, 100_000, 1_000_000],
        help="speed: store sizes in sentences",
    )
    p.add_argument(
        "--engine-sizes",
        type=int,
        nargs="+",
        default=None,
        help="speed: sizes of the engine at scale (stand-in embedder; default: the --sizes from 10,000 up)",
    )
    p.add_argument(
        "--hnsw-max",
        type=int,
        default=100_000,
        help="speed: largest engine size that also builds FAISS's HNSW baseline and measures edge recall",
    )
    p.add_argument("--queries", type=int, default=200, help="speed: queries timed per size")
    p.add_argument("--gate-candidates", type=int, default=200, help="speed, gate: candidates timed through the gate")
    p.add_argument(
        "--max-build-hours",
        type=float,
        default=6.0,
        help="speed: skip a size whose ingest is expected to take longer (reported as skipped)",
    )
    p.add_argument("--real-embed-max", type=int, default=10_000, help="speed: largest size embedded for real")
    p.add_argument("--in-process", action="store_true", help="speed: no child processes (approximate RSS)")
    p.add_argument("--turns", type=int, default=1000, help="write: turns written")
    p.add_argument("--write-locomo", action="store_true", help="write: take the turns from the LoCoMo file")
    p.add_argument("--scopes", type=int, default=10_000, help="scopes: how many small scopes (5 messages each)")
    p.add_argument(
        "--pg-url",
        default=os.environ.get("SGMEM_BENCH_PG_URL") or os.environ.get("SGMEM_TEST_PG_URL"),
        help="postgres: a PostgreSQL server (the part records why it was skipped when none answers)",
    )
    p.add_argument(
        "--pgvector-url",
        default=os.environ.get("SGMEM_BENCH_PGVECTOR_URL"),
        help="postgres: a server with pgvector for LangGraph's PostgresStore (the peer)",
    )
    p.add_argument("--smoke", action="store_true", help="toy sizes everywhere, into a temporary directory")
    return p


def _smoke(args: argparse.Namespace) -> None:
    args.sizes = [min(min(args.sizes), 150)]
    args.engine_sizes = None
    args.queries = min(args.queries, 5)
    args.gate_candidates = min(args.gate_candidates, 5)
    args.real_embed_max = args.sizes[0]
    args.turns = min(args.turns, 40)
    args.limit = args.limit or 1
    args.max_questions = args.max_questions or 5
    args.in_process = True
    args.scopes = min(args.scopes, 30)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.smoke:
        _smoke(args)
    directory = (
        Path(args.dir) if args.dir else (Path(tempfile.mkdtemp(prefix="sgmem-bench-smoke-")) if args.smoke else HERE)
    )
    directory = directory.resolve()
    say = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    if args.action == "run":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from benchmarks import env
        from benchmarks.quality import default_locomo_path

        command = env.command_line("benchmarks", argv)
        code = commit()  # the code that measures: later edits to the checkout do not change it
        out = Path(args.scratch).resolve()
        out.mkdir(parents=True, exist_ok=True)
        shared: list[Any] = []

        def embedder() -> Any:
            if not shared:
                from sgmem.embed import default_embedder
                from sgmem.eval import CachingEmbedder

                shared.append(CachingEmbedder(default_embedder(), args.cache))
            return shared[0]

        ctx = Context(
            args, Path(args.locomo) if args.locomo else default_locomo_path(), embedder, out, directory / "plots", say
        )
        for part in [p for p in PARTS if p in args.only]:
            mod = module(part)
            if mod is None:
                say(f"{part}: not in this checkout, skipped")
                continue
            say(f"{part}: {mod.TITLE}")
            info = env.environment()
            t0 = time.perf_counter()
            raw = mod.run_part(ctx)
            if shared:
                shared[0].save()
            path = store(directory, record(part, raw, command, info, time.perf_counter() - t0, code))
            say(f"{part}: stored {path}")
    results = directory / "RESULTS.md"
    results.write_text(render_results(load(directory)), encoding="utf-8")
    say(f"wrote {results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
