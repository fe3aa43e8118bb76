"""Message files as ``sgmem ingest`` and ``sgmem calibrate`` read them (JSON or JSONL).

Shapes: a list of messages; ``{thread: [messages]}``; ``{"threads": [{"thread":
..., "at": ..., "messages": [...]}]}``; or JSONL, one message per line with an
optional ``"thread"`` key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import InvalidInputError

__all__ = ["load_messages"]

_SHAPES = (
    'Shapes: a list of messages; {"thread": [messages], ...}; {"threads": [{"thread": ..., "messages": [...]}]}; '
    'or JSONL, one message per line with an optional "thread".'
)
_NESTING = "JSON nested a few levels deep (messages in threads), not arrays or objects nested thousands deep"


def load_messages(path: Path, thread: str | None) -> list[tuple[str, list[dict[str, Any]]]]:
    """Read messages from JSON or JSONL; returns (thread, messages) groups.

    Raises:
        InvalidInputError: the file is not UTF-8 JSON of one of the documented shapes.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            str(path), f"<byte {exc.object[exc.start]:#04x} at offset {exc.start}>", "a UTF-8 text file (JSON or JSONL)"
        ) from None
    if path.suffix == ".jsonl":
        groups: dict[str, list[dict[str, Any]]] = {}
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{path}:{n}", line[:60], "one JSON object per line") from exc
            except RecursionError:
                raise InvalidInputError(f"{path}:{n}", line[:60], _NESTING) from None
            if not isinstance(row, dict):
                raise InvalidInputError(f"{path}:{n}", row, "a JSON object (one message) per line")
            t = row.pop("thread", None)
            if t is None:  # no thread named: --thread, else "default"
                t = thread or "default"
            elif not isinstance(t, str) or not t.strip():
                raise InvalidInputError(
                    f"{path}:{n}.thread", t, 'a thread name (a non-empty string), or no "thread" for --thread'
                )
            groups.setdefault(t, []).append(row)
        return list(groups.items())
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(str(path), text[:60], "a JSON file") from exc
    except RecursionError:  # Python's parser recurses once per level of nesting
        raise InvalidInputError(str(path), text[:60], _NESTING) from None
    if isinstance(data, list):
        return [(thread or "default", data)]
    if isinstance(data, dict) and "threads" in data:
        threads = data["threads"]
        if not isinstance(threads, list) or not all(
            isinstance(t, dict) and isinstance(t.get("messages"), list) for t in threads
        ):
            raise InvalidInputError(f"{path}: threads", threads, 'a list of {"thread": ..., "messages": [...]} objects')
        return [
            (
                t.get("thread"),
                [dict(m, at=m.get("at", t.get("at"))) if isinstance(m, dict) else m for m in t["messages"]],
            )
            for t in threads
        ]
    if isinstance(data, dict):
        for k, v in data.items():
            if not isinstance(v, list):
                raise InvalidInputError(
                    f"{path}: {k!r}", v, "a list of messages (the file is {thread: [messages]})", _SHAPES
                )
        return [(str(k), v) for k, v in data.items()]
    raise InvalidInputError(str(path), type(data).__name__, "a list of messages, or {thread: [messages]}", _SHAPES)
