"""Wording pools for the small-memory chat suite: reading and checking one pool file.

A pool (its format: the suite's SPEC, summarised in :func:`check_pool`) holds the wordings the generator in
:mod:`sgmem.eval.suite` composes chats from: users' names, facts told in one of five forms (``statement``,
``short_reply``, ``update``, ``assistant``, ``foreign``) with the questions that ask for them, noise episodes,
filler one-liners, long pasted texts with their questions, and questions about kinds of facts a chat does not
hold. Two pools are packaged: ``build`` (the part ranking work may look at) and ``report`` (written
independently, used only for the reported figure); :func:`pool_path` finds them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError

__all__ = [
    "FORMS",
    "POOL_NAMES",
    "Fact",
    "LongText",
    "Pool",
    "check_pool",
    "load_pool",
    "packaged_pool",
    "pool_path",
]

#: the forms a fact is told in
FORMS = ("statement", "short_reply", "update", "assistant", "foreign")
#: the pools packaged under ``sgmem/data/`` (``small_pool_<name>.json``)
POOL_NAMES = ("build", "report")
_DATA = Path(__file__).resolve().parent.parent / "data"
#: a development checkout's own small pool, used when a packaged pool is absent
_TEST_POOL = Path(__file__).resolve().parents[2] / "tests" / "data" / "small_pool.json"


@dataclass(frozen=True)
class Fact:
    """One fact of a pool: the episode that tells it and the questions that ask for it.

    ``turns`` and ``before`` are lists of ``{"role", "content"}``; ``before`` (updates only) is the earlier
    episode holding the old value at ``before_turn``.
    """

    id: str
    kind: str
    about: str
    form: str
    lang: str
    turns: tuple[dict[str, str], ...]
    answer_turn: int
    answer: str
    questions: tuple[str, ...]
    before: tuple[dict[str, str], ...] = ()
    before_turn: int = -1
    before_answer: str = ""
    #: the user's earlier questions and the assistant's non-answers: ``{"user", "assistant"}``
    asked_before: tuple[dict[str, str], ...] = ()
    #: the assistant's questions the user left unanswered: ``{"assistant", "user"}``
    agent_asked: tuple[dict[str, str], ...] = ()


@dataclass(frozen=True)
class LongText:
    """A long text a user pastes, with questions about details inside it: ``(question, answer)`` pairs."""

    id: str
    intro: str
    text: str
    questions: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Pool:
    """A checked wording pool."""

    name: str
    about: str
    users: tuple[str, ...]
    facts: tuple[Fact, ...]
    noise: tuple[tuple[dict[str, str], ...], ...]
    filler_user: tuple[str, ...]
    filler_assistant: tuple[str, ...]
    long_texts: tuple[LongText, ...]
    #: ``(kind, question)``
    unrelated: tuple[tuple[str, str], ...]
    #: the file's SHA-256 (first 12 hex digits): which pool a figure was measured on
    sha: str = ""
    #: the file it was read from (its name)
    source: str = ""
    #: items left out by ``load_pool(strict=False)``, each with why
    dropped: tuple[str, ...] = field(default=())


def packaged_pool(name: str) -> Path | None:
    """The packaged file of pool ``name`` (``"build"`` or ``"report"``), or None when it is not in this checkout."""
    path = _DATA / f"small_pool_{name}.json"
    return path if name in POOL_NAMES and path.is_file() else None


def pool_path(name: str) -> Path:
    """The file of a pool: ``"build"`` or ``"report"`` (packaged), or a path to a pool file.

    A packaged pool not yet in this checkout falls back to the development checkout's own small test pool
    (``tests/data/small_pool.json``), so the harness runs before the measurement pools are copied in.
    """
    if name in POOL_NAMES:
        packaged = packaged_pool(name)
        if packaged is not None:
            return packaged
        if _TEST_POOL.is_file():
            return _TEST_POOL
        raise InvalidInputError(
            "pool", name, f"a pool file: copy it to {_DATA / f'small_pool_{name}.json'}, or pass its path"
        )
    path = Path(name).expanduser()
    if not path.is_file():
        raise InvalidInputError("pool", name, f"one of {POOL_NAMES} or the path of an existing pool JSON file")
    return path


def _turns(raw: Any, where: str, problems: list[str]) -> tuple[dict[str, str], ...]:
    if not isinstance(raw, list) or not raw:
        problems.append(f"{where}: expected a non-empty list of turns")
        return ()
    out = []
    for i, t in enumerate(raw):
        if (
            not isinstance(t, dict)
            or t.get("role") not in ("user", "assistant")
            or not isinstance(t.get("content"), str)
            or not t["content"].strip()
        ):
            problems.append(f"{where}[{i}]: expected {{'role': 'user'|'assistant', 'content': non-empty text}}")
            continue
        out.append({"role": t["role"], "content": t["content"]})
    return tuple(out) if len(out) == len(raw) else ()


def _answer_in(turns: tuple[dict[str, str], ...], at: Any, answer: Any, where: str, problems: list[str]) -> bool:
    if not isinstance(at, int) or not 0 <= at < len(turns):
        problems.append(f"{where}: answer turn {at!r} is not an index of its {len(turns)} turns")
        return False
    if not isinstance(answer, str) or not answer or answer not in turns[at]["content"]:
        problems.append(f"{where}: answer {answer!r} is not verbatim in turn {at}")
        return False
    return True


def _fact(raw: Any, n: int, problems: list[str]) -> Fact | None:
    where = f"facts[{n}] ({raw.get('id') if isinstance(raw, dict) else '?'})"
    before_problems = len(problems)
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected an object")
        return None
    form = raw.get("form")
    if form not in FORMS:
        problems.append(f"{where}: form {form!r} is not one of {FORMS}")
    for key in ("id", "kind"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            problems.append(f"{where}: '{key}' must be a non-empty string")
    turns = _turns(raw.get("turns"), f"{where}.turns", problems)
    if turns:
        _answer_in(turns, raw.get("answer_turn"), raw.get("answer"), where, problems)
    qs = raw.get("questions")
    if not isinstance(qs, list) or not qs or not all(isinstance(q, str) and q.strip() for q in qs):
        problems.append(f"{where}: 'questions' must be a non-empty list of texts")
    before: tuple[dict[str, str], ...] = ()
    b_turn: Any = -1
    b_answer: Any = ""
    if form == "update":
        b = raw.get("before")
        if isinstance(b, dict):  # the earlier episode as an object of its own
            b_turn = b.get("before_answer_turn", b.get("answer_turn"))
            b_answer = b.get("before_answer", b.get("answer"))
            b = b.get("turns")
        else:
            b_turn, b_answer = raw.get("before_answer_turn"), raw.get("before_answer")
        before = _turns(b, f"{where}.before", problems)
        if before:
            _answer_in(before, b_turn, b_answer, f"{where}.before", problems)
    pairs: dict[str, tuple[dict[str, str], ...]] = {}
    for key, first, second in (("asked_before", "user", "assistant"), ("agent_asked", "assistant", "user")):
        items = raw.get(key) or []
        ok = isinstance(items, list) and all(
            isinstance(p, dict) and all(isinstance(p.get(r), str) and p[r].strip() for r in (first, second))
            for p in items
        )
        if not ok:
            problems.append(f"{where}: '{key}' must be a list of {{'{first}', '{second}'}} texts")
        pairs[key] = tuple({first: p[first], second: p[second]} for p in items) if ok else ()
    if len(problems) > before_problems:
        return None
    return Fact(
        id=raw["id"],
        kind=raw["kind"],
        about="assistant" if raw.get("about") == "assistant" or form == "assistant" else "user",
        form=str(form),
        lang=str(raw.get("lang") or "en"),
        turns=turns,
        answer_turn=raw["answer_turn"],
        answer=raw["answer"],
        questions=tuple(qs or ()),
        before=before,
        before_turn=b_turn if before else -1,
        before_answer=b_answer if before else "",
        asked_before=pairs["asked_before"],
        agent_asked=pairs["agent_asked"],
    )


def _long(raw: Any, n: int, problems: list[str]) -> LongText | None:
    where = f"long_texts[{n}]"
    if not isinstance(raw, dict) or not isinstance(raw.get("text"), str) or not raw["text"].strip():
        problems.append(f"{where}: expected an object with a non-empty 'text'")
        return None
    qs = []
    for i, q in enumerate(raw.get("questions") or []):
        if not isinstance(q, dict) or not isinstance(q.get("question"), str) or not isinstance(q.get("answer"), str):
            problems.append(f"{where}.questions[{i}]: expected {{'question', 'answer'}} texts")
        elif not q["answer"] or q["answer"] not in raw["text"]:
            problems.append(f"{where}.questions[{i}]: answer {q['answer']!r} is not verbatim in the text")
        else:
            qs.append((q["question"], q["answer"]))
    if not qs:
        problems.append(f"{where}: no usable question")
        return None
    return LongText(str(raw.get("id") or f"long-{n}"), str(raw.get("intro") or ""), raw["text"], tuple(qs))


def check_pool(data: Any, name: str = "pool", sha: str = "", strict: bool = True) -> Pool:
    """A :class:`Pool` from a pool file's JSON.

    The format: ``users`` (names), ``facts`` (``id``, ``kind``, ``about``, ``form``, ``lang``, ``turns``,
    ``answer_turn``, ``answer`` verbatim inside that turn, ``questions``; an ``update`` also ``before`` with
    ``before_answer_turn`` and ``before_answer``; optional ``asked_before`` and ``agent_asked``), ``noise``
    (``{"turns": [...]}``), ``filler`` (``{"user": [...], "assistant": [...]}``), ``long_texts`` (``intro``,
    ``text``, ``questions`` with answers verbatim in the text) and ``unrelated`` (``{"kind", "question"}``).

    Raises:
        InvalidInputError: the file is not such a pool; with ``strict`` (the default) also when any one item is
            malformed (every problem is listed); without it, malformed items are left out and listed in
            :attr:`Pool.dropped`.
    """
    if not isinstance(data, dict):
        raise InvalidInputError(name, type(data).__name__, "a JSON object with the pool's top-level keys")
    problems: list[str] = []
    facts = [f for n, raw in enumerate(data.get("facts") or []) if (f := _fact(raw, n, problems)) is not None]
    longs = [t for n, raw in enumerate(data.get("long_texts") or []) if (t := _long(raw, n, problems)) is not None]
    noise = []
    for n, ep in enumerate(data.get("noise") or []):
        turns = _turns(ep.get("turns") if isinstance(ep, dict) else ep, f"noise[{n}]", problems)
        if turns:
            noise.append(turns)
    filler = data.get("filler") or {}
    fu = [s for s in filler.get("user", []) if isinstance(s, str) and s.strip()]
    fa = [s for s in filler.get("assistant", []) if isinstance(s, str) and s.strip()]
    unrelated = []
    for n, u in enumerate(data.get("unrelated") or []):
        if isinstance(u, dict) and isinstance(u.get("kind"), str) and isinstance(u.get("question"), str):
            unrelated.append((u["kind"], u["question"]))
        else:
            problems.append(f"unrelated[{n}]: expected {{'kind', 'question'}} texts")
    users = [u for u in data.get("users") or [] if isinstance(u, str) and u.strip()]
    ids = [f.id for f in facts]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        problems.append(f"fact ids used twice: {dup[:10]}")
        seen: set[str] = set()
        facts = [f for f in facts if not (f.id in seen or seen.add(f.id))]  # type: ignore[func-returns-value]
    missing = [
        what
        for what, ok in (
            ("facts", facts),
            ("users", users),
            ("filler.user", fu),
            ("filler.assistant", fa),
            ("noise", noise),
            ("unrelated", unrelated),
        )
        if not ok
    ]
    if missing:
        raise InvalidInputError(name, f"no usable {', '.join(missing)}", "a pool in the suite's format (see SPEC)")
    if problems and strict:
        shown = "; ".join(problems[:12]) + (f"; and {len(problems) - 12} more" if len(problems) > 12 else "")
        raise InvalidInputError(
            name,
            f"{len(problems)} malformed item(s)",
            "every item well-formed as the suite's format says",
            f"Fix them, or load the pool with strict=False to leave them out: {shown}",
        )
    return Pool(
        name=name,
        about=str(data.get("about") or ""),
        users=tuple(users),
        facts=tuple(facts),
        noise=tuple(noise),
        filler_user=tuple(fu),
        filler_assistant=tuple(fa),
        long_texts=tuple(longs),
        unrelated=tuple(unrelated),
        sha=sha,
        dropped=tuple(problems),
    )


def load_pool(name_or_path: str | Path, strict: bool = True) -> Pool:
    """Read and check a pool: ``"build"``, ``"report"`` (see :func:`pool_path`) or a file's path."""
    path = pool_path(str(name_or_path))
    raw = path.read_bytes()
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError("pool", str(path), f"a UTF-8 JSON file ({exc})") from exc
    label = str(name_or_path) if str(name_or_path) in POOL_NAMES else path.stem
    pool = check_pool(data, label, hashlib.sha256(raw).hexdigest()[:12], strict)
    return dataclasses.replace(pool, source=path.name)
