"""The entity layer's write path: extract, type, resolve, profile (seed §3.2.1–3.2.3).

Planned outside the store lock against a snapshot of the scope's entities
(:func:`plan_entities`), stored inside the add's transaction
(:func:`sgmem.entities.store.apply_entities`).

**Selective disambiguation** (§3.2.2, Algorithm 1). Mentions are processed in
time order. A mention whose normalised name is already an entity (of this
scope, or created earlier in the same add) resolves deterministically. Else its
compatibility ``σ(m, v)`` to each fuzzy candidate ``v`` (eq. 5: [D]
``0.7 · char-3-gram Jaccard + 0.3 · same type``) gives the confidence
``ρ(m) = max σ`` (eq. 6). Without an LLM, the rule of ALGORITHMS §4.3 decides:
Jaccard ≥ ``resolve_jaccard`` with the same type joins, else a new entity.
With an LLM, a mention with ``ρ ≥ γ`` is LLM-bound and the others become new
entities directly; LLM-bound mentions are grouped into **conflict lanes** by
their key sets (eq. 7: exact name, MinHash-LSH band keys of its 3-grams,
candidate ids; union-find, eq. 8), lanes run concurrently (up to ``max_lanes``
threads), each lane in time order against its own state (eq. 9): a name
variant of an entity created earlier in the lane, or earlier in the add, is
shown to the LLM as a candidate too. Without an LLM, a variant of an entity
created earlier in the add joins it by the rule (Jaccard ≥ ``resolve_jaccard``).

**Relation edges** (§3.2.1, with an LLM only: :mod:`sgmem.entities.relations`).
After the rules found a turn's names and before typing and resolution, one
call per add (per ``relation_batch`` turns) reads ``(head, relation, tail)``
triples; an endpoint the rules missed but the turn says becomes a mention of
its own; once resolved, the triples are relation edges between entities.

**Deferred profiles** (§3.2.3). With an LLM, an entity's profile is updated
only once ``|Δ(v)| ≥ B`` new episodes have accumulated (eq. 10–11; the
prompt shows the relations read from those episodes, ``R_r(v)``), and never
for an entity seen in at most ``profile_min`` episodes (Table 6's sparse-entity
shortcut). Without an LLM the profile is extractive (its latest mention
sentences, read at query time) and no call is made. Community summaries
(§3.2.4, :mod:`sgmem.entities.communities`) are planned the same way, deferred
by ``community_batch``, and travel in ``EntityPlan.profiles``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..prompts import ENTITY_DISAMBIGUATION, ENTITY_PROFILE
from ..pyramid.llmio import Usage, call_json
from .communities import CommunityPlan, plan_summaries
from .config import EntityConfig
from .extract import Mention, TypeModel, find_spans, norm_name
from .index import EntityIndex, char_grams, jaccard
from .minhash import band_keys
from .relations import Triple, extract_relations
from .store import EntityRow

__all__ = ["EntityPlan", "plan_entities", "plan_flush"]

#: the longest span taken for a name: a longer capitalised run is a blob (a URL, a hash), not an entity,
#: and the entity index's row must fit PostgreSQL's btree as well as SQLite (a row holds at most ~2,700 bytes)
MAX_NAME_CHARS = 200

#: mention kinds that become entities (dates and numbers are typed but not linked: the
#: hybrid's date prior and the lexical channel already use them)
LINKED = ("name", "title", "speaker")


@dataclass
class EntityPlan:
    """An add's entities, resolved against a snapshot but not yet stored."""

    new_entities: list[EntityRow] = field(default_factory=list)
    mentions: list[tuple[int, int, str, str, float, int, int]] = field(default_factory=list)
    profiles: list[tuple[int, str, int] | CommunityPlan] = field(default_factory=list)
    #: relation edges E_rel (with an LLM): (message index, head entity or placeholder, phrase, tail)
    relations: list[tuple[int, int, str, int]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    n_mentions: int = 0
    n_llm_bound: int = 0
    lanes: int = 0
    ms: float = 0.0


@dataclass
class _Pending:
    mention: Mention
    msg: int
    norm: str
    cands: list[tuple[int, float]]
    rho: float
    news: list[tuple[str, str, str]] = field(default_factory=list)  # variants among this add's new entities


def _compat(m: Mention, norm: str, eid: int, snap: EntityIndex, jac: float) -> float:
    """σ(m, v) (eq. 5): [D] 0.7 · name Jaccard + 0.3 · type agreement."""
    same = 1.0 if snap.type_of(eid) == m.type else 0.0
    return 0.7 * jac + 0.3 * same


def _lanes(items: list[_Pending], bands: int = 8) -> list[list[int]]:
    """Conflict lanes (Algorithm 1): union-find over shared conflict keys (eq. 7–8).

    Keys: the exact normalised name (K_exact), MinHash-LSH band keys of its
    character 3-grams (K_lsh, :mod:`sgmem.entities.minhash`: 16 hash functions
    in ``bands`` bands; with 8 bands of 2 rows two names share a key with
    probability 0.95 at Jaccard 0.57, 0.53 at 0.3), and the ids of its top
    candidate entities (K_cand).
    """
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, p in enumerate(items):
        # K_exact ∪ K_lsh ∪ K_cand
        keys = {f"n:{p.norm}"} | set(band_keys(char_grams(p.norm), 16, bands))
        keys |= {f"c:{eid}" for eid, _ in p.cands[:3]} | {f"n:{n}" for n, _, _ in p.news}
        for k in keys:
            if k in owner:
                a, b = find(owner[k]), find(i)
                if a != b:
                    parent[b] = a
            else:
                owner[k] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def plan_entities(
    snap: EntityIndex,
    messages: Sequence[Any],
    sentences: Sequence[Any],
    types: TypeModel,
    cfg: EntityConfig,
    llm: Any = None,
    texts: Callable[[list[int]], list[str]] | None = None,
) -> EntityPlan:
    """Extract, type and resolve the entities of an add's messages.

    Args:
        snap: the scope's entity index now.
        messages: the add's ``MessageRow``s (content, name, at).
        sentences: the add's ``SentenceRow``s with vectors (the mentions' context).
        types: the zero-shot typer.
        llm: optional; disambiguation and deferred profiles then use it.
        texts: loads stored turn texts by message id (for profiles).
    """
    import time

    t0 = time.perf_counter()
    plan = EntityPlan()
    if not cfg.enabled or not messages:
        return plan
    by_msg: dict[int, list[int]] = {}
    for i, s in enumerate(sentences):
        by_msg.setdefault(s.msg, []).append(i)
    svecs = (
        np.stack([s.vec for s in sentences]).astype(np.float32)
        if len(sentences)
        else np.zeros((0, 1), dtype=np.float32)
    )
    known = set(snap.by_norm)
    per_msg: list[list[Mention]] = []

    def sentence_of(i: int, start: int) -> int:
        return next((si for si in by_msg.get(i, ()) if sentences[si].start <= start < sentences[si].end), -1)

    for i, m in enumerate(messages):
        found = [x for x in find_spans(m.content, known) if x.kind in LINKED and len(x.surface) <= MAX_NAME_CHARS]
        for x in found:
            x.sentence = sentence_of(i, x.start)
        if m.name:
            found.append(Mention(m.name, -1, -1, "speaker"))
        known.update(x.norm for x in found)
        per_msg.append(found)
    # relation edges E_rel (§3.2.1), with an LLM only: one call per add (per relation_batch turns); an
    # endpoint the rules missed joins per_msg here, before typing and resolution
    triples = extract_relations(messages, per_msg, sentence_of, llm, cfg, plan.usage) if llm and cfg.relations else []
    flat = [x for ms in per_msg for x in ms]
    types.assign(flat, svecs)
    plan.n_mentions = len(flat)
    # ---- resolution, in time order
    new_by_norm: dict[str, int] = {}
    pending: list[_Pending] = []
    for mi, ms in enumerate(per_msg):
        for x in ms:
            norm = x.norm
            if not norm:
                continue
            eid = snap.by_norm.get(norm, new_by_norm.get(norm))
            if eid is not None:
                plan.mentions.append((eid, mi, x.surface, x.type, x.type_score, x.start, x.end))
                continue
            cands = snap.candidates(norm)
            scored = [(e, _compat(x, norm, e, snap, j)) for e, j in cands]
            rho = max((s for _, s in scored), default=0.0)
            rule = next(
                (e for e, j in cands if j >= cfg.resolve_jaccard and snap.type_of(e) == x.type and x.kind != "speaker"),
                None,
            )
            if llm is None and rule is None and x.kind != "speaker":
                # a variant of a name this add introduced ("Chicagoo" after "Chicago"), by the same rule
                rule = _new_variant(plan, new_by_norm, norm, cfg.resolve_jaccard)
                if rule is not None:
                    new_by_norm[norm] = rule
            if llm is None and rule is not None:
                plan.mentions.append((rule, mi, x.surface, x.type, x.type_score, x.start, x.end))
                continue
            news = _new_variants(plan, new_by_norm, norm, x.type) if llm is not None and x.kind != "speaker" else []
            rho = max([rho] + [s for *_, s in news])
            if llm is not None and rho >= cfg.llm_threshold and x.kind != "speaker":
                pending.append(_Pending(x, mi, norm, scored, rho, [(n, surf, t) for n, surf, t, _ in news]))
                continue
            new_by_norm[norm] = _new_entity(plan, x, norm)
            plan.mentions.append((new_by_norm[norm], mi, x.surface, x.type, x.type_score, x.start, x.end))
    if pending:
        # κ(m) holds the mention's "directly observed relation neighbors" (eq. 4; E.1's relation_neighbor_names)
        related: dict[tuple[int, str], list[str]] = {}
        for t in triples:
            related.setdefault((t.msg, t.head.norm), []).append(t.tail.surface)
            related.setdefault((t.msg, t.tail.norm), []).append(t.head.surface)
        _resolve_lanes(plan, pending, snap, messages, cfg, llm, new_by_norm, related)
    if triples:
        plan.relations = _resolved_relations(plan, triples)
    if llm is not None:
        _profiles(plan, snap, messages, cfg, llm, texts)
        # community summaries (§3.2.4, E.3), deferred: stored with the profiles by apply_entities
        new_names = {e.id: (e.name, e.type) for e in plan.new_entities}
        plan.profiles.extend(
            plan_summaries(snap, plan.mentions, new_names, messages, cfg, llm, plan.usage, texts, plan.relations)
        )
    plan.ms = (time.perf_counter() - t0) * 1e3
    return plan


def _resolved_relations(plan: EntityPlan, triples: list[Triple]) -> list[tuple[int, int, str, int]]:
    """The add's relations between resolved entities: ``(message index, head, phrase, tail)``.

    An endpoint is the entity its mention resolved to (a mention of a turn is
    found by its normalised name, which resolves to one entity per turn);
    a relation whose two ends became one entity is dropped.
    """
    of: dict[tuple[int, str], int] = {}
    for eid, mi, surface, *_ in plan.mentions:
        of.setdefault((mi, norm_name(surface)), eid)
    out: list[tuple[int, int, str, int]] = []
    seen: set[tuple[int, int, str, int]] = set()
    for t in triples:
        head, tail = of.get((t.msg, t.head.norm)), of.get((t.msg, t.tail.norm))
        if head is None or tail is None or head == tail:
            continue
        key = (t.msg, head, t.relation, tail)
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def _new_variant(plan: EntityPlan, new_by_norm: dict[str, int], norm: str, min_jaccard: float) -> int | None:
    """The entity this add created whose name ``norm`` is a variant of (3-gram Jaccard ≥ ``min_jaccard``).

    [D] Unlike the rule against stored entities, the types need not agree: the
    zero-shot type of a rare spelling in one sentence is the noisier estimate
    (measured: "Jonathan Edward" after "my friend Jonathan Edwards" typed book).
    """
    grams = char_grams(norm)
    best, best_j = None, min_jaccard
    for other, eid in new_by_norm.items():
        j = jaccard(grams, char_grams(other))
        if j >= best_j:
            best, best_j = eid, j
    return best


def _new_variants(
    plan: EntityPlan, new_by_norm: dict[str, int], norm: str, typ: str
) -> list[tuple[str, str, str, float]]:
    """Entities this add created so far that ``norm`` may be a variant of: (norm, name, type, σ of eq. 5)."""
    out = []
    grams = char_grams(norm)
    for other, eid in new_by_norm.items():
        if other != norm and _variant(norm, other):
            row = plan.new_entities[-eid - 1]
            out.append((other, row.name, row.type, 0.7 * jaccard(grams, char_grams(other)) + 0.3 * (row.type == typ)))
    return out


def _variant(a: str, b: str) -> bool:
    """Whether two normalised names may denote one entity: shared 3-grams (Jaccard ≥ 0.3) or one's words in the other's."""
    wa, wb = set(a.split()), set(b.split())
    return jaccard(char_grams(a), char_grams(b)) >= 0.3 or (bool(wa) and bool(wb) and (wa <= wb or wb <= wa))


def _new_entity(plan: EntityPlan, x: Mention, norm: str) -> int:
    eid = -1 - len(plan.new_entities)
    plan.new_entities.append(EntityRow(eid, x.surface, norm, x.type, float(x.type_score)))
    return eid


def _resolve_lanes(
    plan: EntityPlan,
    pending: list[_Pending],
    snap: EntityIndex,
    messages: Sequence[Any],
    cfg: EntityConfig,
    llm: Any,
    new_by_norm: dict[str, int],
    related: dict[tuple[int, str], list[str]] | None = None,
) -> None:
    lanes = _lanes(pending)
    plan.n_llm_bound = len(pending)
    plan.lanes = len(lanes)

    def run(lane: list[int]) -> tuple[list[tuple[int, int | str | None]], Usage]:
        usage = Usage()
        # lane-local state (eq. 9): norm -> an existing entity id, the norm of an entity this lane created
        # (a str), or None (it created one for this norm)
        local: dict[str, int | str | None] = {}
        made: list[tuple[str, str, str]] = []  # entities this lane created: (norm, surface, type)
        out: list[tuple[int, int | str | None]] = []
        for i in lane:
            p = pending[i]
            if p.norm in local:
                out.append((i, local[p.norm]))
                continue
            shown = [(e, snap.entities[e]) for e, _ in p.cands[:5]]
            lines = [
                f'- {{"candidate_id": {e}, "name": "{row.name}", "type": "{snap.type_of(e)}"}}' for e, row in shown
            ]
            # name variants of entities created earlier in this lane are candidates too (ids -2, -3, …: -1 is "none")
            near = [m for m in made if _variant(p.norm, m[0])] + [n for n in p.news if n[0] not in {m[0] for m in made}]
            variants = {-2 - k: v for k, v in enumerate(near)}
            lines += [
                f'- {{"candidate_id": {c}, "name": "{surf}", "type": "{typ}"}}'
                for c, (_, surf, typ) in variants.items()
            ]
            cands = "\n".join(lines)
            others = [x for x in _mentions_in(plan, p.msg) if x != p.mention.surface][:8]
            m = messages[p.msg]
            prompt = ENTITY_DISAMBIGUATION.format(
                date=m.at.date().isoformat(),
                text=m.content[:1500],
                name=p.mention.surface,
                type=p.mention.type,
                cooccurring=others,
                related=list(dict.fromkeys((related or {}).get((p.msg, p.norm), [])))[:8],
                candidates=cands,
            )
            raw = call_json(llm, prompt, usage, "entity-resolve")
            dup = raw.get("duplicate_id") if isinstance(raw, dict) else None
            if raw is not None and not isinstance(dup, int):
                usage.malformed += 1
            target: int | str | None = dup if isinstance(dup, int) and dup in {e for e, _ in shown} else None
            if isinstance(dup, int) and dup in variants:
                target = variants[dup][0]
            local[p.norm] = target
            if target is None:
                made.append((p.norm, p.mention.surface, p.mention.type))
            out.append((i, target))
        return out, usage

    workers = max(1, min(cfg.max_lanes, len(lanes)))
    if workers == 1:
        results = [run(lane) for lane in lanes]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sgmem-ned") as pool:
            results = list(pool.map(run, lanes))
    decided: dict[int, int | str | None] = {}
    for out, usage in results:
        plan.usage.merge(usage)
        decided.update(dict(out))
    for i in sorted(decided, key=lambda i: (pending[i].msg, pending[i].mention.start)):
        p = pending[i]
        x = p.mention
        target = decided[i]
        if isinstance(target, int):
            eid = target
        else:  # a new entity: this name's own, or the one a variant of it created earlier in the lane
            key = p.norm if target is None else target
            got = new_by_norm.get(key)
            eid = got if got is not None else _new_entity(plan, x, key)
            new_by_norm[key] = eid
            new_by_norm.setdefault(p.norm, eid)
        plan.mentions.append((eid, p.msg, x.surface, x.type, x.type_score, x.start, x.end))


def _mentions_in(plan: EntityPlan, msg: int) -> list[str]:
    return [m[2] for m in plan.mentions if m[1] == msg]


def _profiles(
    plan: EntityPlan,
    snap: EntityIndex,
    messages: Sequence[Any],
    cfg: EntityConfig,
    llm: Any,
    texts: Callable[[list[int]], list[str]] | None,
) -> None:
    """Deferred profile updates (eq. 10–11) for existing entities this add mentions."""
    touched: dict[int, list[int]] = {}
    for eid, mi, *_ in plan.mentions:
        if eid >= 0:
            touched.setdefault(eid, [])
            if mi not in touched[eid]:
                touched[eid].append(mi)
    for eid, new_msgs in touched.items():
        row = snap.entities.get(eid)
        if row is None:
            continue
        episodes = snap.episodes.get(eid, [])
        total = len(episodes) + len(new_msgs)
        pending = total - row.profiled  # |Δ(v)|
        if total <= cfg.profile_min or pending < cfg.profile_batch:
            continue
        old = [mid for mid in episodes if mid not in ()][-(cfg.profile_batch - len(new_msgs)) :] if texts else []
        lines = texts(old) if texts and old else []
        lines += [
            f"({messages[mi].at.date().isoformat()}) {messages[mi].name or 'someone'}: {messages[mi].content}"
            for mi in new_msgs
        ]
        rels = relation_evidence(snap, eid, old) + [
            f"{_name(plan, snap, h)} {phrase} {_name(plan, snap, t)}"
            for mi, h, phrase, t in plan.relations
            if mi in new_msgs and eid in (h, t)
        ]
        prompt = ENTITY_PROFILE.format(
            type=snap.type_of(eid),
            name=row.name,
            profile=row.profile or "(none yet)",
            messages="\n".join(f"- {t[:600]}" for t in lines[-cfg.profile_batch :]),
            relations="; ".join(rels[:20]) or "none",
        )
        raw = call_json(llm, prompt, plan.usage, "entity-profile")
        desc = raw.get("description") if isinstance(raw, dict) else None
        if isinstance(desc, str) and desc.strip():
            plan.profiles.append((eid, desc.strip()[:2000], total))
        elif raw is not None:
            plan.usage.malformed += 1


def relation_evidence(snap: EntityIndex, eid: int, message_ids: Sequence[int]) -> list[str]:
    """R_r(v) of eq. 11: the stored relations of entity ``eid`` read from ``message_ids``, as "head relation tail"."""
    wanted = set(message_ids)
    return [
        f"{snap.entities[r.head].name} {r.relation} {snap.entities[r.tail].name}"
        for _, r in snap.relation_neighbours().get(eid, ())
        if r.message_id in wanted
    ]


def _name(plan: EntityPlan, snap: EntityIndex, eid: int) -> str:
    """An entity's name: a stored one's, or a new one's of this add (placeholder ids are negative)."""
    return plan.new_entities[-eid - 1].name if eid < 0 else snap.entities[eid].name


def plan_flush(
    snap: EntityIndex,
    cfg: EntityConfig,
    llm: Any,
    texts: Callable[[list[int]], list[str]],
    usage: Usage,
) -> list[tuple[int, str, int]]:
    """The final flush of deferred profiles (seed §3.2.3: "or when a final flush is triggered").

    Every entity with unabsorbed episodes (``|Δ(v)| > 0``) gets its profile
    update now, whatever ``profile_batch``; the sparse-entity shortcut still
    holds (at most ``profile_min`` episodes: no call). Returns the profile
    updates ``(entity id, text, episodes absorbed)`` for
    :func:`sgmem.entities.store.apply_entities`.
    """
    out: list[tuple[int, str, int]] = []
    for eid, row in list(snap.entities.items()):
        if row.type in ("date", "number"):
            continue
        episodes = snap.episodes.get(eid, [])
        total = len(episodes)
        if total <= cfg.profile_min or total <= row.profiled:
            continue
        shown = episodes[row.profiled :][-cfg.profile_batch :]
        lines = texts(shown)
        prompt = ENTITY_PROFILE.format(
            type=snap.type_of(eid),
            name=row.name,
            profile=row.profile or "(none yet)",
            messages="\n".join(f"- {t[:600]}" for t in lines),
            relations="; ".join(relation_evidence(snap, eid, shown)[:20]) or "none",
        )
        raw = call_json(llm, prompt, usage, "entity-profile")
        desc = raw.get("description") if isinstance(raw, dict) else None
        if isinstance(desc, str) and desc.strip():
            out.append((eid, desc.strip()[:2000], total))
        elif raw is not None:
            usage.malformed += 1
    return out


def norm_of(text: str) -> str:
    """Shortcut for :func:`sgmem.entities.extract.norm_name`."""
    return norm_name(text)


def overlap(a: str, b: str) -> float:
    """Char-3-gram Jaccard of two names."""
    return jaccard(char_grams(norm_name(a)), char_grams(norm_name(b)))
