"""LangGraph store semantics the adapter must reproduce: namespaces, filters, item text.

These follow ``langgraph.store.memory.InMemoryStore`` (the reference
implementation) so that :class:`~langchain_sgmem.SGMemStore` and it agree:
exact-match filters with nested dicts and lists, the ``$eq $ne $gt $gte $lt
$lte`` operators, and prefix/suffix namespace conditions with ``"*"``
wildcards.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import InvalidNamespaceError, MatchCondition, get_text_at_path, tokenize_path

from sgmem import InvalidInputError, Memory

from .wrappers import SGMemEmbeddings

__all__ = [
    "DEFAULT_INDEX",
    "INDEX_KEYS",
    "MAX_VALUE_DEPTH",
    "OPERATORS",
    "check_filter",
    "check_value",
    "decode_vectors",
    "encode_vector",
    "field_texts",
    "matches_condition",
    "matches_filter",
    "namespace_to_scope",
    "render_value",
    "resolve_index",
    "scope_to_namespace",
    "tokenize_fields",
]

#: The keys of LangGraph's ``IndexConfig`` the store honours.
INDEX_KEYS = ("dims", "embed", "fields")
#: ``index`` not given: the Memory's embedder, the whole value (``"$"``) unless ``fields`` says otherwise.
DEFAULT_INDEX: Any = object()
#: Deepest nesting of a stored value (JSON encoders recurse; Python's limit is ~1,000 frames).
MAX_VALUE_DEPTH = 100

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_SEP = "."


# ------------------------------------------------------------------ namespaces
def namespace_to_scope(namespace: tuple[str, ...]) -> str:
    """The sgmem scope of a namespace: its labels joined with ``"."``.

    Reversible because labels may not contain ``"."`` or be empty.

    Raises:
        InvalidNamespaceError: an empty namespace or a bad label.
    """
    if not isinstance(namespace, tuple) or not namespace:
        raise InvalidNamespaceError(
            f"Namespace must be a non-empty tuple of strings, got {namespace!r}. Example: ('users', 'alice')."
        )
    for label in namespace:
        if not isinstance(label, str) or not label or _SEP in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace!r}: labels must be non-empty strings "
                "without '.' or NUL (SGMemStore maps a namespace to the sgmem scope of its labels joined by '.')."
            )
    return _SEP.join(namespace)


def scope_to_namespace(scope: str) -> tuple[str, ...] | None:
    """The namespace a scope encodes, or ``None`` if no namespace maps to it."""
    labels = tuple(scope.split(_SEP))
    return None if any(not label for label in labels) else labels


def matches_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` satisfies a prefix or suffix condition (``"*"`` matches any label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise InvalidInputError("match_type", condition.match_type, "'prefix' or 'suffix'")
    return all(p == "*" or n == p for n, p in pairs)


# --------------------------------------------------------------------- filters
def check_filter(filter: Any, field: str = "filter") -> None:
    """Refuse a filter that is not a dict or uses an unknown ``$`` operator."""
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise InvalidInputError(field, filter, "a dict such as {'status': 'active'} or {'score': {'$gt': 4}}")
    for key, value in filter.items():
        if isinstance(value, Mapping):
            for op in value:
                if isinstance(op, str) and op.startswith("$") and op not in OPERATORS:
                    raise InvalidInputError(f"{field}[{key!r}]", op, f"one of the operators {', '.join(OPERATORS)}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _compare(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    # ordering: numbers with numbers, strings with strings; anything else never matches
    if _number(value) and _number(operand):
        a, b = float(value), float(operand)
    elif isinstance(value, str) and isinstance(operand, str):
        a, b = value, operand  # type: ignore[assignment]
    else:
        return False
    if operator == "$gt":
        return a > b
    if operator == "$gte":
        return a >= b
    if operator == "$lt":
        return a < b
    return a <= b  # $lte


def _matches_value(value: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in expected):
            return all(_compare(value, op, operand) for op, operand in expected.items())
        if not isinstance(value, Mapping):
            return False
        return all(_matches_value(value.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(expected)
            and all(_matches_value(a, b) for a, b in zip(value, expected, strict=True))
        )
    return bool(value == expected)


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether an item's value satisfies every condition of ``filter``."""
    if not filter:
        return True
    return all(_matches_value(value.get(key), expected) for key, expected in filter.items())


# ------------------------------------------------------------------ item text
def tokenize_fields(fields: list[str]) -> list[tuple[str, Any]]:
    """Index field paths, tokenized once (``"$"`` means the whole value)."""
    return [(f, f if f == "$" else tokenize_path(f)) for f in fields]


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def render_value(value: Mapping[str, Any], fields: list[tuple[str, Any]]) -> str:
    """The text sgmem indexes for an item: the chosen fields of its value.

    ``"$"`` renders the whole value as ``field: value`` lines (strings
    unquoted, other values as JSON), which reads well in a context block;
    other paths contribute the text LangGraph would embed for them.
    """
    parts: list[str] = []
    for path, tokens in fields:
        if path == "$":
            parts.extend(f"{k}: {_scalar(v)}" for k, v in value.items() if v is not None and v != "")
        else:
            parts.extend(get_text_at_path(dict(value), tokens))
    return "\n".join(p for p in parts if p.strip())


def field_texts(value: Mapping[str, Any], fields: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    """``(path, text)`` pairs to embed for an item, exactly as LangGraph's ``InMemoryStore`` does.

    Each configured path yields the texts :func:`langgraph.store.base.get_text_at_path`
    finds (``"$"`` is the whole value as JSON); a path matching several
    texts names them ``path.0``, ``path.1``, …; a path matching nothing yields none.
    """
    out: list[tuple[str, str]] = []
    for path, tokens in fields:
        texts = get_text_at_path(dict(value), tokens)
        if len(texts) > 1:
            out.extend((f"{path}.{i}", t) for i, t in enumerate(texts))
        elif texts:
            out.append((path, texts[0]))
    return out


# ---------------------------------------------------------------------- values
def _where(field: str, path: list[Any]) -> str:
    return field + "".join(f"[{p!r}]" for p in path)


def check_value(value: Any, field: str = "value") -> None:
    """Refuse a value that would not be stored and replayed exactly, naming the part that is wrong.

    Accepted: a dict with string keys whose values are dicts (string keys),
    lists, strings (valid Unicode), finite floats, ints, bools and ``None``,
    nested at most :data:`MAX_VALUE_DEPTH` deep — what JSON replays equal.

    Raises:
        InvalidInputError: naming the offending part, e.g. ``value['tags'][2]``.
    """
    if not isinstance(value, dict):
        raise InvalidInputError(field, value, "a dict with string keys, or None to delete")
    stack: list[tuple[Any, list[Any]]] = [(value, [])]
    while stack:
        v, path = stack.pop()
        if len(path) > MAX_VALUE_DEPTH:
            raise InvalidInputError(
                _where(field, path[:3]) + "…", "<deeper>", f"values nested at most {MAX_VALUE_DEPTH} levels deep"
            )
        if isinstance(v, dict):
            for k, item in v.items():
                if not isinstance(k, str):
                    raise InvalidInputError(
                        _where(field, path),
                        k,
                        "dict keys that are strings",
                        f"JSON would replay the key {k!r} as {json.dumps(str(k))}; convert it with str().",
                    )
                _check_text(k, _where(field, path) + f" key {k!r}")
                stack.append((item, [*path, k]))
        elif isinstance(v, list):
            stack.extend((item, [*path, i]) for i, item in enumerate(v))
        elif isinstance(v, str):
            _check_text(v, _where(field, path))
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise InvalidInputError(_where(field, path), v, "a finite number (JSON has no NaN or infinity)")
        elif v is None or isinstance(v, (bool, int)):
            continue
        elif isinstance(v, tuple):
            raise InvalidInputError(
                _where(field, path), v, "a list", "A tuple would be replayed as a list; store a list."
            )
        else:
            raise InvalidInputError(
                _where(field, path),
                v,
                "a JSON value: dict, list, str, int, float, bool or None",
                f"Convert the {type(v).__name__} to one of these first.",
            )


def _check_text(text: str, field: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            field,
            text,
            "text that is valid Unicode",
            f"It contains a lone surrogate at position {exc.start}; decode the source text correctly.",
        ) from None


# --------------------------------------------------------------------- vectors
def encode_vector(vec: np.ndarray) -> str:
    """A float32 vector as base64 text (kept in the item's JSON record, read back bit-exact)."""
    return base64.b64encode(np.ascontiguousarray(vec, dtype="<f4").tobytes()).decode("ascii")


def decode_vectors(encoded: list[str], dims: int) -> np.ndarray | None:
    """The ``(n, dims)`` float32 matrix of :func:`encode_vector` texts, or ``None`` if they are not ``dims`` wide."""
    raw = b"".join(base64.b64decode(e) for e in encoded)
    if not encoded or len(raw) != 4 * dims * len(encoded):
        return None
    return np.frombuffer(raw, dtype="<f4").reshape(len(encoded), dims)


# ---------------------------------------------------------------- index config
def resolve_index(memory: Memory, index: Any, fields: Any) -> dict[str, Any] | None:
    """The store's index config from its ``index``/``fields`` arguments (``None``: key-value only).

    ``embed`` left out means the Memory's embedder (wrapped as LangChain
    ``Embeddings``), and ``dims`` its dimension; a :class:`sgmem.Embedder` is
    wrapped likewise. Raises :class:`sgmem.InvalidInputError` for a bad config.
    """
    if fields is not None and (
        isinstance(fields, str) or not isinstance(fields, list) or not fields
        or not all(isinstance(f, str) and f for f in fields)
    ):  # fmt: skip
        raise InvalidInputError("fields", fields, "a non-empty list of value paths, e.g. ['text'] or ['$']")
    if index is None:
        if fields is not None:
            raise InvalidInputError("fields", fields, "None when index=None (a key-value store embeds nothing)")
        return None
    if index is DEFAULT_INDEX:
        index = {}
    if not isinstance(index, Mapping):
        raise InvalidInputError("index", index, "None or a dict {'dims': int, 'embed': ..., 'fields': [...]}")
    unknown = sorted(set(index) - set(INDEX_KEYS), key=str)
    if unknown:
        raise InvalidInputError("index", unknown, f"only the keys {list(INDEX_KEYS)}")
    if fields is not None and index.get("fields") is not None:
        raise InvalidInputError("fields", fields, "None when index has 'fields' (give them once)")
    cfg = dict(index)
    paths = cfg.get("fields") if cfg.get("fields") is not None else (fields or ["$"])
    if isinstance(paths, str) or not isinstance(paths, list) or not paths:
        raise InvalidInputError("index['fields']", paths, "a non-empty list of value paths, e.g. ['text']")
    if not all(isinstance(p, str) and p for p in paths):
        raise InvalidInputError("index['fields']", paths, "non-empty strings (LangGraph value paths)")
    cfg["fields"] = list(paths)
    embed = cfg.get("embed")
    if embed is None:
        cfg["embed"] = SGMemEmbeddings(memory.embedder)
        cfg.setdefault("dims", int(memory.embedder.dim))
    elif all(hasattr(embed, a) for a in ("embed", "name", "dim")) and not isinstance(embed, Embeddings):
        cfg["embed"] = SGMemEmbeddings(embed)  # a sgmem.Embedder
        cfg.setdefault("dims", int(embed.dim))
    dims = cfg.get("dims")
    if isinstance(dims, bool) or not isinstance(dims, (int, np.integer)) or int(dims) < 1:
        raise InvalidInputError("index['dims']", dims, "a positive int: the length of the embedding vectors")
    cfg["dims"] = int(dims)
    return cfg
