"""LlamaIndex ``ChatMessage`` <-> sgmem message translation.

Mapping (LlamaIndex role -> sgmem role):

=====================  ===========  ==========================================
``MessageRole``        sgmem        why
=====================  ===========  ==========================================
USER                   user
ASSISTANT              assistant
CHATBOT, MODEL         assistant    Cohere's and Gemini's name for the model
SYSTEM, DEVELOPER      system       DEVELOPER is OpenAI's instruction role
TOOL, FUNCTION         tool         FUNCTION is the legacy OpenAI tool result
=====================  ===========  ==========================================

Any other role is an :class:`sgmem.InvalidInputError`.

Exact replay: the whole message (its original role, every content block and
``additional_kwargs``) is kept, as LlamaIndex serialises it to JSON, under
``metadata["llama_index"]``, and rebuilt from there. Values LlamaIndex itself
turns into JSON on the way (``bytes`` become base64 text, pydantic objects
become dicts) come back in that JSON form, exactly as from a persisted
``SimpleChatStore``.

The sgmem ``content`` (what is indexed, searched and shown in context) is the
message's text blocks. Blocks without text are described in brackets so that
every message is stored and searchable: a tool call as
``[tool call: get_weather {"city": "Paris"}]``, media as ``[image]``,
``[audio]``, ``[video]``, ``[document]``. Thinking blocks and cache points are
not indexed (they are still replayed). A message with nothing to show at all
is indexed as ``[empty assistant message]`` (with its role).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from llama_index.core.base.llms.types import (
    CachePoint,
    ChatMessage,
    CitableBlock,
    CitationBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from pydantic import ValidationError

import sgmem
from sgmem.config import Limits
from sgmem.errors import InvalidInputError
from sgmem.parts import split_message
from sgmem.validate import check_name, normalise_messages

__all__ = [
    "META_KEY",
    "check_key",
    "check_memory",
    "check_message",
    "check_messages",
    "from_sgmem",
    "index_text",
    "is_tool_traffic",
    "query_text",
    "to_keep",
    "to_sgmem",
]

#: Key of the exact LlamaIndex message inside sgmem ``metadata``.
META_KEY = "llama_index"
#: Key of the position of the text block whose text is the sgmem ``content`` (a long message's text is kept once).
TEXT_KEY = "llama_index_text_block"

_TO_SGMEM = {
    MessageRole.USER.value: "user",
    MessageRole.ASSISTANT.value: "assistant",
    MessageRole.CHATBOT.value: "assistant",
    MessageRole.MODEL.value: "assistant",
    MessageRole.SYSTEM.value: "system",
    MessageRole.DEVELOPER.value: "system",
    MessageRole.TOOL.value: "tool",
    MessageRole.FUNCTION.value: "tool",
}
_FROM_SGMEM = {
    "user": MessageRole.USER,
    "assistant": MessageRole.ASSISTANT,
    "system": MessageRole.SYSTEM,
    "tool": MessageRole.TOOL,
}


def check_memory(memory: Any) -> sgmem.Memory:
    """The ``memory=`` argument every adapter takes: a :class:`sgmem.Memory`."""
    if not isinstance(memory, sgmem.Memory):
        raise InvalidInputError(
            "memory", memory, "a sgmem.Memory", "Create one with sgmem.Memory('./memory') and pass it as memory=."
        )
    return memory


def _block_text(block: Any) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolCallBlock):
        kwargs = block.tool_kwargs
        args = (
            kwargs if isinstance(kwargs, str) else json.dumps(kwargs, ensure_ascii=False, sort_keys=True, default=str)
        )
        return f"[tool call: {block.tool_name} {args}]"
    if isinstance(block, CitableBlock):
        return "\n".join(t for t in (_block_text(b) for b in block.content) if t.strip())
    if isinstance(block, CitationBlock):
        return _block_text(block.cited_content)
    if isinstance(block, (ThinkingBlock, CachePoint)):
        return ""
    return f"[{getattr(block, 'block_type', type(block).__name__)}]"


def index_text(message: ChatMessage, role: str) -> str:
    """The text sgmem indexes for ``message`` (never blank); see the module docstring."""
    text = "\n".join(t for t in (_block_text(b) for b in message.blocks) if t.strip())
    return text if text.strip() else f"[empty {role} message]"


def _not_twice(out: dict[str, Any], dumped: dict[str, Any], limits: Limits | None) -> None:
    """Keep a long message's text once: as ``content``, not again in the replay copy (which has a size limit).

    Only when the copy would be over ``max_metadata_chars``, so what was stored before is stored the same way.
    """
    limit = (limits or Limits()).max_metadata_chars
    blocks = dumped.get("blocks")
    if not isinstance(blocks, list) or len(out["content"]) < limit // 4:
        return
    if len(json.dumps(dumped)) <= limit:
        return
    texts = [i for i, b in enumerate(blocks) if isinstance(b, dict) and b.get("block_type") == "text"]
    if len(texts) == 1 and blocks[texts[0]].get("text") == out["content"]:
        blocks[texts[0]] = {**blocks[texts[0]], "text": ""}
        out["metadata"][TEXT_KEY] = texts[0]


def to_sgmem(message: Any, field: str = "message", limits: Limits | None = None) -> dict[str, Any]:
    """One ``ChatMessage`` as an sgmem message dict (role, indexed text, exact replay in metadata).

    Raises:
        InvalidInputError: not a ``ChatMessage``, an unknown role, or
            ``additional_kwargs`` that cannot be serialised to JSON.
    """
    if not isinstance(message, ChatMessage):
        raise InvalidInputError(
            field, message, "a llama_index ChatMessage", "Build one with ChatMessage(role='user', content='...')."
        )
    raw_role = getattr(message.role, "value", message.role)
    role = _TO_SGMEM.get(raw_role) if isinstance(raw_role, str) else None
    if role is None:
        raise InvalidInputError(
            f"{field}.role",
            message.role,
            f"a MessageRole: one of {', '.join(sorted(_TO_SGMEM))}",
            "sgmem stores user, assistant, system and tool messages.",
        )
    try:
        dumped = message.model_dump(mode="json")
        json.dumps(dumped, allow_nan=False)
    except (TypeError, ValueError) as exc:  # pydantic's serialisation errors are ValueErrors
        raise InvalidInputError(
            f"{field}.additional_kwargs",
            message.additional_kwargs,
            "JSON-serialisable values",
            f"sgmem keeps them to replay the message exactly ({type(exc).__name__}: {str(exc)[:200]}).",
        ) from None
    out = {"role": role, "content": index_text(message, role), "metadata": {META_KEY: dumped}}
    _not_twice(out, dumped, limits)
    return out


def is_tool_traffic(message: Any) -> bool:
    """A tool (or function) result, or an assistant message that calls a tool (whatever text it also has)."""
    if not isinstance(message, ChatMessage):
        return False
    if message.role in (MessageRole.TOOL, MessageRole.FUNCTION):
        return True
    return any(isinstance(b, ToolCallBlock) for b in message.blocks) or bool(
        message.additional_kwargs.get("tool_calls")
    )


def to_keep(messages: list[Any], save_tool_messages: bool, save_only_user_messages: bool) -> list[Any]:
    """The messages of a conversation an adapter stores: the user's, and the rest unless left out by the options."""
    if save_only_user_messages:
        return [m for m in messages if not isinstance(m, ChatMessage) or m.role == MessageRole.USER]
    return [m for m in messages if save_tool_messages or not is_tool_traffic(m)]


def check_messages(messages: Any, field: str, memory: sgmem.Memory, split: bool = False) -> list[dict[str, Any]]:
    """A list of ``ChatMessage`` converted and validated by sgmem's own rules.

    Validation runs before anything is written, so an adapter can delete
    (e.g. to replace a thread) only once it knows the add cannot be refused.
    With ``split``, a message over ``max_message_chars`` becomes its parts
    (:mod:`sgmem.parts`) instead of an error.
    """
    if isinstance(messages, (ChatMessage, str, bytes)) or not isinstance(messages, Iterable):
        raise InvalidInputError(field, messages, "a list of llama_index ChatMessage objects")
    limits = memory.config.limits
    out = [to_sgmem(m, f"{field}[{i}]", limits) for i, m in enumerate(messages)]
    if split:
        out = [part for item in out for part in split_message(item, limits)]
    if out:
        normalise_messages(out, datetime.now(timezone.utc), memory.config.limits)
    return out


def check_message(message: Any, field: str, memory: sgmem.Memory) -> dict[str, Any]:
    """One ``ChatMessage`` converted and validated by sgmem's own rules."""
    out = to_sgmem(message, field, memory.config.limits)
    normalise_messages([out], datetime.now(timezone.utc), memory.config.limits)
    return out


def check_key(value: Any, field: str, memory: sgmem.Memory) -> str:
    """A scope, thread or chat-store key: a non-empty string within sgmem's limits."""
    return check_name(value, field, memory.config.limits)


def from_sgmem(message: sgmem.Message) -> ChatMessage:
    """Rebuild the exact ``ChatMessage`` from a stored sgmem message.

    Messages stored by something other than this adapter (the core API, another
    framework) come back with their sgmem role and text.
    """
    dumped = message.metadata.get(META_KEY) if message.metadata else None
    at = message.metadata.get(TEXT_KEY) if message.metadata else None
    if isinstance(dumped, dict) and isinstance(at, int) and isinstance(dumped.get("blocks"), list):
        blocks = list(dumped["blocks"])
        if 0 <= at < len(blocks) and isinstance(blocks[at], dict):  # the text kept once, as the content
            blocks[at] = {**blocks[at], "text": message.content}
            dumped = {**dumped, "blocks": blocks}
    if isinstance(dumped, dict):
        try:
            return ChatMessage.model_validate(dumped)
        except ValidationError:
            pass  # not ours after all: fall back to role + text
    return ChatMessage(role=_FROM_SGMEM.get(message.role, MessageRole.USER), content=message.content)


def query_text(value: Any) -> str:
    """The text of a query given as a string or a ``ChatMessage`` ("" when there is none)."""
    if isinstance(value, ChatMessage):
        return "\n".join(b.text for b in value.blocks if isinstance(b, TextBlock)).strip()
    if isinstance(value, str):
        return value.strip()
    return ""
