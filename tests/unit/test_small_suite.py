"""The small-memory chat suite: its pools are checked, and the chats it composes keep their promises.

Runs on the project's own small pool (``tests/data/small_pool.json``); nothing is embedded.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from sgmem.errors import InvalidInputError
from sgmem.eval.pool import FORMS, check_pool, load_pool
from sgmem.eval.suite import LONG_PASTE_CHARS, Chat, fold_of, generate_chats

POOL_FILE = Path(__file__).resolve().parents[1] / "data" / "small_pool.json"


@pytest.fixture(scope="module")
def pool():  # type: ignore[no-untyped-def]
    return load_pool(POOL_FILE)


@pytest.fixture(scope="module")
def chats(pool):  # type: ignore[no-untyped-def]
    return generate_chats(pool, 60, seed=3)


def _contents(chat: Chat) -> dict[str, dict]:
    return {m["id"]: {**m, "thread": t, "session_at": at} for t, at, m in chat.messages()}


def test_the_test_pool_is_a_valid_pool_with_every_form(pool) -> None:  # type: ignore[no-untyped-def]
    forms = Counter(f.form for f in pool.facts)
    assert set(forms) == set(FORMS) and min(forms.values()) >= 12
    assert pool.long_texts and pool.noise and pool.filler_user and pool.unrelated
    assert not pool.dropped


def test_a_malformed_pool_names_what_is_wrong(pool) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(POOL_FILE.read_text(encoding="utf-8"))
    data["facts"][0]["answer"] = "not in the turn at all"
    data["facts"][1]["answer_turn"] = 9
    with pytest.raises(InvalidInputError, match="not verbatim in turn 0") as err:
        check_pool(data)
    assert "not an index of its" in str(err.value)
    lenient = check_pool(data, strict=False)  # the bad facts left out, and said so
    assert len(lenient.facts) == len(pool.facts) - 2 and len(lenient.dropped) == 2
    with pytest.raises(InvalidInputError, match="no usable facts"):
        check_pool({**data, "facts": []})
    with pytest.raises(InvalidInputError, match="pool"):
        load_pool(str(POOL_FILE) + ".missing")


def test_the_update_episode_may_come_as_an_object(pool) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(POOL_FILE.read_text(encoding="utf-8"))
    f = next(f for f in data["facts"] if f["form"] == "update")
    f["before"] = {"turns": f.pop("before"), "before_answer_turn": f.pop("before_answer_turn"),
                   "before_answer": f.pop("before_answer")}  # fmt: skip
    again = check_pool(data)
    one = next(x for x in again.facts if x.id == f["id"])
    assert one.before and one.before_answer in one.before[one.before_turn]["content"]


def test_chats_have_10_to_120_turns_over_dated_sessions(chats) -> None:  # type: ignore[no-untyped-def]
    for chat in chats:
        assert 10 <= chat.n_turns <= 120, chat.id
        dates = [at for _, at, _ in chat.sessions]
        assert dates == sorted(dates) and len({t for t, _, _ in chat.sessions}) == len(chat.sessions)
        ids = [m["id"] for _, _, m in chat.messages()]
        assert len(ids) == len(set(ids))
        last = max(m["at"] for _, _, m in chat.messages())
        assert all(p.now > last for p in chat.probes)
        for _, _, m in chat.messages():
            assert m["role"] in ("user", "assistant")
            assert "name" not in m or m["role"] == "user"
    assert any(len(c.sessions) > 1 for c in chats)
    assert any(any("name" in m for _, _, m in c.messages()) for c in chats)
    assert any(not any("name" in m for _, _, m in c.messages()) for c in chats)


def test_every_answer_string_is_inside_its_answer_turn(chats) -> None:  # type: ignore[no-untyped-def]
    n = 0
    for chat in chats:
        msgs = _contents(chat)
        for p in chat.probes:
            if p.unrelated:
                assert p.answer is None
                continue
            assert p.answer and any(p.answer in msgs[i]["content"] for i in p.answer_ids), p.id
            n += 1
    assert n > 100


def test_an_update_is_answered_by_the_new_value_told_in_a_later_session(pool, chats) -> None:  # type: ignore[no-untyped-def]
    facts = {f.id: f for f in pool.facts}
    seen = 0
    for chat in chats:
        msgs = _contents(chat)
        for p in chat.probes:
            if "form: update" not in p.groups:
                continue
            fact = facts[p.id.split("/", 1)[1]]
            (new,) = p.answer_ids
            assert p.answer == fact.answer and fact.answer in msgs[new]["content"]
            old = [m for m in msgs.values() if m["content"] == fact.before[fact.before_turn]["content"]]
            assert old and all(m["session_at"] < msgs[new]["session_at"] for m in old), p.id
            assert new not in {m["id"] for m in old}
            seen += 1
    assert seen >= 5


def test_a_chat_holds_facts_of_distinct_kinds_and_no_unrelated_question_asks_one(chats) -> None:  # type: ignore[no-untyped-def]
    unrelated = 0
    for chat in chats:
        fact_kinds = [p.kind for p in chat.probes if not p.unrelated and p.kind != "long text"]
        assert len(fact_kinds) == len(set(fact_kinds)) and set(fact_kinds) == set(chat.kinds)
        asked = [p for p in chat.probes if p.unrelated]
        assert 2 <= len(asked) <= 3
        for p in asked:
            assert p.kind == "general" or p.kind not in chat.kinds, (chat.id, p.kind)
            unrelated += 1
    assert unrelated >= 120


def test_the_forms_long_pastes_and_foreign_facts_all_occur(chats) -> None:  # type: ignore[no-untyped-def]
    groups = Counter(g for c in chats for p in c.probes for g in p.groups)
    for form in FORMS:
        assert groups[f"form: {form}"] >= 5, form
    assert groups["form: long text"] and groups["lang: other"] and groups["about: assistant"]
    longest = max(len(m["content"]) for c in chats for _, _, m in c.messages())
    assert longest >= LONG_PASTE_CHARS
    assert groups["pasted ~45,000 characters"] > 0


def test_a_users_earlier_question_comes_mostly_before_the_fact(pool) -> None:  # type: ignore[no-untyped-def]
    facts = {f.id: f for f in pool.facts}
    before = after = 0
    for chat in generate_chats(pool, 150, seed=1):
        order = {m["content"]: n for n, (_, _, m) in enumerate(chat.messages())}
        pos = {m["id"]: n for n, (_, _, m) in enumerate(chat.messages())}
        for p in chat.probes:
            if "asked before, unanswered" not in p.groups:
                continue
            fact = facts[p.id.split("/", 1)[1]]
            asked = [order[a["user"]] for a in fact.asked_before if a["user"] in order]
            assert asked
            before += asked[0] < pos[p.answer_ids[0]]
            after += asked[0] > pos[p.answer_ids[0]]
    assert before > after > 0


def test_the_same_seed_composes_the_same_chats_and_another_seed_others(pool) -> None:  # type: ignore[no-untyped-def]
    a, b, c = generate_chats(pool, 8, seed=5), generate_chats(pool, 8, seed=5), generate_chats(pool, 8, seed=6)
    assert [x.sessions for x in a] == [x.sessions for x in b]
    assert [x.probes for x in a] == [x.probes for x in b]
    assert [x.sessions for x in a] != [x.sessions for x in c]


def test_paraphrases_are_cycled_across_seeds(pool) -> None:  # type: ignore[no-untyped-def]
    fact = pool.facts[0]
    asked = set()
    for seed in range(len(fact.questions)):
        for chat in generate_chats(pool, len(pool.facts) // 2, seed=seed):
            asked |= {p.text for p in chat.probes if p.id.endswith(f"/{fact.id}")}
    assert asked == set(fact.questions)


def test_folds_are_a_stable_hash_of_the_id() -> None:
    assert fold_of("q-1") == fold_of("q-1") and {fold_of(f"q-{i}") for i in range(200)} == set(range(5))
