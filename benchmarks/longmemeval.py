"""Quality on LongMemEval, a user–assistant chat: the ``longmemeval`` part of ``python -m benchmarks``.

The measurement is :mod:`sgmem.eval.longmemeval` (also ``sgmem eval longmemeval FILE``): each question's
haystack (~48 sessions, ~490 turns) in a fresh store, under two protocols — the user's turns only (the
paper's retrieval setting) and every turn of both roles (what a deployed memory stores) — with BM25,
dense sentences and their reciprocal rank fusion ranking the same store in the same run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["TITLE", "default_longmemeval_path", "render_part", "run_part", "summary_lines"]

TITLE = "Quality on LongMemEval: a user and an assistant"

HOW = (
    "LongMemEval_S (Wu et al., ICLR 2025), development portion: a stratified subset of up to `--lme-per-type` "
    "questions of each type (seed 0), abstention questions skipped. Each question's haystack is ingested into a "
    "fresh in-memory store with its sessions' dates; every system ranks that store's turns with `min_score=0`. "
    "Metrics as LongMemEval's retrieval code computes them, at turn level (`has_answer` turns) and session level. "
    "sgmem runs its shipped defaults, chosen on LoCoMo except `HybridConfig.assistant_weight` (LoCoMo holds no "
    "assistant), chosen on this subset by leave-one-question-out (every fold chose 0.5; held out 95.8 turn "
    "recall@10 with every turn stored, 3 per type). Ingest times leave out embedding when the vectors come from the embedding cache (`--cache`). "
    "Same code: `sgmem eval longmemeval FILE --protocol user|all --per-type N`."
)


def default_longmemeval_path() -> Path:
    """``../shared/data/longmemeval/longmemeval_s_dev.json.gz`` beside the repository."""
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval" / "longmemeval_s_dev.json.gz"


def run_part(ctx: Any) -> dict[str, Any]:
    from sgmem.eval.longmemeval import evaluate_longmemeval, load_longmemeval, report_to_raw

    args = ctx.args
    path = Path(getattr(args, "longmemeval", None) or default_longmemeval_path())
    if not path.exists():
        return {"missing": str(path)}
    per_type = getattr(args, "lme_per_type", 6)
    smoke = bool(getattr(args, "smoke", False))
    qs = load_longmemeval(
        path, per_type=1 if smoke else per_type, limit=1 if smoke else None, max_sessions=3 if smoke else None
    )
    raw: dict[str, Any] = {"path": path.name, "per_type": per_type, "smoke": smoke, "protocols": {}}
    for protocol in ("user", "all"):
        ctx.progress(f"longmemeval: protocol {protocol}, {len(qs)} questions")
        rep = evaluate_longmemeval(
            qs, protocol=protocol, embedder=ctx.embedder(), progress=ctx.progress, path=path.name
        )
        raw["protocols"][protocol] = report_to_raw(rep)
    return raw


def render_part(raw: dict[str, Any]) -> str:
    from sgmem.eval.longmemeval import render_longmemeval, report_from_raw

    if "missing" in raw:
        return f"Not measured: no LongMemEval file at `{raw['missing']}`.\n"
    parts = [HOW, ""]
    for protocol, rep in raw["protocols"].items():
        parts += [f"### Protocol: {'user turns only' if protocol == 'user' else 'every turn of both roles'}", ""]
        parts.append(render_longmemeval(report_from_raw(rep)))
    return "\n".join(parts)


def summary_lines(raw: dict[str, Any]) -> list[str]:
    from sgmem.eval.longmemeval import SYSTEMS, report_from_raw

    if "missing" in raw:
        return []
    out = []
    for protocol, data in raw["protocols"].items():
        rep = report_from_raw(data)
        ours = rep.mean(SYSTEMS[0], "turn", "recall@10")
        base = max(SYSTEMS[1:], key=lambda s: rep.mean(s, "turn", "recall@10"))
        theirs = rep.mean(base, "turn", "recall@10")
        label = "user turns only" if protocol == "user" else "whole chat stored"
        out.append(
            f"LongMemEval ({label}, {rep.n_questions} questions, one weight chosen on it): turn recall@10 "
            f"{ours:.1f} % vs {base} {theirs:.1f} % ({ours / theirs:.2f}×)"
        )
    return out
