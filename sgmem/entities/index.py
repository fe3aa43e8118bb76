"""One scope's entity graph in memory: a cache of the store, keyed by the scope's generation.

Kept apart from :class:`sgmem.retrieval.index.ScopeIndex` (its own per-scope
cache, :class:`EntityCache`). Holds the canonical entities, their mentions
per turn, the weak co-occurrence edges (seed §3.2.1: ``a(u, v)`` = turns in
which both occur), the relation edges an LLM read (``E_rel``,
:mod:`sgmem.entities.relations`) and, computed on first use, the overlapping
communities by Ego-Splitting over ``E_rel ∪ E_weak`` (seed §3.2.4, eq. 12–14;
Epasto et al. 2017).
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..cache import ByteLRU, CacheView
from .communities import CommunityRow, load_summaries
from .relations import RelationRow
from .store import Applied, EntityRow, MentionRow, load_relations, load_rows

__all__ = ["EntityCache", "EntityIndex", "char_grams", "jaccard"]


def char_grams(norm: str, n: int = 3) -> frozenset[str]:
    """Character n-grams of a normalised name (padded), for fuzzy candidates and LSH-style keys."""
    s = f" {norm} "
    return frozenset(s[i : i + n] for i in range(max(len(s) - n + 1, 1)))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two gram sets."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


class EntityIndex:
    """Entities, mentions and the entity graph of one scope."""

    def __init__(self, scope_id: int, generation: int) -> None:
        self.scope_id = scope_id
        self.generation = generation
        self.entities: dict[int, EntityRow] = {}
        self.by_norm: dict[str, int] = {}
        self.grams: dict[int, frozenset[str]] = {}
        self.by_gram: dict[str, set[int]] = defaultdict(set)
        self.by_message: dict[int, list[MentionRow]] = defaultdict(list)
        self.episodes: dict[int, list[int]] = defaultdict(list)  # entity -> message ids (H(v))
        self.type_votes: dict[int, Counter[str]] = defaultdict(Counter)
        self._cooc: dict[int, Counter[int]] | None = None
        self.relations: dict[int, list[RelationRow]] = defaultdict(list)  # message id -> its relation edges
        self._graph: dict[int, Counter[int]] | None = None
        self._rel_adj: dict[int, list[tuple[int, RelationRow]]] | None = None
        self._communities: tuple[list[frozenset[int]], dict[int, list[int]]] | None = None
        self.summaries: dict[int, CommunityRow] = {}  # LLM community summaries (seed §3.2.4), by id
        self._summary_vecs: dict[int, np.ndarray] = {}
        self.lock = threading.RLock()

    # ---------------------------------------------------------------- build
    def add_entity(self, e: EntityRow) -> None:
        self.entities[e.id] = e
        self.by_norm.setdefault(e.norm, e.id)
        g = char_grams(e.norm)
        self.grams[e.id] = g
        for x in g:
            self.by_gram[x].add(e.id)

    def add_mention(self, m: MentionRow) -> None:
        if m.entity_id not in self.entities:
            return
        self.by_message[m.message_id].append(m)
        eps = self.episodes[m.entity_id]
        if not eps or eps[-1] != m.message_id:
            eps.append(m.message_id)
        self.type_votes[m.entity_id][m.type] += 1
        self._cooc = None
        self._graph = None
        self._communities = None

    def add_relation(self, r: RelationRow) -> None:
        if r.head not in self.entities or r.tail not in self.entities:
            return
        self.relations[r.message_id].append(r)
        self._graph = None
        self._rel_adj = None
        self._communities = None

    def extend(self, applied: Applied) -> None:
        """Add what one committed add stored."""
        with self.lock:
            for e in applied.entities:
                self.add_entity(e)
            for m in applied.mentions:
                self.add_mention(m)
            for r in applied.relations:
                self.add_relation(r)
            for eid, text, n in applied.profiles:
                row = self.entities.get(eid)
                if row is not None:
                    row.profile, row.profiled = text, n
            for cid in applied.dropped_summaries:
                self.summaries.pop(cid, None)
            for c in applied.summaries:
                self.summaries[c.id] = c

    def without_messages(self, message_ids: frozenset[int]) -> EntityIndex:
        """A copy without the mentions of ``message_ids`` and the entities left with none (a replace's delete)."""
        with self.lock:
            kept = [m for mid, ms in self.by_message.items() if mid not in message_ids for m in ms]
            alive = {m.entity_id for m in kept}
            out = EntityIndex(self.scope_id, self.generation)
            for eid, e in self.entities.items():
                if eid in alive:
                    out.add_entity(e)
            for m in sorted(kept, key=lambda m: (m.message_id, m.start)):
                out.add_mention(m)
            for mid, rs in self.relations.items():
                if mid not in message_ids:
                    for r in rs:
                        out.add_relation(r)
            out.summaries = {c.id: c for c in self.summaries.values() if not message_ids.intersection(c.sources)}
            return out

    # ---------------------------------------------------------------- views
    def type_of(self, eid: int) -> str:
        """The entity's type: the majority over its mentions (the stored type on ties)."""
        votes = self.type_votes.get(eid)
        stored = self.entities[eid].type
        if not votes:
            return stored
        best = max(votes.values())
        return stored if votes.get(stored, 0) == best else max(votes, key=lambda t: (votes[t], t == stored))

    def candidates(self, norm: str, limit: int = 5) -> list[tuple[int, float]]:
        """Existing entities whose names share 3-grams with ``norm``, by Jaccard, best first."""
        g = char_grams(norm)
        pool: Counter[int] = Counter()
        for x in g:
            for eid in self.by_gram.get(x, ()):
                pool[eid] += 1
        scored = [(eid, jaccard(g, self.grams[eid])) for eid, _ in pool.most_common(limit * 4)]
        scored.sort(key=lambda t: -t[1])
        return scored[:limit]

    def cooccurrence(self) -> dict[int, Counter[int]]:
        """Weak association counts ``a(u, v)``: turns whose text mentions both entities (§3.2.1)."""
        with self.lock:
            if self._cooc is None:
                co: dict[int, Counter[int]] = defaultdict(Counter)
                for ms in self.by_message.values():
                    # [D] a turn's speaker is linked to the turn (an anchor) but not to the names in it:
                    # a speaker co-occurs with everything they mention, a hub that would fuse every ego-net
                    ids = sorted({m.entity_id for m in ms if m.start >= 0})
                    for i, u in enumerate(ids):
                        for v in ids[i + 1 :]:
                            co[u][v] += 1
                            co[v][u] += 1
                self._cooc = co
            return self._cooc

    def entity_graph(self) -> dict[int, Counter[int]]:
        """The weighted entity graph of eq. 12, ``E_ent = E_rel ∪ E_weak``: co-occurrence counts plus
        relation counts ("edge weights reflect the frequency of explicit or weak association evidence").

        [D] As for co-occurrence, a relation with the turn's speaker ("I adopted Biscuit") is left out
        here (a speaker would be a hub fusing every ego-net); :meth:`relation_neighbours` keeps it.
        """
        with self.lock:
            if self._graph is None:
                g: dict[int, Counter[int]] = defaultdict(Counter)
                for u, nbrs in self.cooccurrence().items():
                    g[u].update(nbrs)
                for mid, rs in self.relations.items():
                    speakers = {m.entity_id for m in self.by_message.get(mid, ()) if m.start < 0}
                    for r in rs:
                        if r.head not in speakers and r.tail not in speakers:
                            g[r.head][r.tail] += 1
                            g[r.tail][r.head] += 1
                self._graph = g
            return self._graph

    def relation_neighbours(self) -> dict[int, list[tuple[int, RelationRow]]]:
        """Per entity, ``(the other entity, the relation)`` of every relation edge it is an end of."""
        with self.lock:
            if self._rel_adj is None:
                adj: dict[int, list[tuple[int, RelationRow]]] = defaultdict(list)
                for rs in self.relations.values():
                    for r in rs:
                        adj[r.head].append((r.tail, r))
                        adj[r.tail].append((r.head, r))
                self._rel_adj = adj
            return self._rel_adj

    def communities(self, min_size: int = 2) -> tuple[list[frozenset[int]], dict[int, list[int]]]:
        """Overlapping communities by Ego-Splitting over :meth:`entity_graph`, and each entity's memberships μ(v)."""
        with self.lock:
            if self._communities is None:
                from .graph import ego_split_communities

                comms = [c for c in ego_split_communities(self.entity_graph()) if len(c) >= min_size]
                member: dict[int, list[int]] = defaultdict(list)
                for i, c in enumerate(comms):
                    for v in c:
                        member[v].append(i)
                self._communities = (comms, dict(member))
            return self._communities

    def summary_vectors(self, embed: Any) -> dict[int, np.ndarray]:
        """Unit vectors of the community summaries (name and description), embedded on first use."""
        with self.lock:
            todo = [c for cid, c in self.summaries.items() if cid not in self._summary_vecs]
            if todo:
                vecs = np.asarray(embed([f"{c.name}. {c.summary}" for c in todo]), dtype=np.float32)
                for c, v in zip(todo, vecs, strict=False):
                    n = float(np.linalg.norm(v))
                    self._summary_vecs[c.id] = v / n if n > 0 else v
            return dict(self._summary_vecs)

    def supporting_turns(self, members: frozenset[int]) -> list[int]:
        """Message ids of the turns that mention two or more of ``members`` (a community's episodes)."""
        return [
            mid
            for mid, ms in self.by_message.items()
            if len({m.entity_id for m in ms if m.start >= 0 and m.entity_id in members}) >= 2
        ]

    def nbytes(self) -> int:
        """Estimated memory of this index (for ``Config.cache_bytes``): rows and texts by a constant plus their length."""
        with self.lock:
            size = 2048
            for e in self.entities.values():
                size += (
                    400 + 2 * (len(e.name) + len(e.norm)) + len(e.profile or "") + 90 * len(self.grams.get(e.id, ()))
                )
            size += sum(len(ms) for ms in self.by_message.values()) * 250 + len(self.by_message) * 120
            size += sum(len(eps) for eps in self.episodes.values()) * 40
            size += sum(300 + len(c.summary) + len(c.name) + 40 * len(c.members) for c in self.summaries.values())
            size += sum(v.nbytes + 100 for v in self._summary_vecs.values())
            size += sum(120 + 150 * len(rs) + sum(len(r.relation) for r in rs) for rs in self.relations.values())
            for cached in (self._cooc, self._graph):
                if cached is not None:
                    size += sum(100 + 60 * len(c) for c in cached.values())
            if self._rel_adj is not None:
                size += sum(100 + 80 * len(a) for a in self._rel_adj.values())
            return size

    def mentions_of(self, message_ids: Iterable[int]) -> list[MentionRow]:
        return [m for mid in message_ids for m in self.by_message.get(mid, ())]


def load_entity_index(conn: Any, scope_id: int, generation: int) -> EntityIndex:
    """Build a scope's :class:`EntityIndex` from the store."""
    idx = EntityIndex(scope_id, generation)
    ents, ments = load_rows(conn, scope_id)
    for e in ents:
        idx.add_entity(e)
    for m in ments:
        idx.add_mention(m)
    for r in load_relations(conn, scope_id):
        idx.add_relation(r)
    idx.summaries = {c.id: c for c in load_summaries(conn, scope_id)}
    return idx


class EntityCache:
    """Per-scope :class:`EntityIndex` objects, valid while the scope's generation is unchanged.

    Held in the Memory's byte-bounded LRU (``Config.cache_bytes``, :mod:`sgmem.cache`) as entries of
    kind ``"entities"``, beside the retrieval indexes and the derived-memory state: an entity index
    counts its bytes (:meth:`EntityIndex.nbytes`) and is evicted like them. (A plain dict per scope
    grew without bound with the number of scopes touched.) Without an LRU, one of its own
    with no budget limit is used.
    """

    def __init__(self, lru: ByteLRU | None = None) -> None:
        self._view = CacheView(lru if lru is not None else ByteLRU(2**62), "entities")
        self._lock = threading.Lock()

    def get(self, store: Any, scope_id: int) -> EntityIndex:
        """The scope's index, (re)loaded from ``store`` when its generation moved on."""
        gen = store.generation(scope_id)
        with self._lock:
            idx = self._view.get(scope_id)
        if idx is not None and idx.generation == gen:
            return idx
        with store.read() as conn:
            idx = load_entity_index(conn, scope_id, gen)
        with self._lock:
            self._view.put(scope_id, idx)
        return idx

    def committed(self, scope_id: int, gen_before: int, gen_after: int, applied: Applied | None) -> None:
        """After an add's commit: extend the cached index in place, or drop it if another write came between."""
        with self._lock:
            idx = self._view.get(scope_id)
            if idx is None:
                return
            if idx.generation == gen_before and gen_after == gen_before + 1:
                if applied is not None:
                    idx.extend(applied)
                idx.generation = gen_after
                self._view.put(scope_id, idx)  # re-counts the bytes it grew by
            else:
                self._view.pop(scope_id)

    def drop(self, scope_id: int) -> None:
        with self._lock:
            self._view.pop(scope_id)

    def clear(self) -> None:
        with self._lock:
            for idx in self._view.values():
                self._view.pop(idx.scope_id)

    def __len__(self) -> int:
        return len(self._view)
