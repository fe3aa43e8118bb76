"""Offline sentence splitting.

`pysbd` (rule-based, no downloaded data) does the sentence-boundary work; it
already handles abbreviations ("Dr.", "p.m.", "e.g."), decimals and ellipses.
Two things it gets wrong are handled here: URLs and e-mail addresses (it
splits "https://x.io/a?b=1" at the "?"), which are masked before splitting,
and the offsets of each sentence in the original text, which we compute
ourselves so that every sentence is an exact substring of the message.
"""

from __future__ import annotations

import importlib
import re
import threading
from functools import lru_cache
from typing import Any

__all__ = ["split_sentences", "sentence_spans"]

# URLs, www-hosts and e-mail addresses: masked so the splitter cannot cut them.
# The address must start a token and its local part is at most 64 characters
# (RFC 5321): unanchored, the pattern rescanned long runs of letters from every
# position (a 200k-character token took two minutes).
_PROTECT = re.compile(
    r"(?:https?://|ftp://|www\.)[^\s<>\"']+|(?<![\w.+-])[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+",
    re.IGNORECASE,
)
# A masked span is replaced by letters of the same length, so offsets survive.
_MASK_CHAR = "x"
# pysbd's time grows faster than linearly with text length (200k chars: ~14 s in one
# call); long text is fed to it in blocks cut where it splits anyway (~0.5 s in total): _blocks.
_BLOCK_CHARS = 4000
_PARAGRAPH_END = re.compile(r"\n[^\S\n]*\n\s*")
_LINE_END = re.compile(r"\n\s*")
# a sentence end after a word of letters alone ("over." not "e.g.", "3.", "Dr." or "x.io/a.") before a capital
_WORD_END = re.compile(r"(?<![\w.@/-])(?P<word>[a-z]{2,})[.!?][\"')\]]*\s+(?=[\"'(]?[A-Z])")
_SPACE = re.compile(r"\s")
_local = threading.local()


def _segmenter() -> Any:
    seg = getattr(_local, "seg", None)
    if seg is None:
        import pysbd  # local import: pysbd compiles many regexes on import

        _prefilter_abbreviations()
        seg = pysbd.Segmenter(language="en", clean=False, char_span=False)
        _local.seg = seg
    return seg


def _sentences(seg: Any, block: str) -> list[str]:
    """pysbd's sentences of ``block``, as ``Segmenter.segment`` computes them before it
    re-finds each one in the text with a fresh regex (we find offsets ourselves, and
    those regexes were half of pysbd's time)."""
    return list(seg.processor(block).process()) if block else []


class _Delegate:
    """A read-only view of ``base`` with some attributes replaced."""

    def __init__(self, base: Any, **override: Any) -> None:
        self.__dict__.update(override)
        self._base = base

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)


_prefilter_lock = threading.Lock()


def _prefilter_abbreviations() -> None:
    """Make pysbd skip abbreviations the text cannot hold ("abbr." must occur), and precompile its rules.

    pysbd tries every abbreviation of its list that occurs anywhere in the
    text as a substring ("a", "st", "no" occur in nearly every text), and each
    try compiles regexes that overflow Python's regex cache: about half a
    millisecond per message. Every rewrite it then makes replaces the period
    of an ``abbr.``, so an abbreviation not followed by a period in the text
    changes nothing; offering pysbd only the others gives the same output
    (checked against unpatched pysbd by ``tests/unit/test_segment_exact.py``).
    The filter narrows the list per call, through a view, so threads and
    other pysbd users are unaffected. Which abbreviations occur is found from
    the text's periods (:func:`_abbreviations_present`), not by scanning the
    text once per abbreviation.

    pysbd also applies its ~100 rewrite rules per text with ``re.sub(pattern,
    ...)``, which looks each pattern up in ``re``'s cache; :func:`_apply`
    keeps them compiled (``re.sub(p, r, s)`` is ``re.compile(p).sub(r, s)``).
    """
    import pysbd
    from pysbd.abbreviation_replacer import AbbreviationReplacer
    from pysbd.lists_item_replacer import ListItemReplacer
    from pysbd.utils import Text

    if not patches_apply(getattr(pysbd, "__version__", "")):
        return  # another pysbd: its internals may differ, so it runs unpatched (same output, slower)
    with _prefilter_lock:
        if getattr(AbbreviationReplacer, "_sgmem_prefilter", False):
            return
        original = AbbreviationReplacer.search_for_abbreviations_in_string

        def search(self: Any, text: str) -> str:
            lowered = text.lower()
            if "." not in lowered:
                return text
            lang = self.lang
            keep = _abbreviations_present(lang.Abbreviation.ABBREVIATIONS, lowered)
            if not keep:
                return text
            self.lang = _Delegate(lang, Abbreviation=_Delegate(lang.Abbreviation, ABBREVIATIONS=keep))
            try:
                return original(self, text)  # type: ignore[no-any-return]
            finally:
                self.lang = lang

        search.__wrapped__ = original  # type: ignore[attr-defined]
        AbbreviationReplacer.search_for_abbreviations_in_string = search
        _apply.__wrapped__ = Text.apply  # type: ignore[attr-defined]
        Text.apply = _apply
        _skip_absent_lists(ListItemReplacer)
        for name in _PYSBD_MODULES:
            module = importlib.import_module(name)
            if getattr(module, "re", None) is re:
                setattr(module, "re", _RE)  # noqa: B010 - a module attribute mypy cannot see
        AbbreviationReplacer._sgmem_prefilter = True  # type: ignore[attr-defined]


# The pysbd releases whose internals the speed-ups above were checked against, output for
# output, by tests/unit/test_segment_exact.py; any other version runs unpatched.
CHECKED_PYSBD_VERSIONS = ("0.3.4",)


def patches_apply(version: str) -> bool:
    """Whether pysbd ``version`` gets the exact speed-ups (only releases they were checked against)."""
    return version in CHECKED_PYSBD_VERSIONS


_compiled_rules: dict[Any, tuple[re.Pattern[str], tuple[str, ...]]] = {}


def _apply(self: str, *rules: Any) -> str:
    """``pysbd.utils.Text.apply`` with each rule compiled once, skipped when the text lacks a character it needs.

    ``re.sub(p, r, s)`` is ``re.compile(p).sub(r, s)``; a pattern that cannot
    match leaves the text as it is, and most of pysbd's ~80 rules per text
    need a character the text does not hold ("∯", "&", "♨", a quote...):
    :func:`required_chars`.
    """
    for rule in rules:
        got = _compiled_rules.get(rule.pattern)
        if got is None:
            got = _compiled_rules.setdefault(rule.pattern, (re.compile(rule.pattern), required_chars(rule.pattern)))
        pattern, need = got
        for ch in need:
            if ch not in self:
                break
        else:
            self = pattern.sub(rule.replacement, self)
    return self


#: pysbd's modules whose module-level ``re.sub``/``findall``/``search`` calls go through :data:`_RE`
_PYSBD_MODULES = (
    "pysbd.abbreviation_replacer",
    "pysbd.between_punctuation",
    "pysbd.exclamation_words",
    "pysbd.lists_item_replacer",
    "pysbd.processor",
    "pysbd.punctuation_replacer",
)
_compiled_calls: dict[tuple[Any, int], tuple[re.Pattern[str], tuple[str, ...]]] = {}


#: [D] patterns kept compiled; some of pysbd's embed a word of the text (an abbreviation as written), so the
#: cache is emptied when full rather than growing with what is ingested (``re``'s own cache holds 512)
_MAX_COMPILED = 4096


def _compiled(pattern: Any, flags: int) -> tuple[re.Pattern[str], tuple[str, ...]]:
    got = _compiled_calls.get((pattern, flags))
    if got is None:
        if len(_compiled_calls) >= _MAX_COMPILED:
            _compiled_calls.clear()
        got = _compiled_calls.setdefault((pattern, flags), (re.compile(pattern, flags), required_chars(pattern, flags)))
    return got


def _lacks(text: str, need: tuple[str, ...]) -> bool:
    for ch in need:
        if ch not in text:
            return True
    return False


class _ReForPysbd:
    """``re`` for pysbd's modules: ``sub``, ``findall`` and ``search`` skip a pattern the text cannot match.

    The same answers as ``re`` (a pattern that needs a character the text
    lacks has no match: ``sub`` returns the text, as a plain ``str`` like
    ``re.sub``; ``findall`` an empty list; ``search`` None), each pattern
    compiled once; every other name is ``re``'s own.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)

    def sub(self, pattern: Any, repl: Any, string: str, count: int = 0, flags: int = 0) -> str:
        compiled, need = _compiled(pattern, flags)
        if _lacks(string, need):
            return string if type(string) is str else str(string)
        return compiled.sub(repl, string, count)

    def findall(self, pattern: Any, string: str, flags: int = 0) -> list[Any]:
        compiled, need = _compiled(pattern, flags)
        return [] if _lacks(string, need) else compiled.findall(string)

    def search(self, pattern: Any, string: str, flags: int = 0) -> re.Match[str] | None:
        compiled, need = _compiled(pattern, flags)
        return None if _lacks(string, need) else compiled.search(string)


_RE = _ReForPysbd()


def required_chars(pattern: Any, flags: int = 0) -> tuple[str, ...]:
    """Characters every match of ``pattern`` (a ``str`` regex) needs in the searched text, look-arounds included.

    Conservative: a literal counts only where the match cannot avoid it (not
    under ``?``/``*``, in every branch of an alternation, never under a
    negative look-around or case-insensitive matching); anything else needs
    nothing. An empty tuple means "always try the pattern".
    """
    if not isinstance(pattern, str):
        return ()
    try:
        from re import _constants as c  # type: ignore[attr-defined]
        from re import _parser  # type: ignore[attr-defined]
    except ImportError:  # Python 3.10
        import sre_constants as c
        import sre_parse as _parser

    parsed = _parser.parse(pattern, flags)
    if (parsed.state.flags | flags) & c.SRE_FLAG_IGNORECASE:
        return ()

    def need(items: Any) -> set[str]:
        out: set[str] = set()
        for op, av in items:
            if op is c.LITERAL:
                out.add(chr(av))
            elif op is c.IN and len(av) == 1 and av[0][0] is c.LITERAL:
                out.add(chr(av[0][1]))
            elif op is c.SUBPATTERN and not av[1] & c.SRE_FLAG_IGNORECASE:
                out |= need(av[3])
            elif op is getattr(c, "ATOMIC_GROUP", None):
                out |= need(av)
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)) and av[0] >= 1:
                out |= need(av[2])
            elif op is c.BRANCH and av[1]:
                out |= set.intersection(*(need(b) for b in av[1]))
            elif op is c.ASSERT:
                out |= need(av[1])
        return out

    return tuple(sorted(need(parsed)))


def _skip_absent_lists(cls: Any) -> None:
    """Skip pysbd's list-marker scans whose pattern needs a character the text lacks.

    Every alternative of ``ALPHABETICAL_LIST_WITH_PARENS`` and
    ``NUMBERED_LIST_PARENS_REGEX`` ends in a look-ahead for ")", and of
    ``ALPHABETICAL_LIST_WITH_PERIODS`` and ``NUMBERED_LIST_REGEX_1`` for ".":
    without that character their ``findall`` is empty and the scan returns
    the text unchanged (its loop never runs). ~25 µs a scan, 7 scans a text.
    """
    needs = {
        cls.ALPHABETICAL_LIST_WITH_PARENS: ")",
        cls.NUMBERED_LIST_PARENS_REGEX: ")",
        cls.ALPHABETICAL_LIST_WITH_PERIODS: ".",
        cls.NUMBERED_LIST_REGEX_1: ".",
    }
    iterate, scan = cls.iterate_alphabet_array, cls.scan_lists

    def iterate_alphabet_array(self: Any, regex: str, parens: bool = False, roman_numeral: bool = False) -> Any:
        need = needs.get(regex)
        if need is not None and need not in self.text:
            return self.text
        return iterate(self, regex, parens=parens, roman_numeral=roman_numeral)

    def scan_lists(self: Any, regex1: str, regex2: str, replacement: str, strip: bool = False) -> None:
        need = needs.get(regex1)
        if need is not None and need not in self.text:
            return
        scan(self, regex1, regex2, replacement, strip=strip)

    iterate_alphabet_array.__wrapped__ = iterate  # type: ignore[attr-defined]
    scan_lists.__wrapped__ = scan  # type: ignore[attr-defined]
    cls.iterate_alphabet_array = iterate_alphabet_array
    cls.scan_lists = scan_lists


_abbr_tables: dict[int, tuple[list[str], dict[str, list[int]], tuple[int, ...]]] = {}


def _abbreviations_present(abbreviations: list[str], lowered: str) -> list[str]:
    """``[a for a in abbreviations if a.strip() + "." in lowered]``, found from the periods of ``lowered``.

    Every such needle ends with a period, so it occurs iff it equals the
    slice of its length ending at one of the text's periods: a few slices
    per period instead of one substring scan per abbreviation.
    """
    table = _abbr_tables.get(id(abbreviations))
    if table is None or table[0] is not abbreviations:
        by_needle: dict[str, list[int]] = {}
        for i, a in enumerate(abbreviations):
            by_needle.setdefault(a.strip() + ".", []).append(i)
        table = (abbreviations, by_needle, tuple(sorted({len(n) for n in by_needle})))
        _abbr_tables[id(abbreviations)] = table
    _, by_needle, lengths = table
    seen: set[str] = set()
    dot = lowered.find(".")
    while dot >= 0:
        end = dot + 1
        for n in lengths:
            if n > end:
                break
            seen.add(lowered[end - n : end])
        dot = lowered.find(".", end)
    hits = sorted(i for needle in seen for i in by_needle.get(needle, ()))
    return [abbreviations[i] for i in hits]


def _mask(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        s = m.group(0)
        # keep a trailing sentence-ending dot outside the mask ("see x.io/a.")
        core = s.rstrip(".,;:!?)")
        return _MASK_CHAR * len(core) + s[len(core) :]

    return _PROTECT.sub(repl, text)


def _blocks(masked: str) -> list[str]:
    """``masked`` cut into consecutive blocks of about ``_BLOCK_CHARS``, where pysbd splits anyway.

    A cut falls, by preference, at a blank line (a paragraph end), at a line
    break (every sentence ends at one: :func:`_split_newlines`), after a
    plain word that ends a sentence before a capital ("... over. The"), else
    at white space; a token is never cut (a long token makes a long block).
    A cut after any period would lose pysbd's context: "Dr. | Smith" or a
    list's "2. | Budget" came out as a sentence of their own.
    """
    blocks = []
    start = 0
    floor = _BLOCK_CHARS // 4
    while len(masked) - start > _BLOCK_CHARS:
        window = masked[start : start + _BLOCK_CHARS]
        cut = -1
        for pattern in (_PARAGRAPH_END, _LINE_END, _WORD_END):
            ends = [m.end() for m in pattern.finditer(window) if _plain_end(m)]
            if ends and ends[-1] > floor:
                cut = start + ends[-1]
                break
        if cut < 0:
            spaces = [m.end() for m in _SPACE.finditer(window)]
            if spaces:
                cut = start + spaces[-1]
            else:
                m = _SPACE.search(masked, start + _BLOCK_CHARS)
                cut = m.end() if m else len(masked)
        blocks.append(masked[start:cut])
        start = cut
    if start < len(masked):
        blocks.append(masked[start:])
    return blocks


def _plain_end(m: re.Match[str]) -> bool:
    """Whether a block may end at ``m``: always for a line break; after a word, unless pysbd knows it as an abbreviation."""
    word = m.groupdict().get("word")
    return word is None or word.lower() not in _abbreviations()


@lru_cache(maxsize=1)
def _abbreviations() -> frozenset[str]:
    from pysbd.lang.english import English

    return frozenset(a.strip().lower() for a in English.Abbreviation.ABBREVIATIONS)


def sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Return ``(start, end)`` offsets of each sentence of ``text``.

    Offsets index the original string; leading and trailing white space of a
    sentence is excluded. Text without any terminal punctuation is one
    sentence; blank text has none.
    """
    # short texts recur (greetings, acknowledgements) and are cached; long ones are
    # not, so the cache stays small (4,096 texts of up to 200k characters would be 800 MB)
    return _cached_spans(text) if len(text) <= _CACHE_MAX_CHARS else _spans(text)


_CACHE_MAX_CHARS = 2_000


@lru_cache(maxsize=4096)
def _cached_spans(text: str) -> tuple[tuple[int, int], ...]:
    return _spans(text)


# [D] a fast path: text with no sentence boundary before its final punctuation is one
# sentence, whatever pysbd would do with abbreviations (~0.5 ms a call saved, and most
# chat turns are one sentence). Anything that might be a boundary or a list marker
# (., !, ?, …, ;, :, ), newlines, CJK stops, bullets) sends the text to pysbd.
_MAYBE_BOUNDARY = re.compile(r"[.!?…;:)\"“”\n\r。！？•]|(?:^|\s)['‘’]|['‘’](?:\s|$)")
_ONE_SENTENCE = re.compile(r"(?P<body>.*?\w)(?:\.|\.\.\.|…|!+|\?+|\?!|!\?)?", re.DOTALL)


def _spans(text: str) -> tuple[tuple[int, int], ...]:
    if not text or text.isspace():
        return ()
    masked = _mask(text)
    one = _ONE_SENTENCE.fullmatch(masked.strip())
    if one is not None and not _MAYBE_BOUNDARY.search(one.group("body")):
        start = len(masked) - len(masked.lstrip())
        return ((start, len(masked.rstrip())),)
    spans: list[tuple[int, int]] = []
    cursor = 0
    seg = _segmenter()
    for piece in (p for block in _blocks(masked) for p in _sentences(seg, block)):
        stripped = piece.strip()
        if not stripped:
            continue
        pos = masked.find(stripped, cursor)
        if pos < 0:  # the splitter altered the text: fall back to what is left
            pos = cursor
            while pos < len(masked) and masked[pos].isspace():
                pos += 1
            end = len(masked.rstrip())
            if end > pos:
                spans.append((pos, end))
            cursor = len(masked)
            break
        spans.append((pos, pos + len(stripped)))
        cursor = pos + len(stripped)
    rest = masked[cursor:].strip()
    if rest:  # anything the splitter dropped is kept as a last sentence
        pos = masked.find(rest, cursor)
        spans.append((pos, pos + len(rest)))
    return tuple(_split_newlines(text, spans))


def _split_newlines(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Split further at blank lines and line breaks that end a line without
    punctuation (chat messages often use newlines instead of full stops)."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        seg_start = start
        for m in re.finditer(r"\n+", text[start:end]):
            cut = start + m.start()
            piece = text[seg_start:cut]
            if piece.strip():
                lead = len(piece) - len(piece.lstrip())
                out.append((seg_start + lead, seg_start + len(piece.rstrip())))
            seg_start = start + m.end()
        piece = text[seg_start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((seg_start + lead, seg_start + len(piece.rstrip())))
    return out


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences, offline (no downloaded data).

    Handles abbreviations, decimals, URLs, e-mail addresses, emoji, ellipses,
    line breaks and text with no punctuation at all.

    >>> split_sentences("Dr. Smith paid $3.50. See https://x.io/a?b=1 now!")
    ['Dr. Smith paid $3.50.', 'See https://x.io/a?b=1 now!']
    """
    return [text[a:b] for a, b in sentence_spans(text)]
