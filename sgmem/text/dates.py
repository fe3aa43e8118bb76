"""Explicit dates in a query, as time windows ("on 13 October 2023", "in July 2023").

Rule-based and offline. Only absolute dates are recognised: a relative
expression ("last week") needs a reference time the query does not carry.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta, timezone

__all__ = ["query_windows"]

_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_M = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_D = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_Y = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS = [
    re.compile(rf"\b{_M}\s+{_D},?\s+{_Y}\b", re.IGNORECASE),  # October 13, 2023
    re.compile(rf"\b{_D}\s+(?:of\s+)?{_M},?\s+{_Y}\b", re.IGNORECASE),  # 13 October 2023
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<mon>\d{2})-(?P<day>\d{2})\b"),  # 2023-10-13
    re.compile(rf"\b{_M},?\s+{_Y}\b", re.IGNORECASE),  # October 2023
]


def _utc(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=timezone.utc)


def query_windows(query: str, day_slack_days: int = 1) -> list[tuple[datetime, datetime, str]]:
    """Time windows named in ``query``: ``(start, end, precision)``, end exclusive.

    A day is widened by ``day_slack_days`` on each side (an event "on the 13th"
    is often told the day after); a month spans the month.
    """
    found: list[tuple[datetime, datetime, str]] = []
    taken: list[tuple[int, int]] = []
    for pat in _PATTERNS:
        for m in pat.finditer(query):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            g = m.groupdict()
            try:
                year = int(g["year"])
                month = int(g["mon"]) if g.get("mon") else _MONTHS[g["month"].lower()]
                if g.get("day"):
                    day = _utc(year, month, int(g["day"]))
                    slack = timedelta(days=day_slack_days)
                    found.append((day - slack, day + timedelta(days=1) + slack, "day"))
                else:
                    last = calendar.monthrange(year, month)[1]
                    found.append((_utc(year, month, 1), _utc(year, month, last) + timedelta(days=1), "month"))
            except (ValueError, KeyError):
                continue
            taken.append((m.start(), m.end()))
    return found
