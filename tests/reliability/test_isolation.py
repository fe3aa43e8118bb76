"""Isolation: one scope's data is never returned, counted, ranked against or deleted by another.

The strongest check is a twin store: a scope that shares its store with noisy neighbours must
behave exactly as if it were alone — same stats, same hits, same scores, in every mode
(including modes added later: the tests iterate ``sgmem.MODES``). Any statistic leaking
across scopes (IDF, graph edges, keyword vocabularies, gate state) breaks the equality.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import sgmem

from .conftest import record_figure
from .helpers import ENTITIES, FastEmbedder

T0 = datetime(2024, 2, 1, 9, tzinfo=timezone.utc)

MINE = [
    ("user", "I planted tomatoes and basil in the garden this spring."),
    ("assistant", "Lovely! Tomatoes need plenty of sun and regular water."),
    ("user", "My sister Dana visits in June; she loves the basil pesto."),
    ("assistant", "Pesto from your own basil sounds perfect for Dana's visit."),
    ("user", "The marathon in Berlin is in September, I run sixty kilometres a week."),
    ("assistant", "Sixty kilometres a week is a solid base for Berlin."),
]
THEIRS = [
    ("user", "Tomatoes tomatoes tomatoes: my greenhouse tomatoes got blight."),
    ("assistant", "Blight on tomatoes spreads fast; remove the leaves."),
    ("user", "Berlin Berlin marathon sixty kilometres, September, Dana, basil, pesto, garden."),
    ("user", "Completely private: my bank PIN is hidden-neighbour-secret-9931."),
]
QUERIES = [
    "What did I plant in the garden?",
    "When does Dana visit?",
    "Berlin marathon training volume",
    "tomatoes blight greenhouse",
    "hidden-neighbour-secret-9931",
]


def _add(mem: sgmem.Memory, scope: str, turns: list[tuple[str, str]], thread: str) -> list[sgmem.AddResult]:
    out = []
    for i, (role, content) in enumerate(turns):
        out.append(
            mem.add(
                {"role": role, "content": content, "id": f"{thread}-{i}", "at": T0 + timedelta(hours=i)},
                scope=scope,
                thread=thread,
            )
        )
    return out


def _outcome(r: sgmem.AddResult) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(r).items() if k not in ("timings_ms", "llm_ms")}


def _fingerprint(mem: sgmem.Memory, scope: str) -> dict[str, Any]:
    out: dict[str, Any] = {"stats": mem.stats(scope).scopes, "threads": mem.threads(scope=scope)}
    for mode in sgmem.MODES:
        for q in QUERIES:
            out[f"{mode}:{q}"] = [
                (h.message_ids, round(h.score, 6), h.text, h.kind) for h in mem.search(q, scope=scope, k=5, mode=mode)
            ]
        out[f"context:{mode}"] = mem.context(QUERIES[0], scope=scope, budget_tokens=120, mode=mode)
    return out


@pytest.mark.parametrize("neighbour_first", [True, False], ids=["neighbour-first", "neighbour-after"])
def test_a_scope_behaves_exactly_as_if_it_were_alone(neighbour_first: bool) -> None:
    emb = FastEmbedder()
    with sgmem.Memory(embedder=emb, config=ENTITIES) as alone, sgmem.Memory(embedder=emb, config=ENTITIES) as shared:
        solo_results = _add(alone, "me", MINE, "chat")
        if neighbour_first:
            _add(shared, "them", THEIRS, "chat")
            _add(shared, "me\u200b", THEIRS, "chat")  # a look-alike scope name
        shared_results = _add(shared, "me", MINE, "chat")
        if not neighbour_first:
            _add(shared, "them", THEIRS, "chat")
            _add(shared, "me\u200b", THEIRS, "chat")
        # everything an add reports (stored counts, gate decisions, derived records) but its timings
        assert [_outcome(r) for r in shared_results] == [_outcome(r) for r in solo_results]
        assert _fingerprint(shared, "me") == _fingerprint(alone, "me")
        # and the neighbours' words never come back, whatever the query
        for mode in sgmem.MODES:
            for q in QUERIES:
                for h in shared.search(q, scope="me", k=20, mode=mode):
                    assert "secret-9931" not in h.text and "blight" not in h.text
        # the same caller ids live in both scopes: each scope gets its own
        assert [m.content for m in shared.get(scope="them", message_ids=["chat-0"])] == [THEIRS[0][1]]
        assert [m.content for m in shared.get(scope="me", message_ids=["chat-0"])] == [MINE[0][1]]
        # deleting the neighbour changes nothing for me
        before = _fingerprint(shared, "me")
        shared.delete(scope="them")
        shared.delete(scope="me\u200b", thread="chat")
        assert _fingerprint(shared, "me") == before


TRICKY = [
    "'",
    '"',
    "%",
    "_",
    "a%",
    "a_",
    "%_%",
    "/",
    "a/b",
    "../../etc/passwd",
    "C:\\Users\\x",
    "\\",
    "x'; DROP TABLE messages; --",
    "Robert'); DELETE FROM scopes;--",
    "1 OR 1=1",
    '" OR ""="',
    "*",
    "?",
    "[a-z]",
    "NULL",
    "null",
    "None",
    "0",
    "-1",
    "élève",
    unicodedata.normalize("NFD", "élève"),
    "用户",
    "🙂",
    "مرحبا",
    "a\u200bb",
    " padded ",
    "\u202eevil",
    "a" * 512,
    "scope-1",
    "scope-1 ",
    "SCOPE-1",
]


def test_tricky_names_are_stored_verbatim_and_never_mix() -> None:
    with sgmem.Memory(embedder=FastEmbedder(), config=ENTITIES) as mem:
        for i, name in enumerate(TRICKY):
            mem.add(
                [
                    {"role": "user", "content": f"Owner {i} keeps the word marker{i}q here.", "id": name},
                    {"role": "assistant", "content": f"Shared reply number {i}."},
                ],
                scope=name,
                thread=name,
            )
        assert sorted(mem.scopes()) == sorted(TRICKY)
        assert len(mem.stats().scopes) == len(TRICKY)
        for i, name in enumerate(TRICKY):
            assert mem.threads(scope=name) == [name]
            replay = mem.messages(scope=name, thread=name)
            assert [m.id for m in replay][:1] == [name] and replay[0].thread == name
            assert replay[0].content == f"Owner {i} keeps the word marker{i}q here."
            for mode in sgmem.MODES:
                for h in mem.search("keeps the word marker", scope=name, k=10, mode=mode):
                    assert h.thread == name and f"marker{i}q" in h.text or "Shared reply" in h.text
                    assert not any(f"marker{j}q" in h.text for j in range(len(TRICKY)) if j != i)
        # deleting by each tricky name removes exactly that scope
        for i, name in enumerate(TRICKY):
            assert mem.delete(scope=name, message_ids=[name]).messages == 1
            assert mem.delete(scope=name, thread=name).messages == 1
            assert name not in mem.scopes()
            assert len(mem.scopes()) == len(TRICKY) - i - 1


# names are written by these tests, and a written name has no control characters or line breaks (a line break
# would start a line of its own in a context block); reads and deletes of such names are tested below
_names = st.text(
    st.characters(codec="utf-8", exclude_characters="\x00", exclude_categories=("Cc", "Zl", "Zp")),
    min_size=1,
    max_size=40,
).filter(lambda s: s.strip() != "")
_examples = {"isolation: distinct scope names": 0}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=_names, b=_names)
def test_any_two_distinct_scope_names_stay_apart(a: str, b: str) -> None:
    assume(a != b)
    _examples["isolation: distinct scope names"] += 1
    with sgmem.Memory(embedder=FastEmbedder(), config=ENTITIES) as mem:
        mem.add({"role": "user", "content": "alpha apples in the orchard", "id": b}, scope=a, thread=b)
        mem.add({"role": "user", "content": "beta bananas in the market", "id": a}, scope=b, thread=a)
        assert sorted(mem.scopes()) == sorted([a, b])
        assert [(m.id, m.thread, m.content) for m in mem.messages(scope=a)] == [(b, b, "alpha apples in the orchard")]
        for mode in sgmem.MODES:
            assert {i for h in mem.search("bananas market", scope=a, mode=mode) for i in h.message_ids} <= {b}
        assert mem.delete(scope=a).messages == 1
        assert [m.content for m in mem.messages(scope=b)] == ["beta bananas in the market"]


@pytest.mark.parametrize("name", ["tab\tname", "new\nline", "bell\x07", "para\u2029graph"])
def test_a_name_with_control_characters_is_refused_for_writes_but_reads_and_forgets(name: str) -> None:
    """A store written before names were checked may hold such a name: it can still be read and forgotten by it."""
    with sgmem.Memory(embedder=FastEmbedder()) as mem:
        mem.add({"role": "user", "content": "alpha apples in the orchard"}, scope="plain", thread="t")
        with pytest.raises(sgmem.InvalidInputError, match="control characters"):
            mem.add({"role": "user", "content": "beta bananas"}, scope=name, thread="t")
        with pytest.raises(sgmem.InvalidInputError, match="control characters"):
            mem.add({"role": "user", "content": "beta bananas"}, scope="plain", thread=name)
        assert sorted(mem.scopes()) == ["plain"]
        assert mem.messages(scope=name) == [] and mem.search("apples", scope=name) == []
        assert mem.messages(scope="plain", thread=name) == []
        assert mem.delete(scope=name).messages == 0
        assert mem.delete(scope="plain", thread=name).messages == 0
        assert [m.content for m in mem.messages(scope="plain")] == ["alpha apples in the orchard"]


def test_zz_record_isolation_examples() -> None:
    record_figure("hypothesis examples: isolation (two scope names)", _examples["isolation: distinct scope names"])
