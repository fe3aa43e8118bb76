"""Input validation for the public API: every check raises a clear SgmemError.

Validation runs before anything is written, so a failing call stores nothing.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import unicodedata
from collections.abc import Iterable, Mapping, Sized
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .config import MODES, Limits
from .errors import InvalidInputError, LimitExceededError
from .types import Message

__all__ = [
    "ROLES",
    "check_int",
    "check_mode",
    "check_name",
    "check_now",
    "check_score",
    "check_text",
    "check_time",
    "normalise_messages",
]

#: Roles a message may have; LangChain "human"/"ai" are mapped by the adapters.
ROLES = ("user", "assistant", "system", "tool")
_MESSAGE_KEYS = {"role", "content", "name", "id", "at", "session", "metadata"}
_CONTROL = ("Cc", "Zl", "Zp")  # Unicode categories refused in names: control characters, line and paragraph breaks


def _encodable(value: str, field: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            field,
            value,
            "text that is valid Unicode",
            f"It contains a lone surrogate at position {exc.start}; decode the source text correctly.",
        ) from None


def check_name(value: Any, field: str, limits: Limits, *, new: bool = False) -> str:
    """A scope, thread or id: a non-empty string, stored verbatim.

    ``new``: the name is being written (an add, an insert, a thread set anew): control characters and line breaks
    are refused then. Reads and deletes take any name, so a store written before names were checked can still be
    read and forgotten by the names it holds.
    """
    if not isinstance(value, str):
        raise InvalidInputError(field, value, "a non-empty string")
    if not value.strip():
        raise InvalidInputError(field, value, "a non-empty string", f"Pass a name, e.g. {field}='user-42'.")
    if len(value) > limits.max_name_chars:
        raise LimitExceededError(field, len(value), limits.max_name_chars, "characters", "max_name_chars")
    if "\x00" in value:
        raise InvalidInputError(field, value, "a string without NUL characters")
    control = next((c for c in value if unicodedata.category(c) in _CONTROL), None) if new else None
    if control is not None:  # a line break in a thread name would start a line of its own in a context block
        raise InvalidInputError(
            field,
            value,
            "a name without control characters or line breaks",
            f"It has {control!r} at position {value.index(control)}; use e.g. '-' or ' ' instead.",
        )
    _encodable(value, field)
    return value


def check_text(value: Any, field: str, max_chars: int, setting: str) -> str:
    """Message content or a query: a non-blank string within the size limit."""
    if not isinstance(value, str):
        raise InvalidInputError(field, value, "a string")
    if not value.strip():
        raise InvalidInputError(field, value, "a non-blank string")
    if len(value) > max_chars:
        raise LimitExceededError(field, len(value), max_chars, "characters", setting)
    if "\x00" in value:
        # refused on every backend: PostgreSQL's text cannot hold U+0000 and messages are replayed verbatim
        # (an escaped or stripped NUL would replay as something else than what was added)
        raise InvalidInputError(
            field,
            value,
            "text without NUL characters (U+0000)",
            f"It has one at position {value.index(chr(0))}; remove them (e.g. text.replace('\\x00', '')): "
            "a NUL in chat text is almost always a decoding error.",
        )
    _encodable(value, field)
    return value


def check_int(value: Any, field: str, low: int, high: int | None = None) -> int:
    """An int (not bool; numpy integers too) in [low, high], returned as a Python int."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InvalidInputError(field, value, f"an int >= {low}")
    value = int(value)
    if value < low or (high is not None and value > high):
        expected = f"an int in [{low}, {high}]" if high is not None else f"an int >= {low}"
        raise InvalidInputError(field, value, expected)
    return value


def check_score(value: Any, field: str, default: float) -> float:
    """A relevance threshold in [0, 1] (``None`` → ``default``), returned as a float."""
    if value is None:
        return default
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidInputError(field, value, "a number in [0, 1] or None", "0 keeps every hit.")
    value = float(value)
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise InvalidInputError(
            field,
            value,
            "a relevance in [0, 1] (Hit.relevance), or None for Config.min_relevance",
            "It thresholds Hit.relevance, not Hit.score; 0 keeps every hit.",
        )
    return value


def check_mode(value: Any) -> str | None:
    """None (the configured default) or one of :data:`sgmem.config.MODES`."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in MODES:
        raise InvalidInputError("mode", value, f"None or one of {', '.join(repr(m) for m in MODES)}")
    return value


def check_time(value: Any, field: str) -> datetime | None:
    """A timezone-aware datetime from a datetime or an ISO-8601 string.

    Naive datetimes are taken as UTC.
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInputError(field, value, "an ISO-8601 date or datetime, e.g. '2023-05-08T13:56:00Z'") from None
    if not isinstance(value, datetime):
        raise InvalidInputError(field, value, "a datetime or an ISO-8601 string")
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    try:
        ts = value.timestamp()
        value.astimezone(timezone.utc)  # 9999-12-31T23:00-05:00 is past the last UTC datetime
    except (OverflowError, OSError, ValueError, TypeError):
        raise InvalidInputError(
            field, value, "a datetime between 0001-01-01 and 9999-12-31 in UTC (with a valid time zone)"
        ) from None
    if not math.isfinite(ts):
        raise InvalidInputError(field, value, "a finite datetime")
    return value


def check_now(value: Any) -> datetime:
    """The moment a query is asked: :func:`check_time` of ``now``, or the clock when it is ``None``."""
    return check_time(value, "now") or datetime.now(timezone.utc)


def message_fields(m: Message) -> dict[str, Any]:
    """A stored message as the dict an add takes (its id, time, session and a copy of its metadata)."""
    return {
        "role": m.role,
        "content": m.content,
        "name": m.name,
        "id": m.id,
        "at": m.at,
        "session": m.session,
        "metadata": dict(m.metadata),
    }


def _as_dict(m: Any, field: str) -> dict[str, Any]:
    if isinstance(m, Message):
        return message_fields(m)
    if isinstance(m, Mapping):
        unknown = set(m) - _MESSAGE_KEYS
        if unknown:
            raise InvalidInputError(
                field,
                sorted(unknown, key=repr),
                f"only the keys {sorted(_MESSAGE_KEYS)}",
                "Put extra fields in 'metadata'.",
            )
        return dict(m)
    raise InvalidInputError(field, m, "a dict with 'role' and 'content', or a sgmem.Message")


def _check_keys(value: Any) -> None:
    """Refuse non-string keys, which JSON would not replay as given.

    ``{1: "a"}`` would come back as ``{"1": "a"}``, and ``{1: "a", "1": "b"}``
    would silently lose a value.
    """
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            for k, item in v.items():
                if not isinstance(k, str):
                    raise TypeError(f"key {k!r} is not a string; JSON would replay it as {json.dumps(str(k))}")
                stack.append(item)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)


def normalise_messages(
    messages: Any, default_at: datetime, limits: Limits, *, allow_empty: bool = False
) -> list[dict[str, Any]]:
    """Validate messages and return them as dicts with every field filled (``[]`` only with ``allow_empty``).

    Raises:
        InvalidInputError: the first problem found, naming the message index.
    """
    if isinstance(messages, (Mapping, Message)):
        messages = [messages]
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Iterable):
        raise InvalidInputError("messages", messages, "a list of message dicts or sgmem.Message objects")
    messages = list(messages)
    if not messages and not allow_empty:
        raise InvalidInputError("messages", messages, "at least one message")
    if len(messages) > limits.max_messages_per_add:
        raise LimitExceededError(
            "messages", len(messages), limits.max_messages_per_add, "messages", "max_messages_per_add"
        )
    out = []
    seen_ids: set[str] = set()
    for i, raw in enumerate(messages):
        f = f"messages[{i}]"
        m = _as_dict(raw, f)
        role = m.get("role")
        if role is None:
            raise InvalidInputError(f"{f}.role", None, f"one of {ROLES}", "Every message needs a role.")
        if role not in ROLES:
            raise InvalidInputError(f"{f}.role", role, f"one of {ROLES}")
        content = check_text(m.get("content"), f"{f}.content", limits.max_message_chars, "max_message_chars")
        name = m.get("name")
        if name is not None:
            name = check_name(name, f"{f}.name", limits, new=True)
        mid = m.get("id")
        if mid is not None:
            mid = check_name(mid, f"{f}.id", limits, new=True)
            if mid in seen_ids:
                raise InvalidInputError(f"{f}.id", mid, "an id not used by another message of this add")
            seen_ids.add(mid)
        session = m.get("session")
        if session is not None:
            session = check_name(session, f"{f}.session", limits, new=True)
        at = check_time(m.get("at"), f"{f}.at") or default_at
        metadata = m.get("metadata")
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, Mapping):
            raise InvalidInputError(f"{f}.metadata", metadata, "a dict of JSON-serialisable values")
        try:
            # stored as UTF-8 JSON: a lone surrogate in a value or key must fail here, not in SQLite
            dumped = json.dumps(metadata, allow_nan=False, ensure_ascii=False)
            dumped.encode("utf-8")
            _check_keys(metadata)
            if json.loads(dumped) != metadata:  # e.g. a tuple, which would replay as a list
                raise ValueError("it would not read back equal from JSON (use lists, not tuples or sets)")
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidInputError(f"{f}.metadata", metadata, "a dict of JSON-serialisable values", str(exc)) from None
        if len(dumped) > limits.max_metadata_chars:
            raise LimitExceededError(
                f"{f}.metadata", len(dumped), limits.max_metadata_chars, "characters as JSON", "max_metadata_chars"
            )
        out.append(
            {
                "role": role,
                "content": content,
                "name": name,
                "id": mid,
                "at": at,
                "session": session,
                "metadata": dict(metadata),
            }
        )
    return out


def check_names(value: Any, field: str, limits: Limits, one: bool = False) -> list[str] | None:
    """A list of names (threads, message ids) or ``None``.

    With ``one``, a bare string is one name (``threads="chat-1"``); otherwise
    it is refused (a message id string would otherwise be split into letters).
    A mapping is refused rather than taken as its keys, and a list longer than
    ``limits.max_ids_per_call`` is refused without being read through.
    """
    if value is None:
        return None
    if one and isinstance(value, str):
        return [check_name(value, field, limits)]
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise InvalidInputError(
            field,
            value,
            "a list of names or ids, or None",
            "A dict is not taken as its keys: pass list(d) if its keys are the ids."
            if isinstance(value, Mapping)
            else "",
        )
    cap = limits.max_ids_per_call
    names = list(itertools.islice(value, cap + 1))
    if len(names) > cap:
        size = len(value) if isinstance(value, Sized) else cap + 1
        raise LimitExceededError(field, size, cap, "ids", "max_ids_per_call")
    return [check_name(v, f"{field}[]", limits) for v in names]


def check_saving(save_tool_messages: Any, save_only_user_messages: Any) -> tuple[bool, bool]:
    """The adapters' two options of what a conversation stores (tool traffic; only the user's messages)."""
    for field, value in (
        ("save_tool_messages", save_tool_messages),
        ("save_only_user_messages", save_only_user_messages),
    ):
        if not isinstance(value, bool):
            raise InvalidInputError(field, value, "True or False")
    if save_tool_messages and save_only_user_messages:
        raise InvalidInputError(
            "save_tool_messages",
            save_tool_messages,
            "False when save_only_user_messages=True",
            "Storing only the user's messages leaves tool traffic out; set one of the two.",
        )
    return save_tool_messages, save_only_user_messages


def fit_query(text: str, limits: Limits, log: logging.Logger) -> str:
    """A query an adapter recalls with before a model call, within ``limits.max_query_chars``.

    An over-long message (a pasted document) must not fail the agent's turn:
    its beginning and its end are kept (where a request and its question
    usually are) and the middle is left out, with a warning on ``log``.
    """
    cap = limits.max_query_chars
    if len(text) <= cap:
        return text
    head = cap // 2
    tail = cap - head - 1
    log.warning(
        "sgmem: a query of %d characters is over Limits.max_query_chars (%d); recalling with its first %d and "
        "last %d characters",
        len(text),
        cap,
        head,
        tail,
    )
    return text[:head] + "\n" + text[len(text) - tail :]


def check_embedder_identity(embedder: Any) -> None:
    """The name and dim recorded in the store must be a real name and a positive int."""
    name, dim = getattr(embedder, "name", None), getattr(embedder, "dim", None)
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("embedder.name", name, "a non-empty string identifying the model")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or int(dim) < 1:
        raise InvalidInputError("embedder.dim", dim, "a positive int (the vector dimension)")
