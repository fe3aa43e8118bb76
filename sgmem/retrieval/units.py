"""The exchange memory unit (``Config.memory_unit="exchange"``).

MGRetrieval indexes one *exchange* — a user message and the reply to it, both
speakers — as one memory (§3.1; ALGORITHMS §3). sgmem stores and ranks turns;
this module turns a mode's ranked turns into ranked exchanges after the fact,
so every turn-level mode (hybrid, vector, bm25, pyramid, entity) can return
either unit over the same index. An exchange is a round of the thread
(``round_ids``: a user message opens one, the replies to it join it).

[D] An exchange scores as its best turn (the turns are ranked first, the
exchange takes the rank of its first turn in that list). Averaging the two
turns' fused scores measured alike on LoCoMo dev and needs every turn's score;
both lose to the turn unit there at an equal number of turns (see
``Config.memory_unit``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["TURN_MODES", "exchanges", "turns_wanted"]

#: Modes whose hits are single turns (graph returns its own chunks, sgrm segments).
TURN_MODES = frozenset({"hybrid", "vector", "bm25", "pyramid", "entity"})


def turns_wanted(k: int, n_turns: int) -> int:
    """How many ranked turns to ask a mode for so ``k`` exchanges can be formed (each holds ≥ 1 turn)."""
    return min(n_turns, 2 * k + 8)


def exchanges(
    ranked: Sequence[Any],
    round_ids: np.ndarray,
    k: int,
    allowed: np.ndarray | None,
    make: Callable[[str, list[int], float, dict[str, Any]], Any],
) -> list[Any]:
    """Group ranked single-turn results into the first ``k`` exchanges.

    Args:
        ranked: a mode's results, best first, each with ``rows`` (one turn row),
            ``score`` and ``why`` (:class:`sgmem.retrieval.search.Ranked`).
        round_ids: the scope's round id per turn row.
        allowed: the filter mask; turns outside it stay out of an exchange.
        make: builds one result ``(kind, rows, score, why)``.

    Returns:
        Results of kind ``"round"`` holding every allowed turn of the exchange in
        conversation order, scored and explained by the exchange's best turn
        (``why["unit"]``: the unit, its turns, and which of them — 0 the
        first — ranked it).
    """
    out: list[Any] = []
    seen: set[int] = set()
    for rk in ranked:
        if len(out) >= k:
            break
        row = int(rk.rows[0])
        rid = int(round_ids[row])
        if rid in seen:
            continue
        seen.add(rid)
        rows = np.flatnonzero(round_ids == rid)
        if allowed is not None:
            rows = rows[allowed[rows]]
        members = [int(r) for r in rows] or [row]
        why = dict(rk.why)
        why["unit"] = {
            "unit": "exchange",
            "turns": len(members),
            "ranked_by": members.index(row) if row in members else 0,
        }
        out.append(make("round", members, float(rk.score), why))
    return out
