"""LightGMEM relation edges ``E_rel`` (seed §3.1, §3.2.1, eq. 12; Table 7), with an LLM only.

The seed's memory graph has four edge families; ``E_rel`` "stores explicit
extracted relations" (§3.1). Its extractor is GLiNER2, an entity *and*
relation model (Table 6), run per episode: "we separately extract direct
relations from the same episode so that relation endpoints omitted by the
entity extractor can still be surfaced as candidate mentions" (§3.2.1).

sgmem downloads no such model, so relations come from the Memory's LLM when
it has one (``EntityConfig.relations``), and not at all without one: the seed
has no rule for relations, and neither has sgmem (no relation is ever
guessed from word patterns). Here:

- **Extraction** (:func:`extract_relations`): one call per add, or per
  ``relation_batch`` turns of a larger add (:data:`sgmem.prompts.ENTITY_RELATIONS`).
  The model sees each turn with its speaker and the names the rules found,
  and answers ``(head, relation, tail)`` triples per turn. An endpoint that
  is one of the turn's names (or "I"/"me"/"my": the speaker) is that mention;
  one the rules missed but the turn says verbatim becomes a mention of its
  own (§3.2.1), typed and resolved like the others; anything else is dropped
  (never invented). Output of the wrong shape is logged (logger
  ``sgmem.entities.relations``), counted as a fallback in the add's
  ``llm_fallbacks`` and ignored: the add stores its messages, entities and
  mentions all the same (the raw messages are the system of record).
- **Storage**: ``entity_relations`` rows (message, head entity, tail entity,
  relation phrase), scope-isolated, gone with their message or either entity
  (:mod:`sgmem.entities.store`).
- **Use**: the communities' graph is ``E_rel ∪ E_weak`` (eq. 12, weights the
  evidence counts); in ``mode="entity"`` an anchor's relation neighbours are
  its neighbours, and a turn gains ``relation_bonus`` per relation read from
  it that matches the query (Table 7's matched-relation bonus), see
  :mod:`sgmem.entities.retrieve`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..prompts import ENTITY_RELATIONS
from ..pyramid.llmio import Usage, call_json
from ..text.lexical import STOPWORDS
from .config import EntityConfig
from .extract import Mention, _cue_type, norm_name

__all__ = ["RelationRow", "Triple", "clean_phrase", "extract_relations"]

log = logging.getLogger(__name__)

#: [D] the longest relation phrase kept (the prompt asks for 1 to 4 words); longer ones are cut
MAX_PHRASE_CHARS = 80
#: [D] the most relations kept per turn (a chat turn rarely states more; a runaway answer is capped)
MAX_PER_TURN = 12
#: [D] the longest endpoint surfaced from a turn's text (a name, not a clause)
MAX_ENDPOINT_WORDS = 6
#: the turn text shown per message (as the disambiguation prompt shows it)
MAX_TEXT_CHARS = 1500
#: words that stand for the turn's speaker
_SELF = frozenset({"i", "me", "my", "myself", "mine"})


@dataclass(frozen=True)
class RelationRow:
    """A stored relation edge: ``head`` —``relation``→ ``tail``, read from message ``message_id``."""

    message_id: int
    head: int
    tail: int
    relation: str


@dataclass
class Triple:
    """A relation of an add's turn ``msg`` between two of its mentions (resolved to entities later)."""

    msg: int
    head: Mention
    relation: str
    tail: Mention


def clean_phrase(value: object) -> str | None:
    """A relation phrase as stored: a non-empty string, whitespace collapsed, at most :data:`MAX_PHRASE_CHARS`."""
    if not isinstance(value, str):
        return None
    phrase = " ".join(value.split())[:MAX_PHRASE_CHARS].strip()
    return phrase or None


def _items(raw: Any) -> list[Any] | None:
    """The list of relation objects in the model's answer, or None when it has another shape."""
    if isinstance(raw, dict):
        raw = raw.get("relations")
    return raw if isinstance(raw, list) else None


def _message_index(value: object, lo: int, hi: int) -> int | None:
    """The add's message index an answer's ``message`` field names (ids are 0-based within the call)."""
    if isinstance(value, str) and value.strip().lstrip("[").rstrip("]").isdigit():
        value = int(value.strip().lstrip("[").rstrip("]"))
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < hi - lo:
        return lo + value
    return None


def extract_relations(
    messages: Sequence[Any],
    per_msg: list[list[Mention]],
    sentence_of: Callable[[int, int], int],
    llm: Any,
    cfg: EntityConfig,
    usage: Usage,
) -> list[Triple]:
    """The relations the LLM reads in an add's turns (seed §3.2.1); surfaced endpoints join ``per_msg``.

    Args:
        messages: the add's ``MessageRow``s (content, name, at).
        per_msg: per message, the mentions the rules found (the speaker's
            included); a relation endpoint the rules missed is appended here.
        sentence_of: ``(message index, char offset)`` → the add's sentence index
            (a surfaced mention's context κ, for typing).
        usage: the add's LLM usage; every call is counted in it.

    Returns:
        The triples, in message order; their mentions are objects of ``per_msg``.
    """
    out: list[Triple] = []
    for lo in range(0, len(messages), cfg.relation_batch):
        hi = min(lo + cfg.relation_batch, len(messages))
        lines = []
        for i in range(lo, hi):
            m = messages[i]
            names = list(dict.fromkeys(x.surface for x in per_msg[i]))
            speaker = m.name or m.role
            lines.append(
                f'[{i - lo}] ({m.at.date().isoformat()}) {speaker}: """{m.content[:MAX_TEXT_CHARS]}"""\n'
                f"    names: {json.dumps(names, ensure_ascii=False)}"
            )
        prompt = ENTITY_RELATIONS.format(messages="\n".join(lines))
        raw = call_json(llm, prompt, usage, "entity-relations")
        items = _items(raw)
        if items is None:
            if raw is not None:  # parsed, but not the shape asked for (call_json counted the rest)
                usage.malformed += 1
            log.warning(
                "sgmem: the LLM's relation answer for %d turns was unusable (%s); they are stored without "
                "relation edges",
                hi - lo,
                "no JSON or the model failed" if raw is None else f"unexpected shape: {str(raw)[:200]!r}",
            )
            continue
        got, dropped = _triples(items, lo, hi, messages, per_msg, sentence_of)
        if items and not got:
            usage.malformed += 1
            log.warning("sgmem: none of the LLM's %d relations could be used (first: %r)", len(items), items[0])
        elif dropped:
            log.debug("sgmem: %d of the LLM's relations were dropped (endpoint not in the turn, or bad)", dropped)
        out.extend(got)
    return out


def _triples(
    items: list[Any],
    lo: int,
    hi: int,
    messages: Sequence[Any],
    per_msg: list[list[Mention]],
    sentence_of: Callable[[int, int], int],
) -> tuple[list[Triple], int]:
    """The usable triples among the model's ``items`` and how many were dropped."""
    out: list[Triple] = []
    seen: set[tuple[int, str, str, str]] = set()
    per_turn: dict[int, int] = {}
    dropped = 0
    for it in items:
        mi = _message_index(it.get("message"), lo, hi) if isinstance(it, dict) else None
        phrase = clean_phrase(it.get("relation")) if isinstance(it, dict) else None
        if mi is None or phrase is None or per_turn.get(mi, 0) >= MAX_PER_TURN:
            dropped += 1
            continue
        head = _endpoint(it.get("head"), mi, messages, per_msg, sentence_of)
        tail = _endpoint(it.get("tail"), mi, messages, per_msg, sentence_of)
        if head is None or tail is None or head.norm == tail.norm:
            dropped += 1
            continue
        key = (mi, head.norm, phrase.casefold(), tail.norm)
        if key in seen:
            continue
        seen.add(key)
        per_turn[mi] = per_turn.get(mi, 0) + 1
        out.append(Triple(mi, head, phrase, tail))
    return out, dropped


def _endpoint(
    value: object,
    mi: int,
    messages: Sequence[Any],
    per_msg: list[list[Mention]],
    sentence_of: Callable[[int, int], int],
) -> Mention | None:
    """The mention of turn ``mi`` a relation endpoint names, surfacing it from the text if the rules missed it."""
    if not isinstance(value, str) or not value.strip():
        return None
    name = value.strip().strip("\"'“”‘’.,!?")
    norm = norm_name(name)
    if not norm:
        return None
    found = per_msg[mi]
    for x in found:
        if x.norm == norm:
            return x
    if norm in _SELF:
        return next((x for x in found if x.kind == "speaker"), None)
    from .write import MAX_NAME_CHARS

    text = messages[mi].content
    hit = re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", text, flags=re.IGNORECASE)
    if hit is None:
        return None  # the turn does not say it: never invented
    a, b = hit.span()
    for x in found:  # inside or around a name the rules found: that name
        if x.start >= 0 and x.start < b and a < x.end:
            return x
    words = norm.split()
    if len(name) > MAX_NAME_CHARS or len(words) > MAX_ENDPOINT_WORDS or all(w in STOPWORDS for w in words):
        return None
    x = Mention(text[a:b], a, b, "name", sentence=sentence_of(mi, a))
    x.cue = _cue_type(text, a, b)
    found.append(x)
    return x
