"""A message's neighbourhood in the sentence graph: :meth:`Memory.neighbours <sgmem.Memory.neighbours>`.

A mixin, like :mod:`sgmem.records`. It reads the scope's retrieval index the
way a search does (under the Memory's lock, rebuilt when the store moved on)
and changes nothing: for each sentence of one message, the sentences it is
linked to and why — the similarity edges graph expansion follows
(:mod:`sgmem.retrieval.graph`), the thread's chronological chain of turns
(SGRM, ``ScopeIndex.prev_row``/``next_row``) and the next sentence of the
same turn. Inspectors (``sgmem ui``'s graph page) draw it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import NotFoundError
from .gate.blas import single_thread_blas
from .retrieval.index import ScopeIndex
from .types import SentenceLink
from .validate import check_int, check_name

__all__ = ["NeighbourMethods"]

#: One link in index rows: (own sentence row, linked sentence row, kind, direction).
_Edge = tuple[int, int, str, str | None]


def _edges(idx: ScopeIndex, turn: int, limit: int) -> list[_Edge]:
    """The links of turn ``turn``'s sentences, in sentence order: for each, its similarity edges (the
    ``limit`` with the highest cosine), then its chronological and same-turn links."""
    own = idx.turn_sentences(turn)
    if not own:
        return []
    vecs = idx.sentence_vectors()
    prev, nxt = int(idx.prev_row[turn]), int(idx.next_row[turn])
    out: list[_Edge] = []
    for i, s in enumerate(own):
        linked = [t for t in dict.fromkeys(idx.adjacency[s]) if t != s]
        if linked:
            cos = vecs[linked] @ vecs[s]
            order = np.argsort(-cos, kind="stable")[:limit]
            out += [(s, linked[j], "similarity", None) for j in order.tolist()]
        if i == 0 and prev >= 0 and (before := idx.turn_sentences(prev)):
            out.append((s, before[-1], "chronological", "previous"))  # the chain joins last to first sentence
        if i + 1 < len(own):
            out.append((s, own[i + 1], "same turn", "next"))
        if i + 1 == len(own) and nxt >= 0 and (after := idx.turn_sentences(nxt)):
            out.append((s, after[0], "chronological", "next"))
    return out


class NeighbourMethods:
    """``neighbours`` for :class:`sgmem.Memory`."""

    def neighbours(self: Any, message_id: str, *, scope: str, limit: int = 20) -> list[SentenceLink]:
        """The sentences each sentence of a message is linked to in the scope's sentence graph, and why.

        Args:
            message_id: the message (an id from :attr:`Hit.message_ids` or :meth:`messages`).
            scope: the scope that holds it; other scopes are never read.
            limit: at most this many similarity links per sentence, the most
                similar first (chronological and same-turn links are at most
                three per sentence and always listed).

        Returns:
            One :class:`sgmem.SentenceLink` per link, in the message's sentence
            order: each sentence's similarity links (highest cosine first),
            then its chronological link to the previous turn (first sentence)
            or the next turn (last sentence) and its link to the next sentence
            of the message. Empty for a message with no sentences.

        Raises:
            NotFoundError: ``scope`` holds no message ``message_id`` (a message
                of another scope is not found either).
            InvalidInputError: a malformed argument.
        """
        self._check_open()
        limits = self.config.limits
        scope = check_name(scope, "scope", limits)
        message_id = check_name(message_id, "message_id", limits)
        limit = check_int(limit, "limit", 1, limits.max_k)
        with self._lock:
            scope_id = self._store.scope_id(scope)
            found = self._store.message_rows(scope_id, None, [message_id]) if scope_id is not None else set()
        missing = NotFoundError(
            f"scope {scope!r} holds no message {message_id!r}; take ids from Hit.message_ids or "
            f"Memory.messages(scope={scope!r})."
        )
        if not found:
            raise missing
        with self._lock, single_thread_blas():  # reads FAISS storage that a concurrent add may reallocate
            idx = self._index(scope_id)
            turn = idx.msg_row(min(found))
            if turn is None:  # deleted by another process between the two reads
                raise missing
            edges = _edges(idx, turn, limit)
            if not edges:
                return []
            rows = list(dict.fromkeys(r for a, b, _, _ in edges for r in (a, b)))
            texts = dict(zip(rows, idx.sentence_texts(rows), strict=True))
            vecs = idx.sentence_vectors()
            cosines = [float(vecs[a] @ vecs[b]) for a, b, _, _ in edges]
            owner = idx.array("sent_msg")
            first = idx.array("turn_first")
            sessions = idx.array("session_codes")
            details = self._store.message_details(
                idx.scope_id, [int(idx.msg_ids[int(owner[b])]) for _, b, _, _ in edges]
            )
            links: list[SentenceLink] = []
            for (a, b, kind, direction), cos in zip(edges, cosines, strict=True):
                t = int(owner[b])
                d = details.get(int(idx.msg_ids[t]))
                if d is None:  # its message was deleted meanwhile
                    continue
                links.append(
                    SentenceLink(
                        sentence=texts[a],
                        position=a - int(first[turn]),
                        kind=kind,
                        direction=direction,
                        cosine=cos,
                        text=texts[b],
                        message_id=d["ext_id"],
                        thread=d["thread"],
                        session=idx.sessions[t] or None,
                        speaker=d["speaker"],
                        at=d["at"],
                        same_session=bool(sessions[t] == sessions[turn]),
                    )
                )
        return links

    def _sentence_acts(self: Any, *, scope: str, thread: str) -> dict[str, dict[int, int]]:
        """The dialogue act ranking weighs each stored sentence of a thread by (:mod:`sgmem.text.acts`: as
        stored at ingest, resolved in its exchange), by message id and the sentence's position among the
        message's :func:`sgmem.text.segment.sentence_spans`; for inspectors (``sgmem ui``'s thread page)."""
        self._check_open()
        with self._lock:
            scope_id = self._store.scope_id(scope)
            rows = sorted(self._store.message_rows(scope_id, thread, None)) if scope_id is not None else []
            details = self._store.message_details(scope_id, rows) if rows else {}
        if not details:
            return {}
        with self._lock, single_thread_blas():
            idx = self._index(scope_id)
            acts = idx.sentence_acts()
            span = idx.array("sent_idx")
            out: dict[str, dict[int, int]] = {}
            for row, d in details.items():
                turn = idx.msg_row(row)
                if turn is not None:
                    out[d["ext_id"]] = {int(span[s]): int(acts[s]) for s in idx.turn_sentences(turn)}
        return out
