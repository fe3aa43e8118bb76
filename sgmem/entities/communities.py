"""Community summaries: an LLM-written name and description per entity community (seed §3.2.4, E.3).

LightGMEM ends community construction with "an LLM generates a short name and
description for each community node" (§3.2.4), and retrieval scores a
community description like any other memory (eq. 15: ``d`` may be a community
description) and keeps the best two (Table 7: community context nodes).

Here, with an LLM only (:attr:`EntityConfig.community_summaries`):

- **Deferred, like the profiles** (eq. 10–11). After an add that links two or
  more entities in a turn (the only adds that change the co-occurrence graph),
  the communities of the graph *with* the add are recomputed; each community
  holding an entity of the add is summarised once it has
  ``community_min_episodes`` supporting episodes (turns mentioning at least
  two of its entities; Table 6: 2), and summarised again once its supporting
  episodes exceed what its stored summary absorbed by ``community_batch``. A re-formed community keeps the
  summary of the stored one it overlaps most (entity-set Jaccard ≥
  ``community_match``) and replaces it when due.
- **Stored** in ``entity_communities`` with the messages it was written from
  (``entity_community_sources``, cascading with the message); a delete removes
  every summary that lost a source (:func:`prune_summaries`).
- **Used** by ``mode="entity"``: summaries are ranked by their cosine to the
  query (plus one when they hold a query anchor), the best
  ``community_context`` are kept, and their supporting turns gain
  ``community_share`` in ``s_graph``, with the summary in the hit's ``why``.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..prompts import ENTITY_COMMUNITY
from ..pyramid.llmio import Usage, call_json
from .config import EntityConfig

__all__ = [
    "CommunityPlan",
    "CommunityRow",
    "apply_summaries",
    "load_summaries",
    "plan_summaries",
    "prune_summaries",
    "rank_summaries",
]


@dataclass
class CommunityRow:
    """A stored community summary."""

    id: int
    members: frozenset[int]
    name: str
    summary: str
    episodes: int
    sources: tuple[int, ...] = ()


@dataclass
class CommunityPlan:
    """A summary planned by an add (ids may be placeholders of the add, see :func:`apply_summaries`)."""

    members: list[int]
    name: str
    summary: str
    episodes: int
    sources: list[int]  # stored message ids (>= 0) or -1 - (message index in the add)
    replaces: int | None = None


@dataclass
class _Graph:
    cooc: dict[int, Counter[int]]
    turns: dict[int, set[int]]  # turn key -> linked entities in it (key < 0: a turn of the add)


def _graph_with_add(
    snap: Any, mentions: Sequence[tuple[Any, ...]], relations: Sequence[tuple[int, int, str, int]] = ()
) -> _Graph | None:
    """The entity graph ``E_rel ∪ E_weak`` (eq. 12) with the add's mentions and relations, or None when
    the add links no two entities (a relation between two names of a turn is a co-occurrence too)."""
    new: dict[int, set[int]] = defaultdict(set)
    for eid, mi, _s, _t, _sc, start, _e in mentions:
        if start >= 0:
            new[-1 - int(mi)].add(int(eid))
    new = {k: v for k, v in new.items() if len(v) >= 2}
    if not new:
        return None
    cooc: dict[int, Counter[int]] = defaultdict(Counter)
    for u, nbrs in snap.entity_graph().items():
        cooc[u].update(nbrs)
    for ents in new.values():
        ids = sorted(ents)
        for i, u in enumerate(ids):
            for v in ids[i + 1 :]:
                cooc[u][v] += 1
                cooc[v][u] += 1
    for mi, h, _phrase, t in relations:  # explicit evidence, between names of the turn (not its speaker)
        if h in new.get(-1 - mi, ()) and t in new.get(-1 - mi, ()):
            cooc[h][t] += 1
            cooc[t][h] += 1
    turns = {mid: {m.entity_id for m in ms if m.start >= 0} for mid, ms in snap.by_message.items()}
    turns = {k: v for k, v in turns.items() if len(v) >= 2}
    turns.update(new)
    return _Graph(cooc, turns)


def _jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def match_stored(members: frozenset[int], stored: dict[int, CommunityRow], floor: float) -> CommunityRow | None:
    """The stored summary whose entity set overlaps ``members`` most (Jaccard ≥ ``floor``)."""
    best = max(stored.values(), key=lambda r: (_jaccard(members, r.members), -r.id), default=None)
    return best if best is not None and _jaccard(members, best.members) >= floor else None


def plan_summaries(
    snap: Any,
    mentions: Sequence[tuple[Any, ...]],
    new_names: dict[int, tuple[str, str]],
    messages: Sequence[Any],
    cfg: EntityConfig,
    llm: Any,
    usage: Usage,
    texts: Callable[[list[int]], list[str]] | None,
    relations: Sequence[tuple[int, int, str, int]] = (),
) -> list[CommunityPlan]:
    """The community summaries an add makes due (one LLM call each), deferred by ``community_batch``.

    Args:
        snap: the scope's :class:`~sgmem.entities.index.EntityIndex` before the add.
        mentions: the add's planned mentions ``(entity or placeholder, message index, …, start, end)``.
        new_names: the add's new entities, placeholder → (name, type).
        messages: the add's messages.
        texts: stored turn texts by message id.
        relations: the add's relation edges ``(message index, head, phrase, tail)``.
    """
    if not cfg.community_summaries or llm is None:
        return []
    g = _graph_with_add(snap, mentions, relations)
    if g is None:
        return []
    from .graph import ego_split_communities

    comms = [c for c in ego_split_communities(g.cooc) if len(c) >= cfg.community_min]
    touched = {e for k, ents in g.turns.items() if k < 0 for e in ents}
    by_entity: dict[int, list[int]] = defaultdict(list)
    for k, ents in g.turns.items():
        for e in ents:
            by_entity[e].append(k)
    out: list[CommunityPlan] = []
    taken: set[int] = set()
    for c in comms:
        if not c & touched:
            continue
        hits = Counter(k for e in c for k in by_entity.get(e, ()))
        support = sorted((k for k, n in hits.items() if n >= 2), key=lambda k: (k < 0, k if k >= 0 else -k))
        match = match_stored(frozenset(e for e in c if e >= 0), snap.summaries, cfg.community_match)
        if match is not None and match.id in taken:
            continue  # one re-summary per stored summary and add
        # first summary at Table 6's minimum of supporting episodes; an update once a batch more accrued
        due = (
            len(support) - match.episodes >= cfg.community_batch
            if match is not None
            else len(support) >= cfg.community_min_episodes
        )
        if not due:
            continue
        shown = support[-cfg.community_episodes :]
        got = _summarise(snap, c, g, shown, new_names, messages, llm, usage, texts)
        if got is None:
            continue
        if match is not None:
            taken.add(match.id)
        out.append(CommunityPlan(sorted(c), got[0], got[1], len(support), shown, match.id if match else None))
    return out


def _summarise(
    snap: Any,
    members: frozenset[int],
    g: _Graph,
    shown: list[int],
    new_names: dict[int, tuple[str, str]],
    messages: Sequence[Any],
    llm: Any,
    usage: Usage,
    texts: Callable[[list[int]], list[str]] | None,
) -> tuple[str, str] | None:
    def name_type(e: int) -> tuple[str, str]:
        return new_names[e] if e < 0 else (snap.entities[e].name, snap.type_of(e))

    counts = Counter(e for k in g.turns for e in g.turns[k] if e in members)
    ents = [
        {"name": name_type(e)[0], "entity_type": name_type(e)[1], "mention_count": counts[e]}
        for e in sorted(members, key=lambda e: (-counts[e], e))
    ]
    stored = [k for k in shown if k >= 0]
    lines = dict(zip(stored, texts(stored) if texts and stored else [], strict=False))
    for k in shown:
        if k < 0:
            m = messages[-1 - k]
            lines[k] = f"({m.at.date().isoformat()}) {m.name or m.role}: {m.content}"
    msgs = "\n".join(f"- {lines[k][:600]}" for k in shown if k in lines)
    prompt = ENTITY_COMMUNITY.format(entities=json.dumps(ents, ensure_ascii=False), messages=msgs)
    raw = call_json(llm, prompt, usage, "entity-community")
    name = raw.get("name") if isinstance(raw, dict) else None
    desc = raw.get("description") if isinstance(raw, dict) else None
    if isinstance(desc, str) and desc.strip():
        return (name.strip()[:200] if isinstance(name, str) and name.strip() else "community"), desc.strip()[:2000]
    if raw is not None:
        usage.malformed += 1
    return None


def apply_summaries(
    conn: Any,
    scope_id: int,
    plans: Sequence[CommunityPlan],
    real: dict[int, int],
    message_ids: Sequence[int],
) -> tuple[list[CommunityRow], list[int]]:
    """Store an add's summaries inside its transaction; return them and the ids they replaced.

    ``real`` maps the add's entity placeholders to their ids. A summary whose
    stored source went in the meantime (a concurrent delete) is not stored.
    """
    added: list[CommunityRow] = []
    dropped: list[int] = []
    if not plans:
        return added, dropped
    for p in plans:
        stored = sorted({s for s in p.sources if s >= 0})
        if stored:
            marks = ",".join("?" * len(stored))
            n = conn.execute(
                f"SELECT COUNT(*) FROM messages WHERE scope_id = ? AND id IN ({marks})", (scope_id, *stored)
            ).fetchone()[0]
            if int(n) != len(stored):
                continue
        if p.replaces is not None:
            conn.execute("DELETE FROM entity_communities WHERE scope_id = ? AND id = ?", (scope_id, p.replaces))
            dropped.append(p.replaces)
        members = frozenset(real.get(e, e) for e in p.members)
        sources = tuple(sorted({s if s >= 0 else int(message_ids[-1 - s]) for s in p.sources}))
        cur = conn.execute(  # the id is drawn by the database (see sgmem.entities.store)
            "INSERT INTO entity_communities (scope_id, members, name, summary, episodes, sources) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (scope_id, " ".join(map(str, sorted(members))), p.name, p.summary, p.episodes, len(sources)),
        )
        top = int(cur.lastrowid)
        conn.executemany(
            "INSERT INTO entity_community_sources (community_id, message_id, scope_id) VALUES (?, ?, ?)",
            [(top, m, scope_id) for m in sources],
        )
        added.append(CommunityRow(top, members, p.name, p.summary, p.episodes, sources))
    return added, dropped


def load_summaries(conn: Any, scope_id: int) -> list[CommunityRow]:
    """A scope's community summaries that still have every source."""
    src: dict[int, list[int]] = defaultdict(list)
    for cid, mid in conn.execute(
        "SELECT community_id, message_id FROM entity_community_sources WHERE scope_id = ? ORDER BY message_id",
        (scope_id,),
    ):
        src[int(cid)].append(int(mid))
    out = []
    for r in conn.execute(
        "SELECT id, members, name, summary, episodes, sources FROM entity_communities WHERE scope_id = ? ORDER BY id",
        (scope_id,),
    ):
        cid = int(r[0])
        if len(src.get(cid, ())) != int(r[5]):
            continue  # lost a source: pruned by the delete's transaction, never shown
        out.append(CommunityRow(cid, frozenset(int(x) for x in r[1].split()), r[2], r[3], int(r[4]), tuple(src[cid])))
    return out


def prune_summaries(conn: Any, scope_id: int) -> int:
    """Delete the scope's summaries that lost a source message (after a delete)."""
    cur = conn.execute(
        "DELETE FROM entity_communities WHERE scope_id = ? AND sources > "
        "(SELECT COUNT(*) FROM entity_community_sources s WHERE s.scope_id = entity_communities.scope_id "
        "AND s.community_id = entity_communities.id)",
        (scope_id,),
    )
    return int(cur.rowcount or 0)


def rank_summaries(
    index: Any,
    query: str,
    anchors: set[int],
    embed: Callable[[list[str]], np.ndarray],
    keep: int,
) -> list[tuple[CommunityRow, float]]:
    """The ``keep`` summaries closest to the query (cosine, plus 1 when they hold an anchor), best first."""
    rows = list(index.summaries.values())
    if not rows:
        return []
    vecs = index.summary_vectors(embed)
    q = np.asarray(embed([query]), dtype=np.float32)[0]
    scored = [(r, float(vecs[r.id] @ q) + (1.0 if r.members & anchors else 0.0)) for r in rows]
    scored.sort(key=lambda t: (-t[1], t[0].id))
    return scored[:keep]
