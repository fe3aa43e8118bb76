"""Overlapping entity communities by Ego-Splitting (seed §3.2.4; Epasto et al., KDD'17).

For each entity ``v``, the connected components of its ego-net minus ``v``
are ``v``'s personas (eq. 13, the local partition ``A_local`` being connected
components, as in ALGORITHMS §4.2 step 6). Each edge ``(u, v)`` of the entity
graph becomes an edge between ``u``'s persona that holds ``v`` and ``v``'s
persona that holds ``u`` (eq. 14). The persona graph is partitioned globally
(Louvain, resolution 1.0, networkx, fixed seed) and personas map back to their
entities, so an entity can belong to several communities.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["ego_split_communities"]


def ego_split_communities(cooc: dict[int, Counter[int]], seed: int = 0) -> list[frozenset[int]]:
    """Overlapping communities of the weighted entity graph ``cooc`` (entity → neighbour → weight)."""
    import networkx as nx

    g = nx.Graph()
    for u, nbrs in cooc.items():
        for v, w in nbrs.items():
            if u < v:
                g.add_edge(u, v, weight=float(w))
    if g.number_of_edges() == 0:
        return []
    persona_of: dict[tuple[int, int], int] = {}  # (entity, neighbour) -> persona id
    owner: list[int] = []
    for v in g.nodes:
        ego = g.subgraph(n for n in g.neighbors(v))
        for comp in nx.connected_components(ego):
            pid = len(owner)
            owner.append(v)
            for u in comp:
                persona_of[(v, u)] = pid
    pg = nx.Graph()
    pg.add_nodes_from(range(len(owner)))
    for u, v, data in g.edges(data=True):
        pg.add_edge(persona_of[(u, v)], persona_of[(v, u)], weight=data.get("weight", 1.0))
    parts = nx.community.louvain_communities(pg, weight="weight", resolution=1.0, seed=seed)
    out: list[frozenset[int]] = []
    seen: set[frozenset[int]] = set()
    for part in parts:
        ents = frozenset(owner[p] for p in part)
        if ents not in seen:
            seen.add(ents)
            out.append(ents)
    out.sort(key=lambda c: (-len(c), min(c)))
    return out
