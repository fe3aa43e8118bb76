"""Questions whose answer gathers several memories: counts, totals, lists, and two events compared.

"How many weddings did I attend this year?", "What are all the instruments I
play?", "How many days passed between the workshop and the planting?",
"Which happened first, the trip or the move?": the evidence is one turn per
wedding, instrument or event, usually told in different conversations. What
marks such a question is its grammar — a question of quantity ("how many",
"how much", "in total"), a universal quantifier over the things asked for
("all", "every", "each", a list), or two events set against each other
("between … and …", "first, … or …", "the order of") — never its topic, so the
rule reads only those forms. Rule-based and offline.
"""

from __future__ import annotations

import re

__all__ = ["asks_for_many"]

_MANY = re.compile(
    r"\b(?:"
    r"how\s+(?:many|much|often)"  # a count or an amount: one item per memory
    r"|in\s+total|total|altogether|combined|in\s+all|so\s+far"
    r"|all\s+(?:the|my|of|those|these|your)|every|each"  # a universal quantifier over what is asked for
    r"|list"
    r"|between\b.+\band"  # two events set against each other
    r"|first\s*,?.+\bor\b|(?:the\s+)?order\s+of|earliest|latest|most\s+recently"
    r")\b",
    re.IGNORECASE | re.DOTALL,
)


def asks_for_many(query: str) -> bool:
    """Whether ``query`` asks for something gathered over several memories (see the module docstring)."""
    return _MANY.search(query) is not None
