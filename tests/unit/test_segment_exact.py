"""sgmem's speed-ups of pysbd give pysbd's exact sentences.

:func:`sgmem.text.segment._prefilter_abbreviations` patches pysbd (an
abbreviation prefilter found from the text's periods, precompiled rewrite
rules, list scans skipped when their pattern's character is absent). Each
patch keeps the original as ``__wrapped__``; these tests run pysbd with and
without the patches on every LoCoMo dev turn (where the data is present), on
synthetic benchmark turns and on generated tricky texts, and require the
same sentences.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sgmem.text.segment as seg

LOCOMO = Path(
    os.environ.get("SGMEM_LOCOMO_DEV")
    or Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo" / "locomo-dev.json"
)


def _patched() -> list[tuple[Any, str]]:
    from pysbd.abbreviation_replacer import AbbreviationReplacer
    from pysbd.lists_item_replacer import ListItemReplacer
    from pysbd.utils import Text

    seg._segmenter()  # installs the patches
    return [
        (AbbreviationReplacer, "search_for_abbreviations_in_string"),
        (Text, "apply"),
        (ListItemReplacer, "iterate_alphabet_array"),
        (ListItemReplacer, "scan_lists"),
    ]


@contextlib.contextmanager
def _unpatched() -> Iterator[None]:
    """pysbd as installed: every patch of sgmem taken off for the block."""
    import importlib
    import re

    saved = [(cls, name, cls.__dict__[name]) for cls, name in _patched()]
    modules = [importlib.import_module(m) for m in seg._PYSBD_MODULES]
    for cls, name, fn in saved:
        setattr(cls, name, fn.__wrapped__)
    for module in modules:
        module.re = re  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for cls, name, fn in saved:
            setattr(cls, name, fn)
        for module in modules:
            module.re = seg._RE  # type: ignore[attr-defined]


def _run(text: str) -> tuple[Any, ...]:
    """pysbd's sentences of ``text``, its list-marker rewrite of it, and sgmem's spans."""
    from pysbd.lists_item_replacer import ListItemReplacer

    return seg._sentences(seg._segmenter(), text), ListItemReplacer(text).add_line_break(), seg._spans(text)


def _assert_same(texts: list[str]) -> None:
    bad = []
    for t in texts:
        fast = _run(t)
        with _unpatched():
            slow = _run(t)
        if fast != slow:
            bad.append((t, fast, slow))
    assert not bad, f"{len(bad)} of {len(texts)} texts split differently, e.g. {bad[:3]}"


def test_every_patch_is_installed_and_keeps_its_original() -> None:
    import importlib

    for cls, name in _patched():
        assert hasattr(cls.__dict__[name], "__wrapped__"), f"{cls.__name__}.{name} is not sgmem's patch"
    for m in seg._PYSBD_MODULES:
        assert importlib.import_module(m).re is seg._RE, m


@pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo dev data not found at {LOCOMO} (not shipped: CC BY-NC)")
def test_every_locomo_turn_splits_as_unpatched_pysbd() -> None:
    turns = [
        turn["text"]
        for sample in json.loads(LOCOMO.read_text(encoding="utf-8"))
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and not key.endswith("date_time") and isinstance(session, list)
        for turn in session
    ]
    assert len(turns) > 1000
    _assert_same(turns)


def test_synthetic_benchmark_turns_split_as_unpatched_pysbd() -> None:
    from benchmarks.synth import conversation

    _assert_same([m["content"] for _, msgs in conversation(1500, seed=7) for m in msgs])


_TRICKY = [
    "Dr. Smith went to Washington. He arrived at 5 p.m. yesterday. Then he left.",
    "e.g. this is an example, i.e. a sample. Mr. Jones agreed.",
    "U.S.A. is big. The U.K. is small. I went to the U.S. Then home.",
    "It costs $3.50 today. Pi is 3.14159 roughly. Version 2.0.1 shipped.",
    "Wait... what? Really?! No way... Ok.",
    "He said “Hi.” Then “Bye!” she said. 'Quote.' (Paren.) [Bracket.]",
    "See https://example.com/a?b=1&c=2. Then mail bob.smith@example.org! Thanks.",
    "I love it 😍! Great 🎉 really. 👍 ok.",
    "1. first item 2. second item 3. third item",
    "a. apples b. bananas c. cherries",
    "a) apples b) bananas c) cherries (d) dates",
    "a) apples b) bananas c) cherries",
    "i) x ii) y iii) z",
    "i. one ii. two iii. three iv. four",
    "(i) one (ii) two (iii) three",
    "1) one 2) two 3) three",
    "- 1. dash item - 2. dash item",
    "Call me at 9 a.m. or 10 p.m. Jan. 5 works. No. 7 is mine. St. Louis is far. Vs. them.",
    "Mt. Everest vs. K2, etc. and so on. Prof. X & Co. Ltd. sued.",
    "The file.txt and data.csv are here. Go to p. 5. Fig. 3 shows it.",
    "She was born in 1990. In 2001 she moved.\nNew line here\n\nAnd a blank line.",
    "What?!?! Amazing!!! Really??? Yes.",
    "Ha-ha. ;) :) Nice. -- Bob",
    "I'm at St. Mary's. It's 5 o'clock. Don't go.",
    "E.U. rules. U.S. policy. I.V. drip. U∯S odd.",
    "Numbers 1.2.3 and 4.5. Then 6 . 7 . End",
    "[1] Ref. [2] Ref two. Ibid. p. 4.",
]


def test_tricky_texts_split_as_unpatched_pysbd() -> None:
    _assert_same(_TRICKY)


_PIECES = [
    "Dr.",
    "e.g.",
    "i.e.",
    "U.S.",
    "etc.",
    "p.m.",
    "a.m.",
    "No.",
    "St.",
    "Jan.",
    "vs.",
    "3.5",
    "$1.99",
    "2.",
    "10.",
    "a.",
    "b.",
    "ii.",
    "a)",
    "(b)",
    "1)",
    "(iv)",
    "I",
    "hello",
    "it's",
    "(",
    ")",
    ",",
    "?",
    "!",
    "...",
    "…",
    "\n",
    '"',
    "“Hi.”",
    "'ok.'",
    "http://x.io/a?b",
    "x@y.com",
    "😀",
    "-",
    ":",
    ";",
    "ok",
    "Then",
    "The",
    "file.pdf",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=18), st.sampled_from([" ", "", "  ", "\n"]))
def test_generated_texts_split_as_unpatched_pysbd(pieces: list[str], sep: str) -> None:
    _assert_same([sep.join(pieces), " ".join(pieces)])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80))
def test_any_text_splits_as_unpatched_pysbd(text: str) -> None:
    _assert_same([text])


def test_abbreviations_present_equals_the_substring_scan() -> None:
    from pysbd.lang.english import English

    abbrs = English.Abbreviation.ABBREVIATIONS
    for text in [*_TRICKY, "", ".", "..", "a.b.c.", "no. st. mr. dr. ", "x" * 50 + ".", "İstanbul. ß. ﬁ."]:
        lowered = text.lower()
        assert seg._abbreviations_present(abbrs, lowered) == [a for a in abbrs if a.strip() + "." in lowered], text


@pytest.mark.parametrize(
    ("pattern", "needs"),
    [
        ("a|b", ()),
        ("(?=x)y", ("x", "y")),
        ("x?y*", ()),
        ("(?i)x", ()),
        ("(?i:x)y", ("y",)),
        ("[x]z", ("x", "z")),
        ("[xy]", ()),
        ("(?<!x)y", ("y",)),
        ("(?<=q)(ab|cb)", ("b", "q")),
        ("(?:x{2,})", ("x",)),
        ("x{0,3}", ()),
        (r"\r∯", ("\r", "∯")),
        (r"(?<=\s)\d+(?=\.)", (".",)),
    ],
)
def test_required_chars_are_what_every_match_needs(pattern: str, needs: tuple[str, ...]) -> None:
    assert seg.required_chars(pattern) == needs


def test_no_pysbd_rule_matches_a_text_lacking_a_character_it_requires() -> None:
    """Every rule pysbd applies through ``Text.apply``, on texts that lack one of its required characters."""
    import re

    from pysbd.utils import Text

    seen: dict[str, Any] = {}
    real = seg._apply

    def spy(self: str, *rules: Any) -> str:
        for r in rules:
            seen[r.pattern] = r
        return real(self, *rules)

    seg._segmenter()
    Text.apply = spy
    try:
        for t in _TRICKY:
            seg._sentences(seg._segmenter(), t)
    finally:
        Text.apply = real
    assert len(seen) > 40
    alphabet = "".join(sorted({ch for p in seen for ch in p})) + " aZ9.\r\n"
    for pattern in seen:
        for ch in seg.required_chars(pattern):
            probe = alphabet.replace(ch, "") * 3
            assert re.search(pattern, probe) is None, (pattern, ch)


def test_the_pattern_cache_stays_bounded_whatever_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seg, "_MAX_COMPILED", 20)
    seg._compiled_calls.clear()
    for i in range(300):  # abbreviations written in ever new ways make ever new patterns
        case = "".join(ch.upper() if (i >> j) & 1 else ch for j, ch in enumerate("prof"))
        seg._spans(f"We met {case}. Smith at {i} p.m. today. Then we left.")
    assert len(seg._compiled_calls) <= 20


def test_only_the_checked_pysbd_release_is_patched() -> None:
    import pysbd

    # the installed release is one the exact-output tests above were run against, so it is patched
    assert seg.patches_apply(pysbd.__version__)
    # a release whose internals were never compared is left as pysbd ships it
    assert not seg.patches_apply("0.4.0")
    assert not seg.patches_apply("")
