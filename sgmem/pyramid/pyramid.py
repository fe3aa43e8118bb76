"""The retrieval pyramid over query keywords (ALGORITHMS §3.4).

Level ℓ holds every ℓ-combination ``K`` of the query keywords ``Q`` with its
memory set ``S(K) = ∩_{w∈K} I[w]``; levels run from ``L_top = min(l, |Q|)``
(most specific) down to 1 (single keywords). Empty nodes are dropped [C];
within a level nodes are sorted by ``|S(K)|`` descending [R], ties in
combination order; inside a node memories are chronological [C].
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .vocabulary import KeywordIndex

__all__ = ["Level", "Node", "build_pyramid", "units"]


@dataclass(frozen=True)
class Node:
    """A keyword combination and the turn rows holding all of its keywords."""

    keywords: tuple[int, ...]
    rows: np.ndarray


@dataclass(frozen=True)
class Level:
    """One pyramid level: ``size``-keyword combinations, largest memory set first."""

    size: int
    nodes: tuple[Node, ...]


def _intersect(small: np.ndarray, large: np.ndarray) -> np.ndarray:
    """The rows in both sorted, duplicate-free arrays (``np.intersect1d(small, large, assume_unique=True)``):
    a binary search of each of ``small``'s rows in ``large`` when ``large`` is much longer, which reads
    ``small`` log(``large``) times instead of sorting both (frequent keywords' postings are long)."""
    if small.size * 16 < large.size:
        found = large[np.minimum(np.searchsorted(large, small), large.size - 1)]
        return small[found == small]
    return np.intersect1d(small, large, assume_unique=True)


def build_pyramid(kwi: KeywordIndex, query: Sequence[int], depth: int, allowed: np.ndarray | None) -> list[Level]:
    """Levels from ``min(depth, |query|)`` down to 1 (levels with no node kept, empty).

    Args:
        kwi: the scope's inverted index.
        query: local keyword indexes Q (distinct).
        depth: l, the pyramid depth (≥ 1).
        allowed: boolean mask over turn rows (search filters), or None.
    """
    q = list(dict.fromkeys(query))
    top = min(depth, len(q))
    levels: list[Level] = []
    for size in range(top, 0, -1):
        nodes: list[Node] = []
        for combo in itertools.combinations(q, size):
            # intersect the rarest postings first
            lists = sorted((kwi.postings(w) for w in combo), key=len)
            rows = lists[0]
            for other in lists[1:]:
                if not rows.size:
                    break
                rows = _intersect(rows, other)
            if allowed is not None and rows.size:
                rows = rows[allowed[rows]]
            if rows.size:
                nodes.append(Node(tuple(combo), rows))
        nodes.sort(key=lambda n: -len(n.rows))  # stable: ties keep combination order
        levels.append(Level(size, tuple(nodes)))
    return levels


def units(levels: Sequence[Level], unit: str) -> Iterator[tuple[int, tuple[Node, ...]]]:
    """Traversal order: ``(level size, nodes)`` per round unit, top level first.

    ``unit="level"`` yields one whole level at a time, ``"node"`` one node.
    Levels without nodes yield nothing.
    """
    for level in levels:
        if not level.nodes:
            continue
        if unit == "level":
            yield level.size, level.nodes
        else:
            for node in level.nodes:
                yield level.size, (node,)
