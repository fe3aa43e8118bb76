"""Canonical vocabulary and inverted index ``keyword → turns`` (ALGORITHMS §3.1–3.2).

SQLite holds the truth (migration ``0003_keywords``):

- ``vocabulary(id, scope_id, keyword, lemma, canonical_id, vec)``: one row per
  lookup form (``keyword`` keeps the words as an LLM copied them). A canonical
  entry has ``canonical_id`` NULL; an alias (a form merged into an entry: a
  shared stem, or cosine ≥ ``match_cosine``) points at its entry and is
  deleted with it.
- ``keyword_postings(keyword_id, message_id, scope_id)``: canonical entry →
  message, deleted with the message (``ON DELETE CASCADE``); entries left with
  no posting are pruned by :func:`prune` in the same transaction as the delete.

The write is planned outside the store lock (:func:`plan_keywords`: extraction,
one embedding batch for the add's new keywords, grouping) and applied inside
the add's transaction (:func:`apply_plan`), so keywords commit with the
messages or not at all. :class:`KeywordIndex` is the per-scope in-memory copy
(turn rows instead of message ids), cached on the scope's
:class:`~sgmem.retrieval.index.ScopeIndex` and extended after each add.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..prompts import PYRAMID_KEYWORD_EXTRACTION, PYRAMID_KEYWORD_GROUPING
from ..store.batch import ahead, drawn_ids, insert_with_ids
from .config import PyramidConfig
from .keywords import clean_llm_keywords, keyword_key, speaker_words, stem_key, turn_keywords
from .llmio import Usage, call_json

__all__ = [
    "Applied",
    "KeywordIndex",
    "KeywordPlan",
    "apply_plan",
    "load_keywords",
    "lookup_ahead",
    "plan_keywords",
    "prune",
]


class _Postings:
    """``KeywordIndex.rows`` restored from a saved index: each entry's turn rows as a list, made from the saved
    CSR when first asked for (an add then appends to that list); entries added since are lists from the start."""

    def __init__(self, ptr: np.ndarray, rows: np.ndarray) -> None:
        self._ptr, self._rows = ptr, rows
        self._base = len(ptr) - 1
        self._lists: dict[int, list[int]] = {}
        self._extra: list[list[int]] = []

    def __len__(self) -> int:
        return self._base + len(self._extra)

    def __getitem__(self, i: int) -> list[int]:
        if i < 0:
            i += len(self)
        if i >= self._base:
            return self._extra[i - self._base]
        got = self._lists.get(i)
        if got is None:
            got = self._lists[i] = self._rows[self._ptr[i] : self._ptr[i + 1]].tolist()
        return got

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def append(self, rows: list[int]) -> None:
        self._extra.append(rows)


class _TurnKeywords:
    """``KeywordIndex.turn_kws`` restored from a saved index: a turn's keywords made from the saved CSR when
    first asked for; the dict methods the index uses (``get``, ``setdefault``, ``len``)."""

    def __init__(self, ptr: np.ndarray, kws: np.ndarray) -> None:
        self._ptr, self._kws = ptr, kws
        self._lists: dict[int, list[int]] = {}
        self._n = int(np.count_nonzero(np.diff(ptr)))

    def _saved(self, row: int) -> list[int] | None:
        got = self._lists.get(row)
        if got is None and 0 <= row < len(self._ptr) - 1 and self._ptr[row + 1] > self._ptr[row]:
            got = self._lists[row] = self._kws[self._ptr[row] : self._ptr[row + 1]].tolist()
        return got

    def get(self, row: int, default: Any = None) -> Any:
        got = self._saved(row)
        return default if got is None else got

    def setdefault(self, row: int, default: list[int]) -> list[int]:
        got = self._saved(row)
        if got is None:
            got = self._lists[row] = default
            self._n += 1
        return got

    def __contains__(self, row: object) -> bool:
        return isinstance(row, int) and self._saved(row) is not None

    def __len__(self) -> int:
        return self._n


class KeywordIndex:
    """One scope's vocabulary and postings, over the scope's turn rows."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.ids: list[int] = []  # canonical entries: db id per local index
        self.words: list[str] = []
        self.rows: list[list[int]] = []  # postings: turn rows, ascending
        self.local: dict[int, int] = {}  # db id (canonical) -> local index
        self.lookup: dict[str, int] = {}  # lemma (canonical or alias) -> local index
        self.stems: dict[str, int] = {}  # Snowball stem of a lemma -> local index (first wins)
        self.entry_local: list[int] = []  # every vocabulary row with a vector -> local index
        self.entry_keys: list[str] = []
        self._entry_vecs: list[np.ndarray] = []
        self._mat: np.ndarray | None = None
        self.turn_kws: dict[int, list[int]] = {}  # turn row -> local keyword indexes
        self._arr: dict[int, np.ndarray] = {}

    # ------------------------------------------------------------------ views
    def __len__(self) -> int:
        return len(self.ids)

    def find(self, key: str, stems: bool) -> int | None:
        """Local index of the entry with lookup form ``key``, else (``stems``) of one sharing its stem."""
        loc = self.lookup.get(key)
        if loc is None and stems:
            loc = self.stems.get(stem_key(key))
        return loc

    def df(self, local: int) -> int:
        """Turns holding keyword ``local``."""
        return len(self.rows[local])

    def df_key(self, key: str) -> int:
        """Turns holding the keyword with lookup form ``key`` (0 if unknown)."""
        i = self.lookup.get(key)
        return len(self.rows[i]) if i is not None else 0

    def postings(self, local: int) -> np.ndarray:
        """Turn rows of keyword ``local`` as a sorted int array (cached)."""
        arr = self._arr.get(local)
        if arr is None:
            arr = np.asarray(self.rows[local], dtype=np.int64)
            self._arr[local] = arr
        return arr

    def matrix(self) -> np.ndarray:
        """(entries, dim) unit vectors of every vocabulary row (aliases included)."""
        if self._mat is None or len(self._mat) != len(self._entry_vecs):
            self._mat = (
                np.stack(self._entry_vecs).astype(np.float32)
                if self._entry_vecs
                else np.zeros((0, self.dim), dtype=np.float32)
            )
        return self._mat

    def nearest(self, vec: np.ndarray, min_cos: float) -> tuple[int, float] | None:
        """Local index and cosine of the vocabulary entry closest to ``vec`` (≥ ``min_cos``)."""
        mat = self.matrix()
        if not len(mat):
            return None
        sims = mat @ vec
        j = int(np.argmax(sims))
        return (self.entry_local[j], float(sims[j])) if sims[j] >= min_cos else None

    # ----------------------------------------------------------------- saved
    def to_arrays(self, n_turns: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The index as JSON-able fields and arrays (saved with the scope's other cache files); ``n_turns``:
        the scope's turn rows. :meth:`from_arrays` restores it without SQLite or the stemmer."""
        lens = np.fromiter((len(r) for r in self.rows), dtype=np.int64, count=len(self.rows))
        ptr = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=ptr[1:])
        rows = np.fromiter((t for r in self.rows for t in r), dtype=np.int32, count=int(ptr[-1]))
        owner = np.repeat(np.arange(len(lens), dtype=np.int32), lens)
        order = np.argsort(rows, kind="stable")  # a turn's keywords in the order they were posted
        turn_ptr = np.zeros(n_turns + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_turns)[:n_turns], out=turn_ptr[1:])
        fields: dict[str, Any] = {
            "words": self.words,
            "lookup": [list(self.lookup), list(self.lookup.values())],
            "stems": [list(self.stems), list(self.stems.values())],
            "entry_keys": self.entry_keys,
        }
        arrays: dict[str, np.ndarray] = {
            "ids": np.asarray(self.ids, dtype=np.int64),
            "rows.ptr": ptr,
            "rows.rows": rows,
            "turns.ptr": turn_ptr,
            "turns.kws": owner[order],
            "entry_local": np.asarray(self.entry_local, dtype=np.int64),
            "entry_vecs": self.matrix(),
        }
        return fields, arrays

    @classmethod
    def from_arrays(cls, dim: int, fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> KeywordIndex:
        """The index :meth:`to_arrays` saved (postings made into lists only when used)."""
        kwi = cls(dim)
        kwi.ids = arrays["ids"].tolist()
        kwi.words = list(fields["words"])
        kwi.local = dict(zip(kwi.ids, range(len(kwi.ids)), strict=True))
        kwi.lookup = dict(zip(*fields["lookup"], strict=True))
        kwi.stems = dict(zip(*fields["stems"], strict=True))
        kwi.entry_local = arrays["entry_local"].tolist()
        kwi.entry_keys = list(fields["entry_keys"])
        mat = np.array(arrays["entry_vecs"], dtype=np.float32)
        kwi._entry_vecs = list(mat)
        kwi._mat = mat
        kwi.rows = _Postings(arrays["rows.ptr"], arrays["rows.rows"])  # type: ignore[assignment]
        kwi.turn_kws = _TurnKeywords(arrays["turns.ptr"], arrays["turns.kws"])  # type: ignore[assignment]
        return kwi

    # ---------------------------------------------------------------- changes
    def _add_entry(self, db_id: int, key: str, canonical: int | None, vec: np.ndarray | None) -> None:
        if canonical is None:
            loc = len(self.ids)
            self.ids.append(db_id)
            self.words.append(key)
            self.rows.append([])
            self.local[db_id] = loc
        else:
            loc = self.local.get(canonical, -1)
            if loc < 0:
                return
        self.lookup[key] = loc
        self.stems.setdefault(stem_key(key), loc)
        if vec is not None and len(vec) == self.dim:
            self.entry_local.append(loc)
            self.entry_keys.append(key)
            self._entry_vecs.append(np.asarray(vec, dtype=np.float32))

    def _post(self, local: int, row: int) -> None:
        rows = self.rows[local]
        if rows and rows[-1] == row:
            return
        rows.append(row)
        self._arr.pop(local, None)
        self.turn_kws.setdefault(row, []).append(local)

    def extend(self, applied: Applied, msg_row: Callable[[int], int | None]) -> None:
        """Add the entries and postings one committed add created."""
        for db_id, key, canonical, vec in applied.entries:
            if canonical is None:
                self._add_entry(db_id, key, None, vec)
        for db_id, key, canonical, vec in applied.entries:
            if canonical is not None:
                self._add_entry(db_id, key, canonical, vec)
        for mid, kw_ids in applied.postings:
            row = msg_row(mid)
            if row is None:
                continue
            for kid in kw_ids:
                loc = self.local.get(kid)
                if loc is not None:
                    self._post(loc, row)


def load_keywords(
    conn: sqlite3.Connection, scope_id: int, dim: int, msg_row: Callable[[int], int | None]
) -> KeywordIndex:
    """Build a scope's :class:`KeywordIndex` from SQLite."""
    kwi = KeywordIndex(dim)
    entries = conn.execute(
        "SELECT id, lemma, canonical_id, vec FROM vocabulary WHERE scope_id = ? ORDER BY id", (scope_id,)
    ).fetchall()
    for pass_canonical in (True, False):
        for db_id, lemma, canonical, blob in entries:
            if (canonical is None) != pass_canonical:
                continue
            vec = np.frombuffer(blob, dtype=np.float32) if blob else None
            kwi._add_entry(int(db_id), lemma, None if canonical is None else int(canonical), vec)
    last, row = None, None
    for kid, mid in conn.execute(
        "SELECT keyword_id, message_id FROM keyword_postings WHERE scope_id = ? ORDER BY message_id, keyword_id",
        (scope_id,),
    ):
        if mid != last:  # one int object per turn, shared by its postings (~15 per turn, 32 B each otherwise)
            last, row = mid, msg_row(int(mid))
        loc = kwi.local.get(int(kid))
        if row is not None and loc is not None:
            kwi._post(loc, row)
    return kwi


# --------------------------------------------------------------------- write
@dataclass
class KeywordPlan:
    """Keywords of one add, matched against the vocabulary but not yet stored.

    Attributes:
        per_message: lookup forms per message, in message order (a memory's own
            keywords first, then the existing keywords it is grouped under).
        new: forms not in the vocabulary snapshot → (vector or None, the form
            of the existing/new entry it merges into, or None for a new entry).
        surface: lookup form → the words as the LLM copied them from the text
            (stored in ``vocabulary.keyword``); forms of the lexical rule are absent.
        usage: LLM calls made while planning.
    """

    per_message: list[list[str]]
    new: dict[str, tuple[np.ndarray | None, str | None]] = field(default_factory=dict)
    surface: dict[str, str] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)


@dataclass
class Applied:
    """What :func:`apply_plan` stored: entries ``(id, lemma, canonical_id, vec)`` and postings."""

    entries: list[tuple[int, str, int | None, np.ndarray | None]] = field(default_factory=list)
    postings: list[tuple[int, list[int]]] = field(default_factory=list)


def _llm_extract(
    llm: Any,
    texts: Sequence[str],
    speakers: Sequence[str | None],
    dates: Sequence[str],
    cfg: PyramidConfig,
    usage: Usage,
    surface: dict[str, str],
) -> list[list[str] | None]:
    """One extraction call per memory (§3.2 step 1); the words as written go to ``surface``."""
    out: list[list[str] | None] = []
    for text, spk, date in zip(texts, speakers, dates, strict=False):
        prompt = PYRAMID_KEYWORD_EXTRACTION.format(
            speaker=spk or "someone", date=date, text=text, limit=cfg.keywords_per_turn
        )
        raw = call_json(llm, prompt, usage, "extract")
        kws = clean_llm_keywords(raw, cfg.keywords_per_turn)
        if kws is None and raw is not None:
            usage.malformed += 1  # JSON, but not a list of strings
        if kws is not None:
            for item in raw:
                key = keyword_key(item)
                if key in kws:
                    surface.setdefault(key, " ".join(item.split())[:64])
        out.append(kws)
    return out


def plan_keywords(
    snapshot: KeywordIndex,
    n_turns: int,
    texts: Sequence[str],
    speakers: Sequence[str | None],
    dates: Sequence[str],
    cfg: PyramidConfig,
    embed: Callable[[list[str]], np.ndarray] | None,
    llm: Any = None,
) -> KeywordPlan:
    """Extract and group the keywords of an add's messages (no store access).

    With an LLM this is the paper's write path (§3.2): two calls per memory,
    extraction (words copied as written) and grouping under broader existing
    keywords; a memory whose vocabulary is still empty makes only the first.
    New forms that share a Snowball stem with an entry join it
    (``stem_match``) and, with ``match_cosine``, so do forms whose embedding
    is that close; neither costs an LLM call.

    Args:
        snapshot: the scope's vocabulary now (may be empty).
        n_turns: the scope's turns now (for IDF).
        embed: embeds keywords (unit rows); None skips vectors and cosine rules.
        llm: optional; extraction and grouping then use the prompts of
            :mod:`sgmem.prompts`, falling back to the lexical rule per message.
    """
    usage = Usage()
    surface: dict[str, str] = {}
    lexical = turn_keywords(texts, speakers, cfg.keywords_per_turn, snapshot.df_key, n_turns, cfg.speaker_keyword)
    per_message = lexical
    if llm is not None:
        got = _llm_extract(llm, texts, speakers, dates, cfg, usage, surface)
        per_message = []
        for lex, kws, spk in zip(lexical, got, speakers, strict=False):
            if kws is None:
                per_message.append(lex)
                continue
            if cfg.speaker_keyword and spk:
                kws += [w for w in speaker_words(spk) if w not in kws]
            per_message.append(kws)
    new_keys: list[str] = []
    for kws in per_message:
        for k in kws:
            if k not in snapshot.lookup and k not in new_keys:
                new_keys.append(k)
    plan = KeywordPlan(per_message, surface={k: v for k, v in surface.items() if k in new_keys}, usage=usage)
    merged: dict[str, str | None] = {k: None for k in new_keys}
    if cfg.stem_match:
        # a form sharing its stem with an entry (or an earlier new form) joins it: no embedding needed
        first_of_stem: dict[str, str] = {}
        for k in new_keys:
            loc = snapshot.stems.get(stem_key(k))
            if loc is not None:
                merged[k] = snapshot.words[loc]
            else:
                first = first_of_stem.setdefault(stem_key(k), k)
                merged[k] = first if first != k else None
    want_vecs = embed is not None and (
        cfg.match_cosine is not None or cfg.query_cosine is not None or cfg.group_cosine is not None or llm is not None
    )
    fresh = [k for k in new_keys if merged[k] is None]
    vecs = embed(fresh) if want_vecs and fresh and embed is not None else None
    vec_of = {k: vecs[i] for i, k in enumerate(fresh)} if vecs is not None else {}
    if vecs is not None and cfg.match_cosine is not None:
        merged.update({k: v for k, v in _cosine_match(fresh, vec_of, snapshot, cfg).items() if v})
        # new keywords of this add that denote the same concept merge into the first one
        firsts: list[str] = []
        for k in fresh:
            if merged[k] is not None:
                continue
            for f in firsts:
                if float(vec_of[k] @ vec_of[f]) >= cfg.match_cosine:
                    merged[k] = f
                    break
            else:
                firsts.append(k)
    _group_under(
        per_message, snapshot, cfg, embed, llm, usage, texts, speakers, dates, {k: merged[k] or k for k in new_keys}
    )
    plan.new = {k: (vec_of.get(k), merged[k]) for k in new_keys}
    return plan


def _group_under(
    per_message: list[list[str]],
    snapshot: KeywordIndex,
    cfg: PyramidConfig,
    embed: Callable[[list[str]], np.ndarray] | None,
    llm: Any,
    usage: Usage,
    texts: Sequence[str],
    speakers: Sequence[str | None],
    dates: Sequence[str],
    entry_of_new: dict[str, str],
) -> None:
    """File each memory also under existing keywords its keywords can be grouped under (§3.2 step 2).

    The memory keeps every keyword of its own, in order; the keywords appended
    are taken from the vocabulary as it is when the memory arrives: the
    scope's entries before this add and those of this add's earlier messages.
    With an LLM (write-time keyword calls, ``llm_keywords``) this is always
    on: one grouping call per memory
    (:data:`sgmem.prompts.PYRAMID_KEYWORD_GROUPING`) shows the
    ``llm_candidates`` entries closest to its keywords and appends what the
    model appends, in its order; output it cannot use falls back to the rule
    for that memory. [D] The rule, without an LLM: "can be grouped under" is a
    keyword embedding cosine ≥ ``group_cosine`` (``None``: no rule).
    Either way at most ``group_max`` keywords per memory.
    """
    if llm is None and (cfg.group_cosine is None or embed is None):
        return
    keys = list(dict.fromkeys(k for kws in per_message for k in kws))
    if not keys:
        return
    # the pool a memory may be grouped under: entry words with their vectors (vocabulary rows, then this add's)
    snap_mat = snapshot.matrix()
    pool_words = [snapshot.words[loc] for loc in snapshot.entry_local]
    in_pool = set(pool_words)
    has_vecs = embed is not None and (len(snap_mat) > 0 or bool(entry_of_new))
    key_vecs = embed(keys) if has_vecs and embed is not None else None
    row = {k: i for i, k in enumerate(keys)}
    unvectored = [w for w in snapshot.words if w not in in_pool] if llm is not None else []
    added: list[str] = []  # entries created by earlier messages of this add
    for i, kws in enumerate(per_message):
        own = list(dict.fromkeys(kws))
        if own:
            extra_words = [w for w in added if w not in own]
            if key_vecs is not None and extra_words:
                extra = np.stack([key_vecs[row[w]] for w in extra_words])
                mat = np.concatenate([snap_mat, extra]) if len(snap_mat) else extra
            else:
                mat = snap_mat if key_vecs is not None else np.zeros((0, 1), dtype=np.float32)
            words = pool_words + extra_words if key_vecs is not None else []
            sims = key_vecs[[row[k] for k in own]] @ mat.T if key_vecs is not None and len(mat) else None
            chosen: list[str] | None = None
            if llm is not None:
                fallback = [w for w in unvectored + added if w not in own and w not in words]
                chosen = _llm_group(llm, own, words, sims, fallback, i, texts, speakers, dates, cfg, usage)
            if chosen is None and cfg.group_cosine is not None and sims is not None:
                best: dict[str, float] = {}
                for a, j in zip(*np.nonzero(sims >= cfg.group_cosine), strict=True):
                    w = words[int(j)]
                    if w not in own and float(sims[a, j]) > best.get(w, -1.0):
                        best[w] = float(sims[a, j])
                chosen = sorted(best, key=lambda w: -best[w])
            if chosen:
                kws.extend(chosen[: cfg.group_max])
        for k in own:
            entry = entry_of_new.get(k)
            if entry is not None and entry not in added and entry not in in_pool:
                added.append(entry)


def _llm_group(
    llm: Any,
    own: list[str],
    words: list[str],
    sims: np.ndarray | None,
    fallback: list[str],
    i: int,
    texts: Sequence[str],
    speakers: Sequence[str | None],
    dates: Sequence[str],
    cfg: PyramidConfig,
    usage: Usage,
) -> list[str] | None:
    """One grouping call for a memory: the entries the model appends, in its order; None when unusable."""
    shown: list[str] = []
    if sims is not None:
        per_key = max(1, cfg.llm_candidates // max(len(own), 1))
        for a in range(len(own)):
            for j in np.argsort(-sims[a])[:per_key]:
                w = words[int(j)]
                if w not in own and w not in shown:
                    shown.append(w)
    # entries without a vector (stored before vectors were kept, or no embedder) are shown after the closest
    shown += [w for w in fallback if w not in shown]
    shown = shown[: cfg.llm_candidates]
    if not shown:
        return []  # nothing to group under: no call
    prompt = PYRAMID_KEYWORD_GROUPING.format(
        speaker=speakers[i] or "someone",
        date=dates[i],
        text=texts[i],
        keywords="\n".join(f"- {k}" for k in own),
        vocabulary="\n".join(f"- {w}" for w in shown),
    )
    raw = call_json(llm, prompt, usage, "group")
    total = raw.get("total") if isinstance(raw, dict) else raw
    if not isinstance(total, list):
        if raw is not None:
            usage.malformed += 1
        return None
    allowed = set(shown)
    out: list[str] = []
    for item in total:
        t = keyword_key(item) if isinstance(item, str) else ""
        if t in allowed and t not in own and t not in out:
            out.append(t)  # only database keywords are appended; the memory's own are kept as extracted
    return out


def _cosine_match(
    keys: list[str], vec_of: dict[str, np.ndarray], snapshot: KeywordIndex, cfg: PyramidConfig
) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    if cfg.match_cosine is None:
        return {k: None for k in keys}
    for k in keys:
        hit = snapshot.nearest(vec_of[k], cfg.match_cosine) if k in vec_of else None
        out[k] = snapshot.words[hit[0]] if hit else None
    return out


_INSERT_VOCABULARY = "INSERT INTO vocabulary (scope_id, keyword, lemma, canonical_id, vec) VALUES (?, ?, ?, ?, ?)"
_INSERT_VOCABULARY_ID = (
    "INSERT INTO vocabulary (id, scope_id, keyword, lemma, canonical_id, vec) VALUES (?, ?, ?, ?, ?, ?)"
)


def _blob(vec: np.ndarray | None) -> bytes | None:
    return np.ascontiguousarray(vec, dtype=np.float32).tobytes() if vec is not None else None


def lookup_ahead(conn: Any, scope_id: int, plan: KeywordPlan) -> Callable[[], list[Any]]:
    """Send the look-up of a plan's keywords in the scope's vocabulary (:func:`apply_plan` reads it): on
    PostgreSQL it goes with the add's first read (:func:`sgmem.store.batch.ahead`)."""
    keys = sorted({k for kws in plan.per_message for k in kws} | {t for _, t in plan.new.values() if t})
    parts = []
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        marks = ",".join("?" * len(chunk))
        parts.append(
            ahead(
                conn,
                f"SELECT lemma, id, canonical_id FROM vocabulary WHERE scope_id = ? AND lemma IN ({marks})",
                (scope_id, *chunk),
            )
        )
    return lambda: [r for part in parts for r in part()]


def apply_plan(
    conn: sqlite3.Connection,
    scope_id: int,
    message_ids: Sequence[int],
    plan: KeywordPlan,
    consecutive_ids: bool = False,
    found: Callable[[], list[Any]] | None = None,
) -> Applied:
    """Store a plan's vocabulary entries and postings (inside the add's transaction).

    ``consecutive_ids``: the store gives rows inserted together consecutive
    ids (SQLite, :mod:`sgmem.store.batch`): the new entries go in one statement.
    A store that draws ids ahead (PostgreSQL) inserts every new entry with
    them, in one statement. ``found``: the look-up sent ahead (:func:`lookup_ahead`).
    """
    applied = Applied()
    resolved: dict[str, int] = {}  # lemma -> canonical db id
    for lemma, db_id, canonical in (found or lookup_ahead(conn, scope_id, plan))():
        resolved[lemma] = int(canonical if canonical is not None else db_id)
    drawn = drawn_ids(conn, "vocabulary", sum(1 for key in plan.new if key not in resolved))
    pending: list[tuple[Any, ...]] = []

    def insert(key: str, canonical: int | None, vec: np.ndarray | None) -> int:
        if drawn is not None:  # its id drawn ahead: the row goes with the others below
            db_id = drawn.pop(0)
            pending.append((db_id, scope_id, plan.surface.get(key, key), key, canonical, _blob(vec)))
        else:
            cur = conn.execute(_INSERT_VOCABULARY, (scope_id, plan.surface.get(key, key), key, canonical, _blob(vec)))
            db_id = int(cur.lastrowid)  # type: ignore[arg-type]
        applied.entries.append((db_id, key, canonical, vec))
        return db_id

    # new entries first (one executemany: SQLiteStore.consecutive_ids), then aliases (whose targets may be new
    # entries of this add)
    first = [
        (key, vec)
        for key, (vec, target) in plan.new.items()
        if key not in resolved and (target is None or target == key)
    ]
    if consecutive_ids and drawn is None:
        values = [(scope_id, plan.surface.get(key, key), key, None, _blob(vec)) for key, vec in first]
        for (key, vec), db_id in zip(
            first, insert_with_ids(conn, "vocabulary", _INSERT_VOCABULARY, values), strict=True
        ):
            applied.entries.append((db_id, key, None, vec))
            resolved[key] = db_id
    else:
        for key, vec in first:
            resolved[key] = insert(key, None, vec)
    for key, (vec, target) in plan.new.items():
        if key in resolved:
            continue
        canonical = resolved.get(target) if target is not None else None
        if canonical is None:
            resolved[key] = insert(key, None, vec)
        else:
            insert(key, canonical, vec)
            resolved[key] = canonical
    if pending:  # in order: an alias follows the entry it names
        conn.executemany(_INSERT_VOCABULARY_ID, pending)
    rows: list[tuple[int, int, int]] = []
    for mid, kws in zip(message_ids, plan.per_message, strict=False):
        ids = list(dict.fromkeys(resolved[k] for k in kws if k in resolved))
        applied.postings.append((mid, ids))
        rows += [(kid, mid, scope_id) for kid in ids]
    conn.executemany("INSERT OR IGNORE INTO keyword_postings (keyword_id, message_id, scope_id) VALUES (?, ?, ?)", rows)
    return applied


def prune(conn: sqlite3.Connection, scope_id: int) -> int:
    """Delete vocabulary entries of ``scope_id`` left with no posting (and their aliases)."""
    before = conn.total_changes
    conn.execute(
        "DELETE FROM vocabulary WHERE scope_id = ? AND canonical_id IS NULL AND NOT EXISTS "
        "(SELECT 1 FROM keyword_postings p WHERE p.scope_id = vocabulary.scope_id AND p.keyword_id = vocabulary.id)",
        (scope_id,),
    )
    return conn.total_changes - before
