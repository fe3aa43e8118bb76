"""Entity-anchored retrieval (seed §3.3, eq. 15): the ``entity`` mode and the hybrid's entity channel.

A query is matched against the scope's canonical entities (its **anchors**:
the people, places and titles it names) and read for the entity **types** it
names by a category word ("Which *cities*…" → place, "What video *games*…" →
game; :func:`sgmem.entities.extract.query_categories`). A turn's graph score
``s_graph`` is its connectivity to those anchors and types:

- it mentions an entity of a named type: 1, times 1 if the turn is linked to an
  anchor (mentions one, or an anchor said it) and ``anchor_gate`` otherwise —
  "Which cities has John been to?" reaches John's turn about Chicago;
- (``entity`` mode only) it mentions an anchor: 0.5; it mentions an entity
  adjacent to an anchor by a weak co-occurrence edge or in one of its
  communities: ``0.5 · neighbour_share``;
- (``entity`` mode, with an LLM's community summaries) it is a supporting turn
  of one of the ``community_context`` summaries closest to the query:
  ``community_share``, the summary in its ``why`` (seed eq. 15 scores
  community descriptions too; Table 7 keeps two).

- (``entity`` mode, with an LLM's relation edges E_rel, :mod:`sgmem.entities.relations`)
  an entity related to an anchor is its neighbour (eq. 12: ``E_ent = E_rel ∪
  E_weak``), so the turns mentioning it gain ``0.5 · neighbour_share``, the
  relation in their ``why`` (``via_relations``); and a turn gains
  ``relation_bonus`` per relation read from it that matches the query (Table
  7's matched-relation bonus: both ends are anchors, or one is and the
  relation phrase shares a query term), the relations in ``why``.
- (``entity`` mode) entity profiles are documents too (eq. 15; Table 7): each
  entity's profile (the LLM's deferred one, or extractive: its latest mention
  sentences; the speakers' own are left out) is scored by eq. 15 against the
  query, and the ``profile_episodes`` turns of each of the ``profile_context``
  best that are closest to the query gain ``profile_share`` times the
  profile's score, the profile in their ``why``.

The hybrid channel is the type term alone (a query naming no category leaves
the hybrid unchanged). ``mode="entity"`` ranks the anchored, typed and
community turns plus the ``candidates`` densest ones by
``λ_sem · s_sem + λ_lex · s_lex + λ_graph · s_graph`` (eq. 15), s_sem being
the best sentence cosine and s_lex the hybrid's lexical score.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np

from ..text.lexical import STOPWORDS, analyze, tokenize
from .communities import rank_summaries
from .config import EntityConfig
from .extract import TypeModel, find_spans, norm_name, query_categories
from .index import EntityIndex

__all__ = [
    "EntityQuery",
    "EntityTools",
    "entity_profile",
    "matched_relations",
    "profile_scores",
    "read_query",
    "type_channel",
]


@dataclass
class EntityTools:
    """What entity retrieval needs beyond the turn index."""

    index: EntityIndex
    types: TypeModel
    embed: Callable[[list[str]], np.ndarray]
    cfg: EntityConfig


@dataclass
class EntityQuery:
    """A query read against the entity index."""

    anchors: dict[int, str] = field(default_factory=dict)  # entity id -> name
    categories: dict[str, tuple[str, float]] = field(default_factory=dict)  # type -> (word, cosine)
    text: str = ""


def read_query(tools: EntityTools, query: str) -> EntityQuery:
    """The query's anchor entities and the entity types it names."""
    ei = tools.index
    out = EntityQuery(text=query)
    names = {x.norm for x in find_spans(query, frozenset(ei.by_norm)) if x.kind in ("name", "title")}
    words = [w for w in tokenize(query) if w not in STOPWORDS]
    # a lower-cased name in the question still anchors ("what did john say")
    names |= {w for w in (norm_name(w) for w in words) if w in ei.by_norm and ei.type_of(ei.by_norm[w]) == "person"}
    for n in names:
        eid = ei.by_norm.get(n)
        if eid is None:
            best = ei.candidates(n, 1)
            if best and best[0][1] >= tools.cfg.resolve_jaccard:
                eid = best[0][0]
        if eid is not None:
            out.anchors[eid] = ei.entities[eid].name
    cat_words = [w for w in words if norm_name(w) not in names and not w[:1].isdigit()]
    out.categories = query_categories(cat_words, tools.embed, tools.types, tools.cfg.query_type_cosine)
    return out


def _turn_mentions(tools: EntityTools, idx: Any) -> list[list[tuple[int, str]]]:
    """Per turn row: (entity id, mention type) of its mentions."""
    per: list[list[tuple[int, str]]] = [[] for _ in range(idx.n_turns)]
    for mid, ms in tools.index.by_message.items():
        r = idx.msg_row(mid)
        if r is not None:
            per[r] = [(m.entity_id, m.type) for m in ms]
    return per


def type_channel(
    tools: EntityTools, idx: Any, eq: EntityQuery
) -> tuple[np.ndarray, dict[int, dict[str, Any]], np.ndarray]:
    """The type term of ``s_graph`` per turn, each scored turn's ``why``, and the anchored-turn mask."""
    n = idx.n_turns
    score = np.zeros(n)
    linked = np.zeros(n, dtype=bool)
    why: dict[int, dict[str, Any]] = {}
    if not eq.categories and not eq.anchors:
        return score, why, linked
    ei = tools.index
    per = _turn_mentions(tools, idx)
    gate = tools.cfg.anchor_gate
    for r, ms in enumerate(per):
        ents = {e for e, _ in ms}
        linked[r] = bool(ents & eq.anchors.keys())
        if not eq.categories:
            continue
        hits = []
        for e, _t in ms:
            if e in eq.anchors:
                continue
            t = ei.type_of(e)
            if t in eq.categories:
                hits.append({"entity": ei.entities[e].name, "type": t, "category": eq.categories[t][0]})
        if hits:
            score[r] = 1.0 if (linked[r] or not eq.anchors) else gate
            why[r] = {"matched": hits[:5], "anchors": [eq.anchors[e] for e in ents & eq.anchors.keys()]}
    return score, why, linked


def graph_scores(
    tools: EntityTools, idx: Any, eq: EntityQuery, q: np.ndarray | None = None
) -> tuple[np.ndarray, dict[int, dict[str, Any]], np.ndarray]:
    """``s_graph`` of eq. 15 for ``mode="entity"``, the ``why`` per turn, and the candidate mask.

    ``q``: the query's vector; with it, entity profiles are scored as documents
    (eq. 15) and the turns of the ``profile_context`` best gain ``profile_share`` × its score.
    """
    s_type, why, linked = type_channel(tools, idx, eq)
    ei = tools.index
    near: set[int] = set()
    rel_near: dict[int, str] = {}  # an anchor's relation neighbour -> "anchor relation neighbour" (for why)
    if eq.anchors:
        co = ei.cooccurrence()
        comms, member = ei.communities(tools.cfg.community_min)
        radj = ei.relation_neighbours()
        for a in eq.anchors:
            near.update(co.get(a, {}).keys())
            for c in member.get(a, ()):
                near.update(comms[c])
            # E_ent = E_rel ∪ E_weak (eq. 12): an entity related to an anchor is its neighbour too, the
            # anchor's own speaker turns included ("I adopted Biscuit": Caroline -> Biscuit)
            for other, rel in radj.get(a, ()):
                near.add(other)
                rel_near.setdefault(other, _relation_text(ei, rel))
        near -= set(eq.anchors)
    s = s_type.copy()
    s += 0.5 * linked
    cand = (s_type > 0) | linked
    if ei.relations and eq.anchors and tools.cfg.relation_bonus > 0:
        # Table 7's matched-relation bonus: relation_bonus per relation of a turn that matches the query
        for turn, texts in matched_relations(tools, idx, eq).items():
            s[turn] += tools.cfg.relation_bonus * len(texts)
            cand[turn] = True
            why.setdefault(turn, {})["relations"] = texts[:3]
    if near:
        per = _turn_mentions(tools, idx)
        for r, ms in enumerate(per):
            hit = [e for e, _ in ms if e in near]
            if hit:
                s[r] += 0.5 * tools.cfg.neighbour_share
                cand[r] = True
                why.setdefault(r, {})["neighbours"] = [ei.entities[e].name for e in hit[:3]]
                via = [rel_near[e] for e in hit if e in rel_near]
                if via:
                    why[r]["via_relations"] = via[:3]
    if ei.summaries and tools.cfg.community_context > 0:
        # LLM community summaries (§3.2.4; Table 7: the best `community_context` kept): their turns gain a share
        kept = rank_summaries(ei, eq.text, set(eq.anchors), tools.embed, tools.cfg.community_context)
        for comm, score in kept:
            for mid in ei.supporting_turns(comm.members):
                r = idx.msg_row(mid)
                if r is None:
                    continue
                s[r] += tools.cfg.community_share
                cand[r] = True
                why.setdefault(r, {}).setdefault(
                    "community", {"name": comm.name, "summary": comm.summary, "score": round(score, 4)}
                )
    if q is not None and tools.cfg.profile_context > 0:
        tv: np.ndarray | None = None
        for eid, score, text, kind in profile_scores(tools, idx, eq, q, near):
            rows = [r for r in (idx.msg_row(m) for m in ei.episodes.get(eid, [])) if r is not None]
            if len(rows) > tools.cfg.profile_episodes:
                # [D] the supporting turns closest to the query (Table 7 keeps 12; which 12 is not said)
                tv = idx.turn_vectors() if tv is None else tv
                order = np.argsort(-(tv[rows] @ np.asarray(q, dtype=np.float32).ravel()), kind="stable")
                rows = [rows[i] for i in order[: tools.cfg.profile_episodes]]
            for r in rows:
                s[r] += tools.cfg.profile_share * max(score, 0.0)
                cand[r] = True
                why.setdefault(r, {}).setdefault(
                    "profile",
                    {"entity": ei.entities[eid].name, "kind": kind, "text": text[:300], "score": round(score, 4)},
                )
    for row in np.flatnonzero(linked):
        why.setdefault(int(row), {}).setdefault("anchors", [])
    return s, why, cand


def _relation_text(ei: EntityIndex, r: Any) -> str:
    """A relation edge as shown in ``why``: "head relation tail"."""
    return f"{ei.entities[r.head].name} {r.relation} {ei.entities[r.tail].name}"


@lru_cache(maxsize=8192)
def _phrase_terms(phrase: str) -> frozenset[str]:
    return frozenset(analyze(phrase))


def matched_relations(tools: EntityTools, idx: Any, eq: EntityQuery) -> dict[int, list[str]]:
    """Per turn row, the relations read from it that match the query (Table 7: matched relation pairs).

    A relation matches when its pair overlaps the query's: both ends are
    query anchors ("What did Caroline give Melanie?" and Caroline —gave→
    Melanie), or [D] one end is an anchor and its relation phrase shares a
    content term with the query (the phrase scored against the query:
    "Which pet did Caroline adopt?" and Caroline —adopted→ Biscuit).
    """
    ei = tools.index
    qterms = set(analyze(eq.text))
    anchors = set(eq.anchors)
    out: dict[int, list[str]] = {}
    for mid, rs in ei.relations.items():
        row = None
        for rel in rs:
            ends = {rel.head, rel.tail} & anchors
            if not ends or (len(ends) < 2 and not qterms & _phrase_terms(rel.relation)):
                continue
            row = idx.msg_row(mid) if row is None else row
            if row is None:
                break
            out.setdefault(row, []).append(_relation_text(ei, rel))
    return out


#: extractive profiles built for a cached entity index: entity id -> (its latest episodes, text, unit vector)
_EXTRACTIVE: WeakKeyDictionary[EntityIndex, dict[int, tuple[tuple[int, ...], str, np.ndarray | None]]] = (
    WeakKeyDictionary()
)

#: mention sentences an extractive profile holds (ALGORITHMS §4.3: the 3 most recent)
EXTRACTIVE_TURNS = 3


def entity_profile(tools: EntityTools, idx: Any, eid: int) -> tuple[str, np.ndarray | None, str]:
    """An entity's profile as eq. 15 scores it: (text, unit vector, ``"llm"`` or ``"extractive"``).

    The LLM's deferred profile when there is one (embedded with the word cache);
    else extractive: the sentences of its latest mention turns that name it
    (every sentence of such a turn when none does), their stored vectors averaged.
    """
    ei = tools.index
    row = ei.entities[eid]
    if row.profile:
        text = row.profile
        return text, tools.embed([text[:2000]])[0], "llm"
    eps = tuple(ei.episodes.get(eid, [])[-EXTRACTIVE_TURNS:])
    cache = _EXTRACTIVE.setdefault(ei, {})
    hit = cache.get(eid)
    if hit is not None and hit[0] == eps:
        return hit[1], hit[2], "extractive"
    rows: list[int] = []
    parts: list[str] = []
    name = row.norm
    for mid in eps:
        r = idx.msg_row(mid)
        if r is None:
            continue
        srows = idx.turn_sentences(r)
        texts = idx.sentence_texts(srows)
        own = [(sr, t) for sr, t in zip(srows, texts, strict=True) if name and name in norm_name(t)]
        for sr, t in own or list(zip(srows, texts, strict=True)):
            rows.append(int(sr))
            parts.append(t)
    vec: np.ndarray | None = None
    if rows:
        v = idx.sentence_vectors()[rows].astype(np.float64).sum(axis=0)
        nv = float(np.linalg.norm(v))
        vec = (v / nv).astype(np.float32) if nv > 0 else None
    text = " … ".join(parts)
    cache[eid] = (eps, text, vec)
    return text, vec, "extractive"


def profile_scores(
    tools: EntityTools, idx: Any, eq: EntityQuery, q: np.ndarray, near: set[int]
) -> list[tuple[int, float, str, str]]:
    """The ``profile_context`` best entity profiles by eq. 15: ``(entity, score, text, kind)``, best first.

    ``s_sem`` is the profile's cosine to the query, ``s_lex`` the share of the
    query's terms it holds, ``s_graph`` 1 for an anchor and ``neighbour_share``
    for an entity next to one (co-occurrence or community).
    """
    cfg = tools.cfg
    ei = tools.index
    qterms = set(analyze(eq.text))
    scored: list[tuple[int, float, str, str]] = []
    qv = np.asarray(q, dtype=np.float32).ravel()
    # [D] the conversation's speakers are in every turn: their profiles would lift turns by recency alone
    speakers = {m.entity_id for ms in ei.by_message.values() for m in ms if m.start < 0}
    for eid, row in list(ei.entities.items()):
        if row.type in ("date", "number") or eid in speakers or not ei.episodes.get(eid):
            continue
        text, vec, kind = entity_profile(tools, idx, eid)
        if vec is None:
            continue
        s_sem = float(vec @ qv)
        s_lex = len(qterms & set(analyze(text))) / len(qterms) if qterms else 0.0
        s_graph = 1.0 if eid in eq.anchors else cfg.neighbour_share if eid in near else 0.0
        scored.append((eid, cfg.w_sem * s_sem + cfg.w_lex * s_lex + cfg.w_graph * s_graph, text, kind))
    scored.sort(key=lambda t: -t[1])
    return scored[: cfg.profile_context]
