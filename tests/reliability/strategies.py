"""Hypothesis strategies for hostile input: arbitrary unicode, wrong types, odd times and metadata."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

from hypothesis import strategies as st

import sgmem

#: any code point, lone surrogates included (invalid UTF-8 must be refused, not stored)
any_char = st.characters(exclude_categories=[])
any_text = st.text(any_char, max_size=60)
#: text a caller might legitimately send
valid_text = st.text(st.characters(codec="utf-8"), min_size=1, max_size=200).filter(lambda s: s.strip() != "")

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.just(math.nan),
    st.binary(max_size=10),
    st.lists(st.integers(), max_size=3),
    st.tuples(st.text(max_size=3)),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.just(object()),
    st.just(b"bytes"),
    st.sets(st.integers(), max_size=2),
)

names = st.one_of(any_text, valid_text, junk, st.sampled_from(["base", "t", " ", "", "a\x00b", "x" * 600]))

offsets = st.builds(lambda m: timezone(timedelta(minutes=m)), st.integers(-1439, 1439))
datetimes = st.datetimes(min_value=datetime.min, max_value=datetime.max, timezones=st.none() | offsets)
times = st.one_of(
    st.none(),
    datetimes,  # naive, aware, year 1 to 9999, past and far future
    datetimes.map(lambda d: d.isoformat()),
    st.just(datetime.now(timezone.utc) + timedelta(days=365 * 50)),
    st.sampled_from(
        [
            "2024-02-30",
            "yesterday",
            "NaN",
            "",
            "2024-01-01T25:00",
            "0001-01-01T00:00:00+05:00",
            "9999-12-31T23:00:00-05:00",
            "2024-05-01Z",
            "2024-05-01T10:00:00.123456789+00:00",
        ]
    ),
    st.floats(allow_nan=True),
    st.integers(),
    junk,
)

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), any_text)
metadata = st.one_of(
    st.recursive(
        json_leaf,
        lambda c: (
            st.lists(c, max_size=3) | st.dictionaries(st.one_of(any_text, st.integers(), st.booleans()), c, max_size=3)
        ),
        max_leaves=8,
    ),
    st.just({"deep": [[[[[[[[[[{}]]]]]]]]]]}),
    st.just({"x": {1, 2}}),
    st.just({"when": datetime(2024, 1, 1)}),
    st.just({1: "a", "1": "b"}),
)

ids = st.one_of(st.sampled_from(["dup", "dup", "existing", "m1"]), names)
contents = st.one_of(any_text, valid_text, junk, st.sampled_from(["", "   ", "\n\t", "🙂", "...", "a\x00b"]))
roles = st.one_of(st.sampled_from(["user", "assistant", "system", "tool"]), any_text, junk)

message_dict = st.fixed_dictionaries(
    {"role": roles, "content": contents},
    optional={"name": names, "id": ids, "at": times, "session": names, "metadata": metadata},
)
odd_dict = st.dictionaries(
    st.one_of(st.sampled_from(["role", "content", "thread", "extra"]), st.integers()), junk, max_size=4
)
message_obj = st.builds(
    sgmem.Message,
    role=roles,
    content=contents,
    name=st.none() | names,
    id=st.none() | ids,
    at=times,
    metadata=metadata,
)
one_message = st.one_of(message_dict, message_obj, odd_dict)
messages = st.one_of(one_message, st.lists(one_message, max_size=4), junk, st.just([]), st.just("just a string"))
ints = st.one_of(st.integers(-5, 2000), junk)
modes = st.one_of(st.none(), st.sampled_from(sgmem.MODES), any_text, junk)
name_lists = st.one_of(st.none(), st.lists(names, max_size=3), names, junk)
