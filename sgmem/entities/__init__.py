"""LightGMEM's entity layer (ALGORITHMS §4; seeds/lightgmem-graph-memory.txt §3.2–3.3).

Entity mentions per turn (rules + zero-shot typing with the memory's
embedder), selective disambiguation with conflict lanes, deferred profiles,
weak co-occurrence edges, relation edges read by an LLM (with one only, :mod:`sgmem.entities.relations`),
Ego-Splitting communities (with an LLM, their deferred summaries), and entity-anchored
retrieval (``mode="entity"`` and the hybrid's entity channel).
"""

from .communities import CommunityPlan, CommunityRow, plan_summaries, rank_summaries
from .config import ENTITY_TYPES, EntityConfig
from .extract import Mention, TypeModel, find_spans, norm_name, query_categories
from .graph import ego_split_communities
from .index import EntityCache, EntityIndex
from .retrieve import EntityQuery, EntityTools, graph_scores, read_query, type_channel
from .store import ENTITY_MIGRATION
from .write import EntityPlan, plan_entities

__all__ = [
    "CommunityPlan",
    "CommunityRow",
    "ENTITY_MIGRATION",
    "ENTITY_TYPES",
    "EntityCache",
    "EntityConfig",
    "EntityIndex",
    "EntityPlan",
    "EntityQuery",
    "EntityTools",
    "Mention",
    "TypeModel",
    "ego_split_communities",
    "find_spans",
    "graph_scores",
    "norm_name",
    "plan_entities",
    "plan_summaries",
    "query_categories",
    "rank_summaries",
    "read_query",
    "type_channel",
]
