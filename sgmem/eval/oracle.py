"""LongMemEval reduced to each question's evidence sessions: a real small memory of a user and an assistant.

For every question of a LongMemEval file (official format, e.g. ``../shared/data/longmemeval/
longmemeval_s_dev.json.gz``) only the haystack sessions whose id is in ``answer_session_ids`` are kept — the
benchmark's "oracle" setting (Wu et al., ICLR 2025, §3) — with every turn of both roles, each session a
thread at its date. The question is asked at its ``question_date``; its evidence is the turns marked
``has_answer``. Abstention questions (ids ending in ``_abs``: the chat does not hold the answer) and questions
with no marked turn are not scored; :class:`Reduction` counts them. Each question is one
:class:`sgmem.eval.suite.Chat` with one probe, in a fold from a hash of its id (:func:`sgmem.eval.suite.fold_of`),
so tuning can use some folds and score the others.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from .longmemeval import parse_lme_date
from .suite import FOLDS, Chat, Probe, fold_of

__all__ = ["Reduction", "default_longmemeval_path", "load_oracle", "reduce_record"]


def default_longmemeval_path() -> Path:
    """``shared/data/longmemeval/longmemeval_s_dev.json.gz`` in the nearest folder above the checkout that has
    one (``../shared/`` beside the repository, or further up for a worktree); may not exist."""
    tail = Path("shared") / "data" / "longmemeval" / "longmemeval_s_dev.json.gz"
    above = Path(__file__).resolve().parents[3:]
    return next((d / tail for d in above if (d / tail).is_file()), above[0] / tail)


@dataclass
class Reduction:
    """The reduced questions, and the ones left out."""

    chats: list[Chat]
    #: abstention questions (``_abs``), not scored
    abstention: int = 0
    #: scorable questions whose kept sessions mark no evidence turn
    no_evidence: list[str] = field(default_factory=list)
    #: questions of other folds than those asked for
    other_folds: int = 0
    path: str = ""


def reduce_record(rec: dict[str, Any], folds: int = FOLDS) -> Chat | None:
    """One LongMemEval record as a small chat: its evidence sessions and its question (``None``: no evidence).

    A session kept twice in the haystack (filler drawn with replacement) is kept once.
    """
    qid = str(rec["question_id"])
    wanted = {str(s) for s in rec.get("answer_session_ids") or []}
    sessions: list[tuple[str, Any, list[dict[str, Any]]]] = []
    evidence: list[str] = []
    seen: set[str] = set()
    for sid, date, turns in zip(
        rec["haystack_session_ids"], rec["haystack_dates"], rec["haystack_sessions"], strict=True
    ):
        sid = str(sid)
        if sid not in wanted or sid in seen:
            continue
        seen.add(sid)
        at = parse_lme_date(date)
        msgs = []
        for i, t in enumerate(turns):
            if not str(t.get("content", "")).strip():
                continue
            mid = f"{sid}#{i}"
            msgs.append({"id": mid, "role": t["role"], "content": t["content"], "at": at})
            if t.get("has_answer"):
                evidence.append(mid)
        if msgs:
            sessions.append((sid, at, msgs))
    if not evidence:
        return None
    sessions.sort(key=lambda s: s[1])
    qtype = str(rec["question_type"])
    roles = {m["role"] for _, _, ms in sessions for m in ms if m["id"] in evidence}
    about = "assistant" if roles == {"assistant"} else "user"
    probe = Probe(
        qid,
        str(rec["question"]),
        parse_lme_date(rec["question_date"]),
        tuple(evidence),
        None,  # the benchmark's answers are free text, often not verbatim in a turn: not checked
        (f"type: {qtype}", f"about: {about}"),
        qtype,
    )
    return Chat(qid, sessions, [probe], fold_of(qid, folds))


def load_oracle(path: str | Path, folds: Iterable[int] | None = None, limit: int | None = None) -> Reduction:
    """Read a LongMemEval file and reduce every question to its evidence sessions.

    Args:
        path: the official JSON list, optionally gzipped.
        folds: keep only the questions of these folds (of :data:`sgmem.eval.suite.FOLDS`); ``None``: all.
        limit: keep the first ``limit`` scorable questions (quick runs).
    """
    p = Path(path)
    if not p.is_file():
        raise InvalidInputError("longmemeval", str(p), "an existing LongMemEval JSON file (.json or .json.gz)")
    opener: Any = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, list):
        raise InvalidInputError("longmemeval", str(p), "LongMemEval's official format: a JSON list of questions")
    keep = None if folds is None else set(folds)
    out = Reduction([], path=p.name)
    for rec in data:
        if str(rec["question_id"]).endswith("_abs"):
            out.abstention += 1
            continue
        chat = reduce_record(rec)
        if chat is None:
            out.no_evidence.append(str(rec["question_id"]))
        elif keep is not None and chat.fold not in keep:
            out.other_folds += 1
        elif limit is None or len(out.chats) < limit:
            out.chats.append(chat)
    return out
