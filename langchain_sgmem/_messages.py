"""LangChain ⇄ sgmem message conversion with exact replay.

A LangChain message is stored as one sgmem message:

- ``role`` from its type (human → ``user``, ai → ``assistant``, system →
  ``system``, tool → ``tool``);
- ``content``: a plain-text rendering — what sgmem indexes and shows in
  context. It is the message text when there is one; content blocks without
  text and tool calls are rendered as short bracketed notes, because sgmem
  only indexes non-blank text;
- ``name``: the message's ``name`` (the speaker label), when sgmem accepts it;
  a ``ChatMessage`` with a role of its own (``"critic"``, ``"narrator"``) is
  stored as a named ``assistant`` turn whose speaker is that role (unless it
  has a ``name``), and replays with its role unchanged;
- ``metadata["langchain"]``: the whole serialised message
  (:func:`langchain_core.messages.message_to_dict`), which replays it exactly —
  type, content (string or blocks), id, name, ``additional_kwargs``,
  ``response_metadata``, tool calls, ``tool_call_id``, usage.

Messages sgmem holds that were not written through LangChain (plain
:meth:`sgmem.Memory.add`) replay as the natural LangChain type for their role.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
    message_to_dict,
    messages_from_dict,
)

from sgmem import InvalidInputError, Limits, Message

__all__ = ["METADATA_KEY", "from_sgmem", "render_text", "role_of", "to_sgmem", "to_sgmem_all"]

#: Key of the serialised LangChain message in sgmem message metadata.
METADATA_KEY = "langchain"
#: Key marking that the serialised message's text is the sgmem ``content`` (a long message's text is kept once).
TEXT_KEY = "langchain_text"

#: Exact classes the adapters map; subclasses are refused (they would not replay as themselves).
_ROLE_BY_CLASS: dict[type[BaseMessage], str] = {
    HumanMessage: "user",
    HumanMessageChunk: "user",
    AIMessage: "assistant",
    AIMessageChunk: "assistant",
    SystemMessage: "system",
    SystemMessageChunk: "system",
    ToolMessage: "tool",
    ToolMessageChunk: "tool",
    FunctionMessage: "tool",
    FunctionMessageChunk: "tool",
}

#: ``ChatMessage.role`` values the adapters understand.
_CHAT_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}

_MAX_NAME_CHARS = 512


def _own_role(message: Any) -> str | None:
    """A ``ChatMessage``'s role when it is none of the standard ones (``"critic"``), else ``None``."""
    if type(message) in (ChatMessage, ChatMessageChunk) and str(message.role).lower() not in _CHAT_ROLES:
        return str(message.role)
    return None


def role_of(message: Any, field: str = "message") -> str:
    """The sgmem role for a LangChain message.

    A ``ChatMessage`` whose role is not a standard one (``"critic"``) is
    another speaker: ``assistant`` (see :func:`to_sgmem` for its name).

    Raises:
        InvalidInputError: not a message type the adapters can map (e.g. a
            custom ``BaseMessage`` subclass or ``RemoveMessage``), or a
            ``ChatMessage`` whose role is blank.
    """
    cls = type(message)
    if cls in _ROLE_BY_CLASS:
        return _ROLE_BY_CLASS[cls]
    if cls in (ChatMessage, ChatMessageChunk):
        role = _CHAT_ROLES.get(str(message.role).lower())
        if role is None:
            if _speaker(message.role) is None:
                raise InvalidInputError(
                    f"{field}.role",
                    message.role,
                    f"a role in {sorted(_CHAT_ROLES)} or a speaker's name (e.g. 'critic')",
                )
            return "assistant"
        return role
    raise InvalidInputError(
        field,
        message,
        "a HumanMessage, AIMessage, SystemMessage, ToolMessage, FunctionMessage or ChatMessage (or their chunks)",
        f"Got {cls.__module__}.{cls.__qualname__}; convert it to one of these before adding it, "
        "so it can be replayed exactly.",
    )


def _block_text(block: Any) -> str:
    """A short rendering of one non-text content block."""
    if isinstance(block, dict):
        kind = str(block.get("type") or "block")
        if kind in ("text", "text-plain"):
            return ""
        return f"[{kind}]"
    return ""


def render_text(message: BaseMessage) -> str:
    """The plain text sgmem indexes for ``message`` (never blank).

    The message text, then one bracketed note per tool call
    (``[tool call get_weather {"city": "Paris"}]``); content blocks with no
    text become ``[image]``-style notes; a message with nothing at all
    becomes ``[empty <type> message]``.
    """
    parts: list[str] = []
    text = message.text
    if text.strip():
        parts.append(text)
    elif isinstance(message.content, list):
        notes = [n for n in (_block_text(b) for b in message.content) if n]
        parts.extend(notes)
    for call in getattr(message, "tool_calls", None) or []:
        args = json.dumps(call.get("args", {}), ensure_ascii=False, sort_keys=True, default=str)
        parts.append(f"[tool call {call.get('name')} {args}]")
    rendered = "\n".join(parts)
    return rendered if rendered.strip() else f"[empty {message.type} message]"


def _speaker(name: Any) -> str | None:
    if isinstance(name, str) and name.strip() and len(name) <= _MAX_NAME_CHARS and "\x00" not in name:
        return name
    return None


def to_sgmem(message: Any, field: str = "message", limits: Limits | None = None) -> dict[str, Any]:
    """One LangChain message as a sgmem message dict (see the module docstring).

    Raises:
        InvalidInputError: an unmappable message type, or fields that are not
            JSON data (sgmem replays messages exactly, from JSON).
    """
    role = role_of(message, field)
    data = message_to_dict(message)
    try:
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            field,
            message,
            "a message whose content, additional_kwargs and response_metadata are JSON data",
            f"{exc}. sgmem stores the message as JSON to replay it exactly.",
        ) from None
    out: dict[str, Any] = {"role": role, "content": render_text(message), "metadata": {METADATA_KEY: data}}
    # a long message's text is kept once, as the content, when the replay copy (which has a size limit) would be
    # over max_metadata_chars; what was stored before is stored the same way
    limit = (limits or Limits()).max_metadata_chars
    inner = data.get("data") if isinstance(data, dict) else None
    if (
        isinstance(inner, dict)
        and inner.get("content") == out["content"]
        and len(out["content"]) >= limit // 4
        and len(json.dumps(data)) > limit
    ):
        inner["content"] = ""
        out["metadata"][TEXT_KEY] = True
    name = _speaker(message.name) or _own_role(message)
    if name is not None:
        out["name"] = name
    return out


def to_sgmem_all(
    messages: Sequence[Any], field: str = "messages", limits: Limits | None = None
) -> list[dict[str, Any]]:
    """Convert every message first, so one bad message means nothing is stored."""
    if isinstance(messages, (str, bytes, BaseMessage)) or not isinstance(messages, Sequence):
        raise InvalidInputError(field, messages, "a list of LangChain messages")
    return [to_sgmem(m, f"{field}[{i}]", limits) for i, m in enumerate(messages)]


def from_sgmem(message: Message) -> BaseMessage:
    """Replay a stored sgmem message as the LangChain message that was added.

    Messages added without the LangChain adapters map by role: ``user`` →
    ``HumanMessage``, ``assistant`` → ``AIMessage``, ``system`` →
    ``SystemMessage``, ``tool`` → ``ChatMessage(role="tool")`` (there is no
    tool call id to give a ``ToolMessage``); their id is the sgmem id.
    """
    stored = message.metadata.get(METADATA_KEY) if isinstance(message.metadata, dict) else None
    if isinstance(stored, dict) and isinstance(stored.get("data"), dict) and message.metadata.get(TEXT_KEY) is True:
        stored = {**stored, "data": {**stored["data"], "content": message.content}}  # the text kept once
    if isinstance(stored, dict) and "type" in stored and "data" in stored:
        return messages_from_dict([stored])[0]
    kwargs: dict[str, Any] = {"content": message.content, "id": message.id}
    if message.name is not None:
        kwargs["name"] = message.name
    if message.role == "user":
        return HumanMessage(**kwargs)
    if message.role == "assistant":
        return AIMessage(**kwargs)
    if message.role == "system":
        return SystemMessage(**kwargs)
    return ChatMessage(role=message.role, **kwargs)
