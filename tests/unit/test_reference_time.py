"""Time relative to the moment of asking: ``search(now=...)``, ``context(now=...)`` and the CLI's ``--now``.

A user asks "what did I cook last Saturday?" of a memory that holds several
similar turns; the one said on that Saturday comes first. The moment of asking
is the clock unless a caller replays an older chat and says when it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import sgmem
from sgmem.cli import main
from sgmem.text.dates import query_windows
from sgmem.tools import MemoryTools
from tests.conftest import NO_CUTOFF

#: a Thursday
NOW = datetime(2024, 3, 14, 9, 0, tzinfo=timezone.utc)

#: (when, what the user said): pairs of similar turns told at different times
TURNS = [
    ("2023-11-08T18:00", "I went hiking up Mount Diablo with Sam."),
    ("2024-03-06T18:00", "I went hiking up Mount Tam with Priya."),  # last week
    ("2024-01-20T18:00", "My sister moved to Denver for her new job."),
    ("2024-02-10T18:00", "I baked sourdough bread for the first time."),
    ("2024-03-09T10:00", "I cooked a big pot of lentil soup for my neighbours."),  # last Saturday
    ("2024-03-02T10:00", "I cooked a mushroom risotto for my neighbours."),  # two Saturdays ago
    ("2023-05-12T10:00", "We visited the science museum with the kids."),  # in May (2023)
    ("2023-09-12T10:00", "We visited the art museum downtown with the kids."),
    ("2024-03-13T10:00", "I had sushi for lunch with my manager."),  # yesterday
    ("2024-02-21T10:00", "I had ramen for lunch with my manager."),  # three weeks ago
]


def _add(mem: sgmem.Memory) -> None:
    for i, (at, text) in enumerate(TURNS):
        when = datetime.fromisoformat(at).replace(tzinfo=timezone.utc)
        mem.add([{"role": "user", "content": text}], scope="u", thread=f"day-{i}", at=when)


@pytest.fixture(scope="module")
def mem(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(None, embedder=embedder, config=NO_CUTOFF) as m:
        _add(m)
        yield m


@pytest.mark.parametrize(
    ("question", "said_then", "said_another_time"),
    [
        ("Where did I go hiking last week?", "Mount Tam", "Mount Diablo"),
        ("What did I cook last Saturday?", "lentil soup", "risotto"),
        ("What did I cook two Saturdays ago?", "risotto", "lentil soup"),
        ("What did I have for lunch with my manager three weeks ago?", "ramen", "sushi"),
        ("What did I have for lunch with my manager yesterday?", "sushi", "ramen"),
        ("Which museum did we visit in May?", "science museum", "art museum"),
    ],
)
def test_a_relative_time_picks_the_turn_said_then(
    mem: sgmem.Memory, question: str, said_then: str, said_another_time: str
) -> None:
    hits = mem.search(question, scope="u", k=3, now=NOW)
    texts = [h.text for h in hits]
    assert said_then in texts[0], texts
    assert any(said_another_time in t for t in texts[1:]), texts  # the similar turn is still found, below it


def test_the_same_question_asked_at_another_time_picks_another_turn(mem: sgmem.Memory) -> None:
    # asked on 2 March, "yesterday" is 1 March: neither lunch; asked on 22 February it is the ramen
    assert (
        "ramen"
        in mem.search(
            "What did I have for lunch with my manager yesterday?",
            scope="u",
            k=1,
            now=datetime(2024, 2, 22, 12, 0, tzinfo=timezone.utc),
        )[0].text
    )


def test_the_moment_of_asking_is_read_in_its_own_time_zone() -> None:
    # 01:00 on 14 March in California is 09:00 UTC: "yesterday" is 13 March there, whatever UTC's date
    pacific = timezone(timedelta(hours=-8))
    ((start, end, _),) = query_windows("What did I do yesterday?", 0, datetime(2024, 3, 14, 1, 0, tzinfo=pacific))
    assert start == datetime(2024, 3, 13, 8, 0, tzinfo=timezone.utc)
    assert end == datetime(2024, 3, 14, 8, 0, tzinfo=timezone.utc)


def test_context_reads_the_moment_of_asking(mem: sgmem.Memory) -> None:
    block = mem.context("What did I cook last Saturday?", scope="u", budget_tokens=50, min_score=0, now=NOW)
    assert "lentil soup" in block
    assert "risotto" not in block  # the budget holds one turn: the one said last Saturday


def test_naive_now_is_utc_and_an_iso_string_is_accepted(mem: sgmem.Memory) -> None:
    q = "What did I cook two Saturdays ago?"
    aware = [h.message_ids for h in mem.search(q, scope="u", k=3, now=NOW)]
    assert [h.message_ids for h in mem.search(q, scope="u", k=3, now=NOW.replace(tzinfo=None))] == aware
    assert [h.message_ids for h in mem.search(q, scope="u", k=3, now="2024-03-14T09:00:00Z")] == aware


@pytest.mark.parametrize("bad", ["next Tuesday", "2024-13-01", 1710406800, True, float("nan")])
def test_a_bad_moment_of_asking_is_refused(mem: sgmem.Memory, bad: object) -> None:
    for call in (
        lambda: mem.search("What did I cook last Saturday?", scope="u", now=bad),
        lambda: mem.search("What did I cook last Saturday?", scope="u", kinds="fact", now=bad),
        lambda: mem.context("What did I cook last Saturday?", scope="u", now=bad),
        lambda: asyncio.run(mem.asearch("What did I cook last Saturday?", scope="u", now=bad)),
    ):
        with pytest.raises(sgmem.InvalidInputError, match="now") as err:
            call()
        assert err.value.field == "now"


def test_the_cli_and_the_recall_tool_take_the_moment_of_asking(
    embedder: sgmem.Embedder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mem"
    with sgmem.Memory(path, embedder=embedder) as m:
        _add(m)
        recalled = MemoryTools(m).recall("u", "What did I cook last Saturday?", k=1, now=NOW.isoformat())
        assert "lentil soup" in recalled["memories"][0]["text"]
    q = "What did I cook two Saturdays ago?"
    assert main(["search", q, "--scope", "u", "--k", "1", "--now", "2024-03-14T09:00:00Z", "--path", str(path)]) == 0
    assert "risotto" in capsys.readouterr().out
    assert main(["search", q, "--scope", "u", "--now", "two weeks ago", "--path", str(path)]) != 0
    assert "now" in capsys.readouterr().err
