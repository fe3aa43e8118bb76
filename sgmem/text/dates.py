"""Dates in a query, as time windows.

Rule-based and offline. Absolute dates ("on 13 October 2023", "in July 2023")
are read as they are. Expressions relative to the moment of asking ("last
week", "yesterday", "two Saturdays ago", "three days ago", "in May", "in the
past two months") are resolved against ``now``, the reference time of the
query (the clock by default; a chat's current time or a benchmark's question
date when given), in ``now``'s own time zone: "yesterday" is the asker's
calendar day before.

Each window is ``(start, end, precision)``, end exclusive. ``precision`` is
``"day"`` for a window of at most a few days (an event told on the day, or a
day or two after) and ``"month"`` for a wider one (a week, a month): the search
weighs a turn said inside a narrow window more than one inside a wide one.

Relative-date libraries (dateparser, parsedatetime) were considered: both turn
an expression into one instant, not the span it names ("last month" is a whole
month, "a week ago" a few days either side), and finding the expression inside
a question is the fragile part (dateparser's ``search_dates`` reads "may" the
verb as a month). The grammar of the expressions a user asks with is small;
it is written out here.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta, timezone, tzinfo

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
_WEEKDAYS = {
    name: i
    for i, names in enumerate(
        [
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        ]
    )
    for name in names
}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "two": 2,
    "three": 3,
    "a few": 3,
    "few": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
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

_N = r"(?P<n>\d{1,3}|" + "|".join(re.escape(w) for w in sorted(_NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_WD = r"(?P<wd>" + "|".join(sorted(_WEEKDAYS, key=len, reverse=True)) + r")(?:day)?s?\.?"
_MONTH_NAME = "|".join(sorted(_MONTHS, key=len, reverse=True))
#: relative expressions, tried in this order; a span taken by one is not read again
_RELATIVE = [
    ("ago", re.compile(rf"\b{_N}\s+{_UNIT}\s+ago\b", re.IGNORECASE)),  # three days ago, a week ago
    ("weekday_ago", re.compile(rf"\b{_N}\s+{_WD}\s+ago\b", re.IGNORECASE)),  # two Saturdays ago
    ("past", re.compile(rf"\b(?:in|during|over|within)\s+the\s+(?:past|last)\s+(?:{_N}\s+)?{_UNIT}\b", re.IGNORECASE)),
    ("weekday", re.compile(rf"\b(?:last|past|previous)\s+{_WD}(?!\w)", re.IGNORECASE)),  # last Saturday
    ("weekend", re.compile(r"\b(?:last|past|previous|this)\s+weekend\b", re.IGNORECASE)),
    ("last_unit", re.compile(r"\b(?P<which>last|past|previous|this)\s+(?P<unit>week|month)\b", re.IGNORECASE)),
    (
        "day_word",
        re.compile(
            r"\b(?P<word>the\s+day\s+before\s+yesterday|yesterday|today|tonight|this\s+morning)\b", re.IGNORECASE
        ),
    ),
    ("month_day", re.compile(rf"\b{_M}\s+{_D}\b(?!,?\s*(?:19|20)\d\d)", re.IGNORECASE)),  # March 15th
    ("month_day", re.compile(rf"\b{_D}\s+(?:of\s+)?{_M}(?!\w)(?!,?\s*(?:19|20)\d\d)", re.IGNORECASE)),  # 15 March
    (
        "in_month",  # in May, last June, during March and April (the nearest past one)
        re.compile(
            rf"\b(?:in|during|last|since|of)\s+(?P<months>(?:{_MONTH_NAME})(?:\s*(?:,|and|or|&)\s*(?:{_MONTH_NAME}))*)\b"
            r"(?!,?\s*(?:19|20)\d\d)(?!\s+\d)",
            re.IGNORECASE,
        ),
    ),
]
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
#: a window no wider than this many days (a calendar week and a day either side) weighs as a named day
_DAY_PRECISE = 9


def _utc(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=timezone.utc)


def _count(text: str) -> int:
    text = " ".join(text.lower().split())
    return int(text) if text.isdigit() else _NUMBERS[text]


def _month_window(year: int, month: int, tz: tzinfo | None) -> tuple[datetime, datetime]:
    last = calendar.monthrange(year, month)[1]
    start = datetime(year, month, 1, tzinfo=tz)
    return start, start + timedelta(days=last)


def _months_back(now: datetime, n: int) -> tuple[int, int]:
    i = now.year * 12 + (now.month - 1) - n
    return i // 12, i % 12 + 1


def _window(start: datetime, end: datetime) -> tuple[datetime, datetime, str]:
    precision = "day" if (end - start) <= timedelta(days=_DAY_PRECISE) else "month"
    return start.astimezone(timezone.utc), end.astimezone(timezone.utc), precision


def _relative(
    kind: str, g: dict[str, str | None], now: datetime, slack: timedelta
) -> list[tuple[datetime, datetime, str]]:
    """The window(s) of one relative expression (see :data:`_RELATIVE`), in ``now``'s time zone."""
    tz = now.tzinfo
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    day = timedelta(days=1)
    if kind == "ago":
        n, unit = _count(g["n"] or "1"), (g["unit"] or "day").lower()
        if unit == "day":
            at = today - n * day
            return [_window(at - slack, at + day + slack)]
        if unit == "month":  # "two months ago": that calendar month, give or take half a month
            y, m = _months_back(now, n)
            start, end = _month_window(y, m, tz)
            centre = start + (end - start) / 2
            return [_window(centre - timedelta(days=30), centre + timedelta(days=30))]
        # "a week ago", "two years ago": the day that long ago, give or take half a unit (at least three days)
        half = timedelta(days=3 if unit == "week" else _UNIT_DAYS[unit] // 2)
        at = today - n * _UNIT_DAYS[unit] * day
        return [_window(at - half, at + day + half)]
    if kind in ("weekday_ago", "weekday"):
        n = _count(g.get("n") or "1") if kind == "weekday_ago" else 1
        wd = _WEEKDAYS[(g["wd"] or "").lower().rstrip(".")]
        back = (today.weekday() - wd) % 7 or 7  # "last Saturday" on a Saturday is a week ago
        at = today - (back + 7 * (n - 1)) * day
        return [_window(at - slack, at + day + slack)]
    if kind == "weekend":
        this = (g.get("text") or "").lower().startswith("this")
        back = (today.weekday() - 5) % 7  # days since the latest Saturday (today's, if one)
        sat = today - back * day
        if not this and today.weekday() >= 5:  # at the weekend, "last weekend" is the one before
            sat -= 7 * day
        return [_window(sat - slack, sat + 2 * day + slack)]
    if kind == "last_unit":
        which, unit = (g["which"] or "").lower(), (g["unit"] or "").lower()
        if unit == "week":
            monday = today - today.weekday() * day
            if which == "this":
                return [_window(monday, today + day)]
            return [_window(monday - 7 * day - slack, monday + slack)]
        if which == "this":
            return [_window(today.replace(day=1), today + day)]
        y, m = _months_back(now, 1)
        start, end = _month_window(y, m, tz)
        return [_window(start - slack, end + slack)]
    if kind == "past":  # "in the past two months": from that long ago until now
        n, unit = _count(g["n"] or "1"), (g["unit"] or "day").lower()
        return [_window(today - n * _UNIT_DAYS[unit] * day - slack, today + day)]
    if kind == "day_word":
        word = " ".join((g["word"] or "").lower().split())
        back = {"yesterday": 1, "the day before yesterday": 2}.get(word, 0)
        at = today - back * day
        return [_window(at - (slack if back else timedelta(0)), at + day + (slack if back else timedelta(0)))]
    if kind == "month_day":  # "March 15th" with no year: the latest one not after today
        m, d = _MONTHS[(g["month"] or "").lower().rstrip(".")], int(g["day"] or 0)
        for y in (now.year, now.year - 1):
            try:
                at = datetime(y, m, d, tzinfo=tz)
            except ValueError:
                return []
            if at <= today:
                return [_window(at - slack, at + day + slack)]
        return []
    if kind == "in_month":  # "in May": the latest May that has begun (this one, when it is May now)
        out = []
        for name in re.findall(_MONTH_NAME, g["months"] or "", re.IGNORECASE):
            m = _MONTHS[name.lower()]
            y = now.year if m <= now.month else now.year - 1
            out.append(_window(*_month_window(y, m, tz)))
        return out
    return []


def query_windows(
    query: str, day_slack_days: int = 1, now: datetime | None = None
) -> list[tuple[datetime, datetime, str]]:
    """Time windows named in ``query``: ``(start, end, precision)``, end exclusive, in UTC.

    A day is widened by ``day_slack_days`` on each side (an event "on the 13th"
    is often told the day after); a month spans the month. Expressions relative
    to the moment of asking are read only when ``now`` (an aware datetime) is given.
    """
    found: list[tuple[datetime, datetime, str]] = []
    taken: list[tuple[int, int]] = []

    def free(m: re.Match[str]) -> bool:
        return not any(a < m.end() and m.start() < b for a, b in taken)

    for pat in _PATTERNS:
        for m in pat.finditer(query):
            if not free(m):
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
    if now is None:
        return found
    slack = timedelta(days=day_slack_days)
    for kind, pat in _RELATIVE:
        for m in pat.finditer(query):
            if not free(m):
                continue
            groups: dict[str, str | None] = {**m.groupdict(), "text": m.group(0)}
            try:
                got = _relative(kind, groups, now, slack)
            except (ValueError, KeyError, OverflowError):
                continue
            if got:
                found.extend(got)
                taken.append((m.start(), m.end()))
    return found
