"""Input validation helpers: what is accepted, how it is normalised, what is refused."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

import sgmem
from sgmem.config import Limits
from sgmem.validate import ROLES, check_int, check_mode, check_name, check_text, check_time, normalise_messages

NOW = datetime(2024, 5, 8, 13, 56, tzinfo=timezone.utc)
LIMITS = Limits()


def norm(messages: Any, limits: Limits = LIMITS) -> list[dict[str, Any]]:
    return normalise_messages(messages, NOW, limits)


# ------------------------------------------------------------------ messages
def test_minimal_message_gets_every_field_filled() -> None:
    [m] = norm([{"role": "user", "content": "hi"}])
    assert m == {
        "role": "user",
        "content": "hi",
        "name": None,
        "id": None,
        "at": NOW,
        "session": None,
        "metadata": {},
    }


def test_a_single_dict_or_message_is_accepted() -> None:
    assert len(norm({"role": "user", "content": "hi"})) == 1
    assert len(norm(sgmem.Message(role="assistant", content="hello"))) == 1


def test_a_generator_of_messages_is_accepted() -> None:
    out = norm({"role": "user", "content": f"m{i}"} for i in range(3))
    assert [m["content"] for m in out] == ["m0", "m1", "m2"]


@pytest.mark.parametrize("role", ROLES)
def test_every_role_is_accepted(role: str) -> None:
    assert norm([{"role": role, "content": "x"}])[0]["role"] == role


def test_content_is_kept_verbatim() -> None:
    content = "  two spaces first,\ttab, trailing newline\n"
    assert norm([{"role": "user", "content": content}])[0]["content"] == content


def test_message_time_overrides_the_default_and_iso_strings_parse() -> None:
    out = norm(
        [
            {"role": "user", "content": "a", "at": "2023-05-08T13:56:00Z"},
            {"role": "user", "content": "b", "at": "2023-05-08T15:56:00+02:00"},
            {"role": "user", "content": "c"},
        ]
    )
    assert out[0]["at"] == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert out[1]["at"] == out[0]["at"]  # same instant, offset kept
    assert out[1]["at"].utcoffset() == timedelta(hours=2)
    assert out[2]["at"] == NOW


def test_naive_datetimes_are_taken_as_utc() -> None:
    assert check_time(datetime(2024, 1, 2, 3, 4), "at") == datetime(2024, 1, 2, 3, 4, tzinfo=timezone.utc)


def test_metadata_is_copied_not_aliased() -> None:
    meta = {"a": 1}
    out = norm([{"role": "user", "content": "x", "metadata": meta}])
    meta["a"] = 2
    assert out[0]["metadata"] == {"a": 1}


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ("hello", "messages"),
        (b"hello", "messages"),
        (42, "messages"),
        ([], "messages"),
        ([42], "messages[0]"),
        ([{"content": "no role"}], "messages[0].role"),
        ([{"role": "human", "content": "x"}], "messages[0].role"),
        ([{"role": "user"}], "messages[0].content"),
        ([{"role": "user", "content": ""}], "messages[0].content"),
        ([{"role": "user", "content": " \n\t"}], "messages[0].content"),
        ([{"role": "user", "content": 7}], "messages[0].content"),
        ([{"role": "user", "content": "x\ud800y"}], "messages[0].content"),
        ([{"role": "user", "content": "x", "text": "typo key"}], "messages[0]"),
        ([{"role": "user", "content": "x", "name": ""}], "messages[0].name"),
        ([{"role": "user", "content": "x", "name": 5}], "messages[0].name"),
        ([{"role": "user", "content": "x", "id": 5}], "messages[0].id"),
        ([{"role": "user", "content": "x", "id": "a\x00b"}], "messages[0].id"),
        ([{"role": "user", "content": "x", "session": "  "}], "messages[0].session"),
        ([{"role": "user", "content": "x", "at": "yesterday"}], "messages[0].at"),
        ([{"role": "user", "content": "x", "at": 1700000000}], "messages[0].at"),
        ([{"role": "user", "content": "x", "metadata": "x"}], "messages[0].metadata"),
        ([{"role": "user", "content": "x", "metadata": {"o": object()}}], "messages[0].metadata"),
        ([{"role": "user", "content": "x", "metadata": {"n": float("nan")}}], "messages[0].metadata"),
        ([{"role": "user", "content": "x", "metadata": {"k": "\ud800"}}], "messages[0].metadata"),
        ([{"role": "user", "content": "x", "metadata": []}], "messages[0].metadata"),
        ([{"role": "user", "content": "x", "metadata": ""}], "messages[0].metadata"),
        ([{"role": "user", "content": "x", "metadata": {"t": (1, 2)}}], "messages[0].metadata"),
        (
            [{"role": "user", "content": "ok", "id": "a"}, {"role": "user", "content": "ok", "id": "a"}],
            "messages[1].id",
        ),
    ],
)
def test_bad_messages_name_the_field_what_was_received_and_what_is_expected(messages: Any, field: str) -> None:
    with pytest.raises(sgmem.InvalidInputError) as err:
        norm(messages)
    msg = str(err.value)
    assert msg.startswith(f"{field}:")
    assert "received" in msg and "expected" in msg
    assert err.value.field == field


def test_the_index_of_the_bad_message_is_named() -> None:
    batch = [{"role": "user", "content": "fine"}] * 3 + [{"role": "robot", "content": "bad"}]
    with pytest.raises(sgmem.InvalidInputError, match=r"messages\[3\]\.role: received 'robot'"):
        norm(batch)


def test_size_limits_name_the_setting_to_raise() -> None:
    small = Limits(max_message_chars=10, max_messages_per_add=2)
    with pytest.raises(sgmem.LimitExceededError) as err:
        norm([{"role": "user", "content": "x" * 11}], small)
    assert err.value.size == 11 and err.value.limit == 10
    assert "max_message_chars" in str(err.value)
    with pytest.raises(sgmem.LimitExceededError, match="max_messages_per_add"):
        norm([{"role": "user", "content": "x"}] * 3, small)


# ------------------------------------------------------------ scalar checks
@pytest.mark.parametrize("value", ["", "   ", None, 5, b"bytes", "a\x00b", "\udfff", "x" * 513])
def test_check_name_rejects(value: Any) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="scope"):
        check_name(value, "scope", LIMITS)


def test_check_name_keeps_names_verbatim() -> None:
    assert check_name(" user 42 ", "scope", LIMITS) == " user 42 "
    assert check_name("ユーザー", "scope", LIMITS) == "ユーザー"


def test_check_text_limits_size() -> None:
    with pytest.raises(sgmem.LimitExceededError):
        check_text("abcdef", "query", 5, "max_query_chars")
    assert check_text("abcde", "query", 5, "max_query_chars") == "abcde"


@pytest.mark.parametrize(
    ("value", "ok"), [(1, True), (10, True), (0, False), (11, False), (True, False), (2.0, False), ("3", False)]
)
def test_check_int(value: Any, ok: bool) -> None:
    if ok:
        assert check_int(value, "k", 1, 10) == value
    else:
        with pytest.raises(sgmem.InvalidInputError, match="k: received"):
            check_int(value, "k", 1, 10)


def test_check_mode() -> None:
    assert check_mode(None) is None
    for mode in sgmem.MODES:
        assert check_mode(mode) == mode
    with pytest.raises(sgmem.InvalidInputError, match="'semantic'"):
        check_mode("semantic")
    with pytest.raises(sgmem.InvalidInputError):
        check_mode("HYBRID")


@pytest.mark.parametrize(
    "value", ["2024-13-01", "soon", 3.5, [2024], datetime.max.replace(tzinfo=None).isoformat() + "x"]
)
def test_check_time_rejects(value: Any) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="since"):
        check_time(value, "since")


def test_check_time_accepts_dates_and_z_suffix() -> None:
    assert check_time("2024-01-02", "since") == datetime(2024, 1, 2, tzinfo=timezone.utc)
    assert check_time(" 2024-01-02T03:04:05Z ", "since") == datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert check_time(None, "since") is None
