"""EntityConfig: the frozen parameters of the LightGMEM entity layer (ALGORITHMS §4).

Kept free of other sgmem imports (except errors) so ``sgmem.config`` can embed it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..errors import ConfigError

__all__ = ["ENTITY_TYPES", "EntityConfig"]

#: [D] The entity types and the descriptions a mention is typed against (zero-shot,
#: by embedding cosine; GLiNER2's labels in the paper are [U], §4.2 step 1). Work
#: types (games, books, films, music) are split because category questions name
#: them ("Which video games…", "What books…"); ``date`` and ``number`` come from
#: the rules, not from the embedder.
ENTITY_TYPES: dict[str, str] = {
    "person": "a person, a friend or family member, someone's name",
    "place": "a city, country, state, region or place to visit or travel to",
    "organization": "a company, organization, school, team or group",
    "game": "a video game or board game that people play",
    "book": "a book, novel or book series",
    "film": "a movie, film or TV show",
    "music": "a song, album, band, musician or music artist",
    "event": "an event, festival, tournament, concert or holiday",
    "animal": "a pet or animal, such as a dog, cat or turtle",
    "product": "a product, brand, device, car or piece of software",
    "food": "a food, dish, drink or recipe",
    "art": "a painting, artwork, sculpture or piece of art",
    "date": "a date, day, month or time",
    "number": "a number, amount or quantity",
}


def _check(cond: bool, name: str, value: object, expected: str) -> None:
    if not cond:
        raise ConfigError(f"EntityConfig.{name}: received {value!r}, expected {expected}.")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class EntityConfig:
    """LightGMEM, an entity-centric graph memory (ALGORITHMS §4; seed §3.2–3.3).

    Every add extracts entity mentions per turn (an episode, §3.2.1), each with
    its surface form, type, local context (its sentence) and time (eq. 4);
    resolves them to canonical entities (§3.2.2); links entities that occur in
    the same turn by weak co-occurrence edges; and groups entities into
    overlapping communities by Ego-Splitting (§3.2.4). A query anchors on its
    entities and on the entity *types* it names ("Which cities…" → places) and
    scores turns by eq. 15.

    Opt-in ([D], off by default): on LoCoMo dev the hybrid's entity channel gave
    cat 1–4 recall@10 80.1 vs 79.9 without it (+0.2, within noise; LOO 80.2),
    while ingest ran ~3.8× slower (every name is typed with the embedder) and
    hybrid queries ~3× slower (measured on LoCoMo dev). Turn it on with
    ``Config(entities=EntityConfig(enabled=True), hybrid=HybridConfig(w_entity=0.3))``
    (``mode="entity"`` needs ``enabled`` alone); messages added while it was off
    have no mentions.

    Attributes:
        enabled: extract entities at write time. Off (the default), an add does
            no entity work at all, the hybrid's entity channel does nothing and
            ``mode="entity"`` raises :class:`sgmem.ConfigError`.
        llm: with an LLM on the Memory, disambiguate (LLM-bound mentions),
            build deferred profiles and extract relations with it (seed
            §3.2.1–3.2.3); off: rules only.
        type_surface_weight: [D] a mention's type score is
            ``a · cos(surface, type) + (1 − a) · cos(sentence, type)``, ``a``
            this weight: the surface alone types known names ("Chicago"), the
            sentence types unknown ones by context ("the final of a big
            Valorant tournament").
        min_type_score: [D] a mention's best type must lead the mean of all its
            type scores by at least this, else it is typed ``"other"``.
        query_type_cosine: [D] a query word names a category when its cosine to
            a type description is at least this ("cities" → place).
        resolve_jaccard: [D] the rule resolver (§4.3): a mention joins a
            candidate entity of its type when their character-3-gram Jaccard is
            at least this (exact normalised names always join).
        llm_threshold: γ, the confidence at or above which an unresolved
            mention goes to the LLM (seed §3.2.2 eq. 6; Table 6: 0.40). Below
            it a new entity is created directly. Used only with an LLM.
        max_lanes: conflict lanes resolved concurrently with an LLM (Table 6: 10).
        profile_batch: B, pending episodes that trigger a profile update
            (seed §3.2.3 eq. 10–11; Table 6: 15).
        profile_min: the sparse-entity shortcut (Table 6): an entity seen in at
            most this many episodes keeps its extractive profile, no LLM call.
        community_min: smallest community kept (Table 6: 2 entities).
        community_summaries: with an LLM (and ``llm``), write each community's
            name and description (seed §3.2.4's last step, prompt E.3,
            :data:`sgmem.prompts.ENTITY_COMMUNITY`), deferred: a community is
            summarised when it forms or has gained ``community_batch``
            supporting episodes since its summary (first written at
            ``community_min_episodes``); ``mode="entity"`` then
            ranks the summaries and the turns of the best ones gain
            ``community_share`` (Table 7: community context nodes). Off, or
            without an LLM: no summaries and no calls.
        relations: with an LLM (and ``llm``), extract relation edges E_rel
            (seed §3.1, §3.2.1): the LLM reads each added turn with the names
            the rules found in it and returns ``(head, relation, tail)``
            triples; an endpoint the rules missed but the turn says ("my
            puppy biscuit") becomes a mention too (§3.2.1: "relation endpoints
            omitted by the entity extractor can still be surfaced as candidate
            mentions"). Cost: **one extra call per add** (per
            ``relation_batch`` turns of an add), counted in
            ``AddResult.llm_calls``; output it cannot use is logged, counted
            in ``llm_fallbacks`` and ignored (the messages are stored all the
            same). Read by ``mode="entity"`` (see ``relation_bonus``) and by
            the communities (eq. 12: ``E_ent = E_rel ∪ E_weak``). Without an
            LLM there are no relation edges: the seed extracts them with a
            model (GLiNER2, Table 6), never by rule, and sgmem has no rule
            for them either.
        relation_batch: [D] turns per relation call (an add of ``n`` turns
            makes ``ceil(n / relation_batch)`` calls; 16 covers SAGE's adds
            of 8 in one).
        relation_bonus: what a turn gains in ``s_graph`` of ``mode="entity"``
            per relation read from it that matches the query (Table 7:
            matched-relation bonus, 0.10 per overlapping relation pair): a
            relation between two query anchors, or [D] between an anchor and
            another entity when its relation phrase shares a term with the
            query. Besides, an entity linked to an anchor by a relation is
            the anchor's neighbour (eq. 12), as a co-occurring one is, and
            the turns mentioning it gain ``neighbour_share``; unlike
            co-occurrence, a relation links the turn's speaker ("I adopted
            Biscuit": Caroline → Biscuit).
        community_min_episodes: supporting episodes (turns mentioning two or
            more of a community's entities) before its first summary (Table 6:
            minimum supporting episodes per community, 2).
        community_batch: [D] new supporting episodes that trigger a
            community's re-summary (the profiles' B, Table 6: 15).
        community_episodes: the most supporting episodes shown to the LLM
            (Table 6: 12), the latest ones.
        community_match: [D] a stored summary stays the summary of a re-formed
            community when their entity sets' Jaccard is at least this.
        community_context: community summaries kept per query (Table 7: 2).
        profile_context: entity profiles kept per query in ``mode="entity"``
            (seed eq. 15 scores profiles as documents too; Table 7: profile
            context nodes retained, 5). A profile is the LLM's (deferred,
            §3.2.3) or, without one, extractive: the sentences of the entity's
            3 latest mention turns that name it (ALGORITHMS §4.3). It is scored
            by eq. 15 (``w_sem`` · cosine to the query, ``w_lex`` · query terms
            it holds, ``w_graph`` · 1 for an anchor; the speakers' own profiles
            are left out). [D] 0 (off) by default: on LoCoMo dev ``mode="entity"``
            recall@10 (cat 1–4) was 64.8 without profiles and 60.4 with 5
            (extractive, no LLM; there is no cross-encoder rerank here to drop
            what a kept profile wrongly lifts). Set 5 for the paper's setting.
        profile_episodes: supporting turns of a kept profile that gain
            ``profile_share`` (Table 7: supporting episodes added from each
            selected profile node, 12), the latest ones.
        profile_share: a kept profile's supporting turn adds this times the
            profile's eq. 15 score to ``s_graph`` (Table 7: profile-context
            prior weight, 0.20; [D] scaled by the score, since there is no
            cross-encoder rerank here to drop a kept but unrelated profile).
        community_share: [D] what a supporting turn of a kept community adds
            to ``s_graph`` in ``mode="entity"``.
        anchor_gate: [D] in the channel, a type-matched turn that is not linked
            to any query anchor (a person the query names, or its speaker)
            scores this share of a linked one.
        neighbour_share: [D] a turn mentioning an entity adjacent to an anchor
            (co-occurrence edge) gains this share of the connectivity score.
        w_sem, w_lex, w_graph: λ of eq. 15 for ``mode="entity"`` (seed [U];
            [D] chosen on the LoCoMo dev split).
        candidates: [D] turns scored by ``mode="entity"`` beyond the anchored
            ones: the closest by the dense channel (the paper's initial recall
            depth is 30, Table 7).
    """

    enabled: bool = False
    llm: bool = True
    type_surface_weight: float = 0.5
    min_type_score: float = 0.05
    query_type_cosine: float = 0.45
    resolve_jaccard: float = 0.8
    llm_threshold: float = 0.4
    max_lanes: int = 10
    profile_batch: int = 15
    profile_min: int = 2
    community_min: int = 2
    community_summaries: bool = True
    relations: bool = True
    relation_batch: int = 16
    relation_bonus: float = 0.1
    community_min_episodes: int = 2
    community_batch: int = 15
    community_episodes: int = 12
    community_match: float = 0.5
    community_context: int = 2
    community_share: float = 0.25
    profile_context: int = 0
    profile_episodes: int = 12
    profile_share: float = 0.2
    anchor_gate: float = 0.3
    neighbour_share: float = 0.5
    w_sem: float = 1.0
    w_lex: float = 1.0
    w_graph: float = 1.0
    candidates: int = 30

    def __post_init__(self) -> None:
        for name in ("enabled", "llm", "community_summaries", "relations"):
            _check(isinstance(getattr(self, name), bool), name, getattr(self, name), "True or False")
        for name in (
            "type_surface_weight",
            "min_type_score",
            "query_type_cosine",
            "resolve_jaccard",
            "llm_threshold",
            "anchor_gate",
            "neighbour_share",
            "community_match",
            "community_share",
            "profile_share",
            "relation_bonus",
        ):
            v = getattr(self, name)
            _check(_is_number(v) and -1.0 <= v <= 1.0, name, v, "a number in [-1, 1]")
        for name in (
            "max_lanes",
            "profile_batch",
            "profile_min",
            "community_min",
            "community_min_episodes",
            "community_batch",
            "community_episodes",
            "community_context",
            "candidates",
            "profile_episodes",
            "relation_batch",
        ):
            v = getattr(self, name)
            _check(_is_int(v) and v >= 1, name, v, "an int >= 1")
        _check(
            _is_int(self.profile_context) and self.profile_context >= 0,
            "profile_context",
            self.profile_context,
            "an int >= 0",
        )
        for name in ("w_sem", "w_lex", "w_graph"):
            v = getattr(self, name)
            _check(_is_number(v) and v >= 0, name, v, "a number >= 0")

    def as_dict(self) -> dict[str, object]:
        """The parameters as a plain dict (for reports)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
