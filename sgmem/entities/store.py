"""The entity layer's tables: canonical entities and their mentions per turn.

Migration ``entities`` (appended to :data:`sgmem.store.schema.MIGRATIONS`) is
plain SQL that SQLite and PostgreSQL both accept (no BLOB, no WITHOUT ROWID).
Ids are drawn by the database: the rowid on SQLite, an identity column on
PostgreSQL (migration ``0009_entity_ids``), so writers on many hosts never collide.

- ``entities``: one canonical entity per row, with its name, normalised key,
  type and type confidence, and its deferred profile (seed §3.2.3): the text
  and how many episodes it has absorbed (``H^prof``).
- ``entity_mentions``: entity → turn, with the surface form, its type and
  offsets (seed eq. 4; the context is the turn's sentence, the time the
  turn's). A mention goes with its message (``ON DELETE CASCADE``); an entity
  left without mentions is pruned by the delete's transaction (:func:`prune`).

- ``entity_relations``: relation edges E_rel (with an LLM, :mod:`sgmem.entities.relations`):
  head entity, relation phrase, tail entity and the message it was read from;
  gone with the message or either entity (``ON DELETE CASCADE``).

Weak co-occurrence edges and communities are derived from the mentions when a
scope's entity index is loaded, so a delete can never leave them stale. The
LLM's community summaries are stored (:mod:`sgmem.entities.communities`) and
removed with any message they were written from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..store.schema import ENTITY_MIGRATION  # the SQL lives with the other migrations
from .communities import CommunityPlan, CommunityRow, apply_summaries, prune_summaries
from .relations import RelationRow

__all__ = [
    "ENTITY_MIGRATION",
    "EntityRow",
    "MentionRow",
    "apply_entities",
    "load_relations",
    "load_rows",
    "prune",
]


@dataclass
class EntityRow:
    """A canonical entity as stored."""

    id: int
    name: str
    norm: str
    type: str
    type_score: float
    profile: str | None = None
    profiled: int = 0


@dataclass
class MentionRow:
    """A mention as stored (``message_id`` is the turn's row id in ``messages``)."""

    entity_id: int
    message_id: int
    surface: str
    type: str
    score: float
    start: int
    end: int


@dataclass
class Applied:
    """What :func:`apply_entities` stored, for extending a cached index in place."""

    entities: list[EntityRow] = field(default_factory=list)
    mentions: list[MentionRow] = field(default_factory=list)
    profiles: list[tuple[int, str, int]] = field(default_factory=list)
    summaries: list[CommunityRow] = field(default_factory=list)
    dropped_summaries: list[int] = field(default_factory=list)
    relations: list[RelationRow] = field(default_factory=list)


def apply_entities(
    conn: Any,
    scope_id: int,
    new_entities: Sequence[EntityRow],
    mentions: Sequence[tuple[int, int, str, str, float, int, int]],
    message_ids: Sequence[int],
    profiles: Sequence[tuple[int, str, int] | CommunityPlan] = (),
    relations: Sequence[tuple[int, int, str, int]] = (),
) -> Applied:
    """Store an add's entities and mentions inside its transaction.

    Args:
        new_entities: entities created by the add; their ``id`` is a negative
            placeholder (``-1 - i``) that mentions may refer to.
        mentions: ``(entity id or placeholder, message index in the add,
            surface, type, score, start, end)``.
        message_ids: the add's message row ids, by message index.
        profiles: the add's deferred LLM descriptions: entity profile updates
            ``(entity id, profile text, episodes absorbed)`` and community
            summaries (:class:`~sgmem.entities.communities.CommunityPlan`).
        relations: relation edges ``(message index, head, phrase, tail)``, the
            entities given as in ``mentions``; one whose entity has gone is dropped.
    """
    out = Applied()
    if not new_entities and not mentions and not profiles and not relations:
        return out
    # entities planned against a snapshot may have gone since (a concurrent delete): their mentions are dropped
    wanted = sorted(
        {int(m[0]) for m in mentions if m[0] >= 0} | {int(e) for r in relations for e in (r[1], r[3]) if e >= 0}
    )
    alive: set[int] = set()
    for i in range(0, len(wanted), 500):
        chunk = wanted[i : i + 500]
        marks = ",".join("?" * len(chunk))
        alive.update(
            int(r[0])
            for r in conn.execute(f"SELECT id FROM entities WHERE scope_id = ? AND id IN ({marks})", (scope_id, *chunk))
        )
    real: dict[int, int] = {}
    for e in new_entities:
        # the database draws the id (identity on PostgreSQL, rowid on SQLite): writers of other scopes, on
        # other hosts or behind row security, never get the same one
        cur = conn.execute(
            "INSERT INTO entities (scope_id, name, norm, type, type_score, profile, profiled) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (scope_id, e.name, e.norm, e.type, e.type_score, e.profile, e.profiled),
        )
        eid = int(cur.lastrowid)
        real[e.id] = eid
        out.entities.append(EntityRow(eid, e.name, e.norm, e.type, e.type_score, e.profile, e.profiled))
    seen: set[tuple[int, int, int]] = set()
    rows = []
    for ent, mi, surface, typ, score, a, b in mentions:
        eid = real.get(ent, ent)
        mid = int(message_ids[mi])
        if eid < 0 or (ent >= 0 and ent not in alive) or (eid, mid, a) in seen:
            continue
        seen.add((eid, mid, a))
        rows.append((eid, mid, scope_id, surface, typ, float(score), a, b))
        out.mentions.append(MentionRow(eid, mid, surface, typ, float(score), a, b))
    conn.executemany(
        "INSERT INTO entity_mentions (entity_id, message_id, scope_id, surface, type, score, start_char, end_char) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    rel_rows: dict[tuple[int, int, int, str], None] = {}
    for mi, head, phrase, tail in relations:
        h, t = real.get(head, head), real.get(tail, tail)
        if h < 0 or t < 0 or h == t or (head >= 0 and head not in alive) or (tail >= 0 and tail not in alive):
            continue
        rel_rows.setdefault((int(message_ids[mi]), h, t, phrase), None)
    if rel_rows:
        conn.executemany(
            "INSERT INTO entity_relations (message_id, head_id, tail_id, scope_id, relation) VALUES (?, ?, ?, ?, ?)",
            [(mid, h, t, scope_id, phrase) for mid, h, t, phrase in rel_rows],
        )
    out.relations = [RelationRow(mid, h, t, phrase) for mid, h, t, phrase in rel_rows]
    summaries = [p for p in profiles if isinstance(p, CommunityPlan)]
    for prof in profiles:
        if isinstance(prof, CommunityPlan):
            continue
        eid, text, n = prof
        eid = real.get(eid, eid)
        conn.execute(
            "UPDATE entities SET profile = ?, profiled = ? WHERE scope_id = ? AND id = ?", (text, n, scope_id, eid)
        )
        out.profiles.append((eid, text, n))
    out.summaries, out.dropped_summaries = apply_summaries(conn, scope_id, summaries, real, message_ids)
    return out


def load_rows(conn: Any, scope_id: int) -> tuple[list[EntityRow], list[MentionRow]]:
    """A scope's entities and mentions (mentions in message order)."""
    ents = [
        EntityRow(int(r[0]), r[1], r[2], r[3], float(r[4]), r[5], int(r[6]))
        for r in conn.execute(
            "SELECT id, name, norm, type, type_score, profile, profiled FROM entities WHERE scope_id = ? ORDER BY id",
            (scope_id,),
        )
    ]
    ments = [
        MentionRow(int(r[0]), int(r[1]), r[2], r[3], float(r[4]), int(r[5]), int(r[6]))
        for r in conn.execute(
            "SELECT entity_id, message_id, surface, type, score, start_char, end_char FROM entity_mentions "
            "WHERE scope_id = ? ORDER BY message_id, start_char",
            (scope_id,),
        )
    ]
    return ents, ments


def load_relations(conn: Any, scope_id: int) -> list[RelationRow]:
    """A scope's relation edges, in message order."""
    return [
        RelationRow(int(r[0]), int(r[1]), int(r[2]), r[3])
        for r in conn.execute(
            "SELECT message_id, head_id, tail_id, relation FROM entity_relations WHERE scope_id = ? "
            "ORDER BY message_id, head_id, tail_id, relation",
            (scope_id,),
        )
    ]


def prune(conn: Any, scope_id: int) -> int:
    """Delete the scope's entities left with no mention (their relation edges go with them, ``ON DELETE
    CASCADE``, as those of deleted messages did), and community summaries that lost a source message."""
    prune_summaries(conn, scope_id)
    cur = conn.execute(
        "DELETE FROM entities WHERE scope_id = ? AND NOT EXISTS "
        "(SELECT 1 FROM entity_mentions m WHERE m.scope_id = entities.scope_id AND m.entity_id = entities.id)",
        (scope_id,),
    )
    return int(cur.rowcount or 0)
