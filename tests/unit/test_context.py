"""Memory.context: a chronological, dated, speaker-labelled block within an exact token budget."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sgmem
from sgmem.context import ContextTurn, fit, render
from sgmem.text import count_tokens

from .helpers import CAT_THREAD, RUN_THREAD, add_sample

BUDGETS = [1, 5, 20, 35, 50, 200, 2000]
LINE = re.compile(r"^(?:(\d\d:\d\d) )?([^:]+): (.*)$")  # the time may be left out when unchanged
HEADER = re.compile(r"^\[(\d{4}-\d\d-\d\d) \(\w{3}\) · (.+)\]$")


@pytest.fixture(scope="module")
def mem(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    # no relevance cutoff: these tests are about the budget and the block's form, with every turn a candidate
    with sgmem.Memory(embedder=embedder, config=sgmem.Config(min_relevance=0.0)) as m:
        add_sample(m)
        yield m


def parse(block: str) -> list[tuple[datetime, str, str, str]]:
    """(time, thread, speaker, text) of each memory line, in block order."""
    out = []
    day, thread, clock = None, None, None
    for line in block.splitlines()[1:]:
        if m := HEADER.match(line):
            day, thread, clock = m.group(1), m.group(2), None
            continue
        m = LINE.match(line)
        assert m, f"unexpected line {line!r}"
        assert day is not None and thread is not None, "a memory line before any date header"
        clock = m.group(1) or clock
        assert clock is not None, "the first line under a date header must carry its time"
        at = datetime.fromisoformat(f"{day}T{clock}")
        out.append((at, thread, m.group(2), m.group(3)))
    return out


@pytest.mark.parametrize(
    ("query", "mode"),
    [
        ("What is my cat called?", None),
        ("How far do I run each week?", "vector"),
        ("tuna and keyboards", "graph"),
        ("Berlin marathon", "bm25"),
    ],
)
def test_context_never_exceeds_the_budget(mem: sgmem.Memory, query: str, mode: str | None) -> None:
    sizes = []
    for budget in BUDGETS:
        block = mem.context(query, scope="alice", budget_tokens=budget, mode=mode)
        n = count_tokens(block)
        assert n <= budget, f"{n} tokens for a budget of {budget}"
        sizes.append(n)
    assert sizes[-1] > 0, "a generous budget must return memories"
    assert sizes == sorted(sizes), "a larger budget never gives less"


def test_large_budget_holds_everything_relevant_verbatim(mem: sgmem.Memory) -> None:
    block = mem.context("Tell me about Miso the cat", scope="alice", budget_tokens=2000)
    assert block.startswith("Relevant memories")
    texts = [t for _, _, _, t in parse(block)]
    for m in CAT_THREAD:
        assert m["content"] in texts


def test_block_is_chronological_dated_and_speaker_labelled(mem: sgmem.Memory) -> None:
    block = mem.context("cat tuna keyboard marathon kilometres", scope="alice", budget_tokens=2000)
    lines = parse(block)
    assert len(lines) >= 4
    times = [at for at, _, _, _ in lines]
    assert times == sorted(times)
    expected = {m["content"]: (m.get("name") or m["role"]) for m in CAT_THREAD + RUN_THREAD}
    for _, thread, speaker, text in lines:
        assert expected[text] == speaker
        assert thread in ("chat-1", "chat-2")
    days = {at.date() for at in times}
    assert days == {datetime(2024, 3, 1).date(), datetime(2024, 3, 8).date()}


def test_a_small_budget_keeps_the_most_relevant(mem: sgmem.Memory) -> None:
    block = mem.context("Berlin marathon in September", scope="alice", budget_tokens=60)
    assert "Berlin marathon" in block
    assert count_tokens(block) <= 60


def test_nothing_fits_gives_an_empty_string(mem: sgmem.Memory) -> None:
    assert mem.context("cat", scope="alice", budget_tokens=1) == ""


def test_unknown_scope_gives_an_empty_string(mem: sgmem.Memory) -> None:
    assert mem.context("cat", scope="somebody-else", budget_tokens=500) == ""


# --------------------------------------------------- the fitter, directly
T0 = datetime(2024, 1, 1, 8, 0, tzinfo=timezone.utc)


def _turns(texts: list[str]) -> list[ContextTurn]:
    return [ContextTurn(i, T0 + timedelta(hours=7 * i), "t", f"spk{i % 2}", t) for i, t in enumerate(texts)]


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.text(min_size=1, max_size=120), min_size=1, max_size=8),
    st.integers(min_value=1, max_value=300),
)
def test_fit_property_budget_and_choice(texts: list[str], budget: int) -> None:
    turns = _turns(texts)
    block, chosen = fit(turns, budget)
    assert count_tokens(block) <= budget
    assert block == render(chosen)
    assert len({c.key for c in chosen}) == len(chosen)
    whole = [c for c in chosen if c in turns]
    if len(whole) != len(chosen):  # only the best candidate may be cut to fit, and only alone
        [cut] = chosen
        assert cut.key == turns[0].key and cut.text.endswith("…")
    if chosen:
        assert block.startswith("Relevant memories")
    else:
        assert block == ""


def test_fit_renders_oldest_first_whatever_the_rank() -> None:
    turns = _turns([f"memory number {i}" for i in range(6)])
    ranked = [turns[i] for i in (4, 1, 5, 0, 3, 2)]
    block, chosen = fit(ranked, 2000)
    assert len(chosen) == 6
    positions = [block.index(f"memory number {i}") for i in range(6)]
    assert positions == sorted(positions)
    assert block.count("[2024-01-0") == len({t.at.date() for t in turns})  # one date header per day


def test_fit_skips_a_long_turn_for_shorter_ones_that_fit() -> None:
    turns = _turns(["word " * 400, "short one", "short two"])
    block, chosen = fit(turns, 80)
    assert [c.key for c in chosen] == [1, 2]
    assert "short one" in block and "short two" in block


def test_fit_truncates_the_best_turn_when_nothing_fits_whole() -> None:
    turns = _turns(["alpha beta gamma delta " * 50])
    block, chosen = fit(turns, 60)
    assert len(chosen) == 1
    assert count_tokens(block) <= 60
    assert chosen[0].text.endswith("…")
    assert turns[0].text.startswith(chosen[0].text[:-1])


def test_fit_dedups_candidates() -> None:
    t = _turns(["same turn"])[0]
    _, chosen = fit([t, t, t], 500)
    assert chosen == [t]


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
