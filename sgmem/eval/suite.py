"""The small-memory chat suite: personal-assistant chats composed from a wording pool, with their questions.

:func:`generate_chats` composes ``n`` chats from a :class:`sgmem.eval.pool.Pool`, each seeded and deterministic:
10 to 120 turns over one to four sessions (threads on different days, stored as sgmem stores them,
``Memory.add(messages, scope=, thread=, at=)``), the user's messages carrying the user's name in some chats,
the assistant's only their role. Each chat holds a few facts of distinct kinds, each told in its form:

* an ``update``'s earlier value (``before``) in an earlier session than the new one;
* an ``asked_before`` pair (the user's question, the assistant's non-answer) mostly before the fact is told,
  sometimes after;
* an ``agent_asked`` pair (the assistant's question, the user's non-answer) anywhere;

then noise episodes and filler between them, sometimes a long text the user pastes (some of them
lengthened to about :data:`LONG_PASTE_CHARS` with sections of the pool's other texts around it).

Each chat carries its :class:`Probe` s, asked after its last turn: one paraphrase per fact (the paraphrases
are cycled across seeds and chats), every question of its long text, and 2–3 questions of kinds the chat does
not hold (kind ``"general"`` is always allowed) whose right answer is nothing.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from .pool import Fact, LongText, Pool

__all__ = ["FOLDS", "LONG_PASTE_CHARS", "Chat", "Probe", "fold_of", "generate_chats"]

#: question folds (:func:`fold_of`)
FOLDS = 5
#: the length a lengthened paste is brought to (characters)
LONG_PASTE_CHARS = 45_000
_MIN_TURNS, _MAX_TURNS = 10, 120


def fold_of(key: str, folds: int = FOLDS) -> int:
    """The fold of a question or chat id: a hash of it, stable across runs and machines."""
    return int(hashlib.blake2b(key.encode("utf-8"), digest_size=8).hexdigest(), 16) % folds


@dataclass(frozen=True)
class Probe:
    """One question asked of one chat, with what answers it.

    Attributes:
        id: unique within the run.
        text: the question.
        now: when it is asked (after the chat; ``now=`` of the search).
        answer_ids: the message ids whose turn answers it (any one counts); empty: nothing does.
        answer: a string the answer turn holds verbatim, which a context must show; ``None``: not checked.
        groups: the categories it counts in (``"form: update"``, ``"about: assistant"``, ``"lang: other"``…).
        kind: the fact kind it asks about.
    """

    id: str
    text: str
    now: datetime
    answer_ids: tuple[str, ...]
    answer: str | None
    groups: tuple[str, ...]
    kind: str = ""

    @property
    def unrelated(self) -> bool:
        """Nothing in the chat answers it."""
        return not self.answer_ids


@dataclass
class Chat:
    """One memory to evaluate: its sessions (``(thread, at, messages)``) and the probes asked of it."""

    id: str
    sessions: list[tuple[str, datetime, list[dict[str, Any]]]]
    probes: list[Probe]
    fold: int = 0
    #: the fact kinds the chat holds
    kinds: frozenset[str] = field(default_factory=frozenset)

    def messages(self) -> Iterator[tuple[str, datetime, dict[str, Any]]]:
        """Every message with its thread and its session's date, in order."""
        for thread, at, msgs in self.sessions:
            for m in msgs:
                yield thread, at, m

    @property
    def n_turns(self) -> int:
        return sum(len(m) for _, _, m in self.sessions)


@dataclass
class _Unit:
    """One episode placed on the chat's timeline: its session and place in it, and the turns."""

    session: int
    pos: float
    turns: list[dict[str, str]]
    #: turn index inside ``turns`` -> the probe keys it answers (filled with message ids later)
    marks: dict[int, list[str]] = field(default_factory=dict)


class _Deck:
    """Items dealt in a seeded shuffled order, reshuffled each round (every item comes up once a round)."""

    def __init__(self, items: Sequence[Any], seed: str) -> None:
        self.items, self.seed, self.round, self.order = list(items), seed, 0, []  # type: ignore[var-annotated]

    def draw(self) -> Any:
        if not self.order:
            self.order = list(range(len(self.items)))
            random.Random(f"{self.seed}:{self.round}").shuffle(self.order)
            self.round += 1
        return self.items[self.order.pop()]


def _sections(text: str) -> list[str]:
    return [s for s in text.split("\n\n") if s.strip()]


def _paste(long: LongText, pool: Pool, rng: random.Random, lengthen: bool) -> str:
    """What the user pastes: the intro and the text; lengthened, other texts' sections before and after it."""
    body = long.text
    if lengthen:
        others = [s for t in pool.long_texts if t.id != long.id for s in _sections(t.text)] or _sections(long.text)
        before: list[str] = []
        after: list[str] = []
        size = len(body)
        share = rng.uniform(0.2, 0.8)  # how much of the added text goes before the pasted one
        while size < LONG_PASTE_CHARS:
            s = rng.choice(others)
            (before if sum(map(len, before)) < share * (LONG_PASTE_CHARS - len(body)) else after).append(s)
            size += len(s) + 2
        body = "\n\n".join([*before, body, *after])
    return f"{long.intro}\n\n{body}" if long.intro else body


def _filler_pair(pool: Pool, rng: random.Random) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": rng.choice(pool.filler_user)},
        {"role": "assistant", "content": rng.choice(pool.filler_assistant)},
    ]


def _episode(turns: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    return [{"role": t["role"], "content": t["content"]} for t in turns]


def _place_facts(facts: list[Fact], n_sessions: int, rng: random.Random, units: list[_Unit]) -> list[dict[str, Any]]:
    """Put each fact's episodes on the timeline; the facts' probe records (``key`` marks the answer turn)."""
    records = []
    for f in facts:
        if f.form == "update" and f.before and n_sessions > 1:
            s_before = rng.randrange(0, n_sessions - 1)
            s_fact = rng.randrange(s_before + 1, n_sessions)
            units.append(_Unit(s_before, rng.random(), _episode(f.before)))
        else:
            s_fact = rng.randrange(n_sessions)
        pos = rng.uniform(0.05, 0.95)
        key = f"fact:{f.id}"
        units.append(_Unit(s_fact, pos, _episode(f.turns), {f.answer_turn: [key]}))
        asked = bool(f.asked_before) and rng.random() < 0.6
        if asked:
            pair = rng.choice(f.asked_before)
            ep = [{"role": "user", "content": pair["user"]}, {"role": "assistant", "content": pair["assistant"]}]
            if rng.random() < 0.8:  # asked before the fact was told (the usual case)
                s = rng.randint(0, s_fact)
                units.append(_Unit(s, rng.uniform(0, pos) if s == s_fact else rng.random(), ep))
            else:
                s = rng.randint(s_fact, n_sessions - 1)
                units.append(_Unit(s, rng.uniform(pos, 1) if s == s_fact else rng.random(), ep))
        if f.agent_asked and rng.random() < 0.6:
            pair = rng.choice(f.agent_asked)
            ep = [{"role": "assistant", "content": pair["assistant"]}, {"role": "user", "content": pair["user"]}]
            units.append(_Unit(rng.randrange(n_sessions), rng.random(), ep))
        records.append({"fact": f, "key": key, "asked_before": asked})
    return records


def _compose(pool: Pool, index: int, seed: int, facts_deck: _Deck, uses: dict[str, int], unrelated_deck: _Deck) -> Chat:
    chat_id = f"s{seed}-c{index:04d}"
    rng = random.Random(f"sgmem-small:{seed}:{index}")
    target = rng.randint(_MIN_TURNS, _MAX_TURNS)
    n_facts = rng.randint(2, 3) if target < 30 else rng.randint(3, 5)
    facts: list[Fact] = []
    tries = 0
    while len(facts) < n_facts and tries < 10 * len(pool.facts):
        f = facts_deck.draw()
        tries += 1
        if f.kind not in {g.kind for g in facts}:
            facts.append(f)
    n_sessions = rng.randint(1, 4)
    if any(f.form == "update" for f in facts):
        n_sessions = max(2, n_sessions)
    units: list[_Unit] = []
    records = _place_facts(facts, n_sessions, rng, units)
    long: LongText | None = None
    lengthened = False
    if pool.long_texts and rng.random() < 0.3:
        long = rng.choice(pool.long_texts)
        lengthened = rng.random() < 0.4
        reply = {"role": "assistant", "content": rng.choice(pool.filler_assistant)}
        paste = {"role": "user", "content": _paste(long, pool, rng, lengthened)}
        units.append(_Unit(rng.randrange(n_sessions), rng.random(), [paste, reply], {0: [f"long:{long.id}"]}))
    for s in range(n_sessions):  # most sessions open with a greeting
        if rng.random() < 0.7:
            units.append(_Unit(s, -1.0, _filler_pair(pool, rng)))
    noise = _Deck(pool.noise, f"{chat_id}:noise")
    size = sum(len(u.turns) for u in units)
    while size < target:
        turns = _episode(noise.draw()) if rng.random() < 0.6 else _filler_pair(pool, rng)
        if size + len(turns) > _MAX_TURNS:
            turns = _filler_pair(pool, rng)
            if size + len(turns) > _MAX_TURNS:
                break
        units.append(_Unit(rng.randrange(n_sessions), rng.random(), turns))
        size += len(turns)
    units.sort(key=lambda u: (u.session, u.pos))
    named = rng.random() < 0.5
    user = rng.choice(pool.users)
    start = datetime(2024, 1, 8, tzinfo=timezone.utc) + timedelta(days=rng.randint(0, 540))
    sessions: list[tuple[str, datetime, list[dict[str, Any]]]] = []
    marks: dict[str, str] = {}
    at = start
    n = 0
    for s in range(n_sessions):
        at = (at if s == 0 else at + timedelta(days=rng.randint(1, 20))).replace(
            hour=rng.randint(7, 21), minute=rng.randint(0, 59)
        )
        msgs: list[dict[str, Any]] = []
        clock = at
        for u in (u for u in units if u.session == s):
            for i, t in enumerate(u.turns):
                m: dict[str, Any] = {"id": f"{chat_id}-m{n:03d}", "role": t["role"], "content": t["content"]}
                m["at"] = clock
                if named and t["role"] == "user":
                    m["name"] = user
                for key in u.marks.get(i, []):
                    marks[key] = m["id"]
                msgs.append(m)
                n += 1
                clock += timedelta(seconds=rng.randint(20, 240))
        if msgs:
            sessions.append((f"chat-{s + 1}", at, msgs))
        at = clock
    asked_at = at + timedelta(days=rng.randint(1, 30), hours=rng.randint(0, 12))
    probes: list[Probe] = []
    for rec in records:
        f = rec["fact"]
        q_index = (seed + uses.get(f.id, 0)) % len(f.questions)
        uses[f.id] = uses.get(f.id, 0) + 1
        groups = [f"form: {f.form}", f"about: {f.about}", "lang: en" if f.lang == "en" else "lang: other"]
        if rec["asked_before"]:
            groups.append("asked before, unanswered")
        if f.form == "foreign" and q_index == len(f.questions) - 1 and len(f.questions) > 1:
            groups.append("asked in the fact's language")
        probes.append(
            Probe(
                f"{chat_id}/{f.id}", f.questions[q_index], asked_at, (marks[rec["key"]],), f.answer, tuple(groups),
                f.kind,
            )
        )  # fmt: skip
    if long is not None:
        tags = ("form: long text", "about: user", "lang: en") + (("pasted ~45,000 characters",) if lengthened else ())
        for j, (question, answer) in enumerate(long.questions):
            pid = f"{chat_id}/{long.id}#{j}"
            probes.append(Probe(pid, question, asked_at, (marks[f"long:{long.id}"],), answer, tags, "long text"))
    kinds = frozenset(f.kind for f in facts)
    wanted = rng.randint(2, 3)
    taken: list[tuple[str, str]] = []
    for _ in range(10 * len(pool.unrelated)):
        if len(taken) >= wanted:
            break
        kind, question = unrelated_deck.draw()
        if (kind == "general" or kind not in kinds) and (kind, question) not in taken:
            taken.append((kind, question))
    for j, (kind, question) in enumerate(taken):
        group = "form: unrelated, general" if kind == "general" else "form: unrelated, about the user"
        probes.append(Probe(f"{chat_id}/unrelated#{j}", question, asked_at, (), None, (group,), kind))
    return Chat(chat_id, sessions, probes, fold_of(chat_id), kinds)


def generate_chats(pool: Pool, n: int, seed: int = 0) -> list[Chat]:
    """``n`` chats composed from ``pool`` (the same ``pool``, ``n`` and ``seed`` give the same chats).

    The facts are dealt from a deck reshuffled each round, so every fact is told once before any is told
    twice; a fact's paraphrase is its next one at each use, starting at ``seed``.
    """
    facts_deck = _Deck(pool.facts, f"{seed}:facts")
    unrelated_deck = _Deck(pool.unrelated, f"{seed}:unrelated")
    uses: dict[str, int] = {}
    return [_compose(pool, i, seed, facts_deck, uses, unrelated_deck) for i in range(n)]
