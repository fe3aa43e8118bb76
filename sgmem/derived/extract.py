"""Generating memory from messages: fact candidates, session summaries, insights.

Each generator has an LLM path (SGMem's prompts, ALGORITHMS §1.5) and an
LLM-free rule (§1.6); the LLM path falls back to the rule, counted, whenever
the model's output is unusable.

- Facts (LLM-free): every statement of 4+ word tokens from a turn of the
  configured roles with two content words or more (the user's own fact
  sentences: a question, a non-answer, filler, a bare answer fragment or
  "Thanks a lot!" is no fact; the dialogue act is the one stored with the
  sentence, :mod:`sgmem.text.acts`); its text is exactly the
  speaker-prefixed sentence the core already embedded, so its vector is
  reused, never recomputed.
- Facts (LLM): one call per ``fact_batch_messages`` messages; each fact keeps
  the numbers of the messages it came from, or, when the model gives none, is
  attributed to the message holding its most similar sentence.
- Summaries (LLM-free): of the session's sentences that would be facts (the
  configured roles' statements), the ones closest to their centroid, in their
  original order, one speaker label per run of sentences; the summary's vector
  is the normalised mean of theirs. A session with none gets no summary.
- Insights (LLM): patterns over a session's timestamped facts. LLM-free:
  none, or (``insights="cluster"``) the medoid fact of every single-linkage
  cluster of facts at cosine ≥ 0.7, stamped with the cluster's newest time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .. import prompts
from ..llm import LLMUsage, complete_json, complete_text
from ..text.acts import STATEMENT, raw_acts
from ..text.lexical import analyze, tokenize
from .config import DerivedConfig

__all__ = [
    "Candidate",
    "cluster_insights",
    "extractive_summary",
    "is_fact_sentence",
    "llm_fact_candidates",
    "llm_insights",
    "llm_summary",
    "rule_fact_candidates",
]

MAX_PROMPT_CHARS = 24_000  # [D] longer sessions are summarised from their latest messages


@dataclass
class Candidate:
    """A fact candidate, before the gate routes it.

    Attributes:
        text: the fact.
        vec: its unit embedding.
        pos: position (in the add) of its newest source message.
        sources: positions (in the add) of every source message.
        at: when its newest source was said.
        session: that message's session.
        speaker: that message's speaker label.
        method: ``"rule"`` or ``"llm"``.
    """

    text: str
    vec: np.ndarray
    pos: int
    sources: list[int]
    at: datetime
    session: str
    speaker: str | None
    method: str
    extra: dict[str, Any] = field(default_factory=dict)


def _speaker(m: Any) -> str:
    return str(m.name or m.role)


#: [D] content terms (words left after the stopwords, :func:`sgmem.text.lexical.analyze`) a sentence needs to be
#: an LLM-free fact: a fact says something about something ("My sister lives in Porto."); a statement with one
#: content word ("Thanks a lot for the tips!", "I love it.") says nothing on its own.
FACT_MIN_TERMS = 2


def is_fact_sentence(text: str, act: int | None, min_tokens: int) -> bool:
    """Whether a sentence of a fact role's turn is a fact for the LLM-free rules: a statement (its stored
    dialogue act; the word rules' when none is stored) of at least ``min_tokens`` word tokens and
    :data:`FACT_MIN_TERMS` content terms."""
    if len(tokenize(text)) < min_tokens or len(set(analyze(text))) < FACT_MIN_TERMS:
        return False
    return int(act if act is not None else raw_acts([text])[0]) == STATEMENT


def rule_fact_candidates(prep: Any, cfg: DerivedConfig, positions: Sequence[int] | None = None) -> list[Candidate]:
    """LLM-free candidates (§1.6, [D] statements only): the embedded statements of qualifying turns."""
    keep = set(positions) if positions is not None else None
    out: list[Candidate] = []
    for s, text in zip(prep.sentences, prep.sentence_texts, strict=True):
        m = prep.messages[s.msg]
        if m.role not in cfg.fact_roles or (keep is not None and s.msg not in keep):
            continue
        if not is_fact_sentence(s.text, getattr(s, "act", None), cfg.fact_min_tokens):
            continue
        out.append(Candidate(text, s.vec, s.msg, [s.msg], m.at, m.session, _speaker(m), "rule"))
    return out


def _validate_facts(value: Any) -> list[tuple[str, list[int] | None]] | None:
    if isinstance(value, dict):
        value = next((v for v in value.values() if isinstance(v, list)), None)
    if not isinstance(value, list):
        return None
    out: list[tuple[str, list[int] | None]] = []
    for item in value:
        if isinstance(item, str):
            text, srcs = item, None
        elif isinstance(item, dict):
            text = next((item[k] for k in ("fact", "content", "text") if isinstance(item.get(k), str)), "")
            raw = item.get("sources", item.get("source"))
            raw = [raw] if isinstance(raw, int) else raw
            srcs = (
                [int(x) for x in raw if isinstance(x, int) or (isinstance(x, str) and x.strip().isdigit())]
                if isinstance(raw, list)
                else None
            )
        else:
            continue
        text = " ".join(text.split())
        if text:
            out.append((text, srcs or None))
    return out


def llm_fact_candidates(
    llm: Any,
    prep: Any,
    cfg: DerivedConfig,
    usage: LLMUsage,
    embed: Callable[[list[str]], np.ndarray],
) -> list[Candidate]:
    """SGMem's fact prompt over batches of the add's messages (rule fallback per batch)."""
    msgs = prep.messages
    facts: list[tuple[str, list[int] | None, list[int]]] = []  # (text, sources, batch positions)
    fallback: list[int] = []
    for b0 in range(0, len(msgs), cfg.fact_batch_messages):
        batch = list(range(b0, min(len(msgs), b0 + cfg.fact_batch_messages)))
        if not any(msgs[i].role in cfg.fact_roles for i in batch):
            continue
        lines = "\n".join(
            f"[{j + 1}] {_speaker(msgs[i])} ({msgs[i].at.date().isoformat()}): {msgs[i].content}"
            for j, i in enumerate(batch)
        )
        got = complete_json(llm, prompts.FACT_EXTRACTION.format(messages=lines), usage, "facts", _validate_facts)
        if got is None:
            fallback += batch
            continue
        for text, srcs in got:
            named = sorted({batch[s - 1] for s in (srcs or []) if 1 <= s <= len(batch)})
            facts.append((text, named or None, batch))
    out = rule_fact_candidates(prep, cfg, fallback) if fallback else []
    if not facts:
        return sorted(out, key=lambda c: c.pos)
    vecs = embed([t for t, _, _ in facts])
    sent_msg = np.array([s.msg for s in prep.sentences], dtype=np.int64)
    sent_vecs = np.stack([s.vec for s in prep.sentences]) if prep.sentences else np.zeros((0, vecs.shape[1]))
    for (text, given, batch), vec in zip(facts, vecs, strict=True):
        pos: list[int]
        if given is None:  # attribute to the batch message holding the most similar sentence
            rows = np.flatnonzero(np.isin(sent_msg, batch))
            pos = [int(sent_msg[rows[int(np.argmax(sent_vecs[rows] @ vec))]])] if rows.size else [batch[-1]]
        else:
            pos = given
        m = msgs[pos[-1]]
        out.append(Candidate(text, vec, pos[-1], pos, m.at, m.session, _speaker(msgs[pos[0]]), "llm"))
    return sorted(out, key=lambda c: c.pos)


def extractive_summary(vecs: np.ndarray, k: int) -> list[int]:
    """Rows of the ``k`` sentences closest to the centroid, in original order (§1.6)."""
    if len(vecs) == 0:
        return []
    centroid = vecs.astype(np.float64).mean(axis=0)
    cos = vecs.astype(np.float64) @ centroid
    order = np.argsort(-cos, kind="stable")[:k]
    return sorted(int(i) for i in order)


def _clean(text: str) -> str:
    t = text.strip().strip("`").strip()
    return re.sub(r"^(summary)\s*:\s*", "", t, flags=re.IGNORECASE).strip()


def llm_summary(llm: Any, lines: Sequence[str], date: str, usage: LLMUsage) -> str | None:
    """SGMem's summary prompt over a session's ``Speaker: text`` lines; ``None`` on unusable output."""
    dialogue = "\n".join(lines)
    if len(dialogue) > MAX_PROMPT_CHARS:
        dialogue = "…\n" + dialogue[-MAX_PROMPT_CHARS:]
    text = complete_text(llm, prompts.SESSION_SUMMARY.format(date=date, dialogue=dialogue), usage, "summary")
    out = _clean(text) if text is not None else ""
    if not out or out.lstrip().startswith(("[", "{")):
        usage.task("summary").fallbacks += 1
        return None
    return out


def _validate_insights(value: Any) -> list[tuple[str | None, str]] | None:
    if not isinstance(value, list):
        return None
    out: list[tuple[str | None, str]] = []
    for item in value:
        if isinstance(item, str) and item.strip():
            out.append((None, " ".join(item.split())))
        elif isinstance(item, dict):
            content = item.get("content") or item.get("insight") or item.get("text")
            if isinstance(content, str) and content.strip():
                ts = item.get("timestamp")
                out.append((ts if isinstance(ts, str) else None, " ".join(content.split())))
    return out


def llm_insights(llm: Any, facts: Sequence[tuple[datetime, str]], usage: LLMUsage) -> list[tuple[datetime, str]] | None:
    """SGMem's insight prompt over timestamped facts; ``None`` on unusable output.

    An insight's time is the timestamp the model gives when it parses, else
    the newest fact's.
    """
    lines = "\n".join(f'{{"timestamp": "{at.date().isoformat()}", "content": {text!r}}}' for at, text in facts)
    got = complete_json(llm, prompts.INSIGHTS.format(facts=lines), usage, "insights", _validate_insights)
    if got is None:
        return None
    newest = max(at for at, _ in facts)
    out = []
    for ts, content in got:
        at = newest
        if ts:
            try:
                parsed = datetime.fromisoformat(ts.strip())
                at = parsed if parsed.tzinfo else parsed.replace(tzinfo=newest.tzinfo)
            except ValueError:
                pass
        out.append((at, content))
    return out


def cluster_insights(vecs: np.ndarray, min_cos: float, min_size: int, block: int = 1024) -> list[tuple[list[int], int]]:
    """Single-linkage clusters of ``vecs`` at cosine ≥ ``min_cos``: ``(members, medoid)``.

    Only clusters of at least ``min_size`` members are returned, largest first.
    O(N²·d) in blocks; used when ``insights="cluster"`` (see ``DerivedConfig``).
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(vecs)
    if n < min_size:
        return []
    v = np.asarray(vecs, dtype=np.float32)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    for b0 in range(0, n, block):
        sims = v[b0 : b0 + block] @ v.T
        r, c = np.nonzero(sims >= min_cos)
        rows.append(r + b0)
        cols.append(c)
    r_all, c_all = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(len(r_all), dtype=np.int8), (r_all, c_all)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    out = []
    for lab in np.unique(labels):
        members = [int(i) for i in np.flatnonzero(labels == lab)]
        if len(members) < min_size:
            continue
        sub = v[members].astype(np.float64)
        centre = sub.mean(axis=0)
        medoid = members[int(np.argmax(sub @ centre))]
        out.append((members, medoid))
    out.sort(key=lambda t: (-len(t[0]), t[1]))
    return out
