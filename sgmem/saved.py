"""A :class:`sgmem.Memory` as saved data, and reopened from it: what adapters' ``to_dict`` and pickling write.

An adapter that holds a Memory is saved as its own settings plus
:func:`reference`: where the store is and the :class:`sgmem.Config` it was
opened with (a plain dict, :func:`config_to_dict`). :func:`reopen` gives the
Memory back: the one this process already has open on that store (one store,
one set of caches), else a new one with the saved configuration.

Secrets are never written:

* A directory store is saved by its path.
* A PostgreSQL store is saved by its connection URL (or libpq ``key=value``
  string) *with its password removed*. Reopening it in another process takes
  the password where libpq looks for one (``PGPASSWORD``, ``~/.pgpass``, a
  peer or certificate login), or from the environment variable
  ``SGMEM_STORE_URL`` when that holds the full URL of the same store (same
  URL once its password is removed); a URL from elsewhere is never used.
* ``Config.pg_scope_key`` is left out; reopening a store that needs it reads
  it from ``SGMEM_PG_SCOPE_KEY``, else refuses, saying so.

An in-memory store (``sgmem.Memory()``) has nothing to reopen: saving it is
refused at once with the reason.
"""

from __future__ import annotations

import dataclasses
import os
import re
import typing
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from .config import Config
from .errors import InvalidInputError, SgmemError

__all__ = ["SCOPE_KEY_ENV", "URL_ENV", "config_from_dict", "config_to_dict", "reference", "remember", "reopen"]

#: The environment variable that may hold a saved PostgreSQL store's full URL (with its password).
URL_ENV = "SGMEM_STORE_URL"
#: The environment variable that holds ``Config.pg_scope_key`` when a saved store needs it.
SCOPE_KEY_ENV = "SGMEM_PG_SCOPE_KEY"
#: Config fields never saved (secrets).
_SECRET_FIELDS = ("pg_scope_key",)

_OPEN: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
_KV_PASSWORD = re.compile(r"\s*\b(?:ssl)?password\s*=\s*(?:'(?:[^'\\]|\\.)*'|\S*)", re.IGNORECASE)


# ------------------------------------------------------------------ config
def config_to_dict(config: Config) -> dict[str, Any]:
    """``config`` as plain JSON values (nested settings as dicts, tuples as lists), without secrets."""
    data = dataclasses.asdict(config)
    for name in _SECRET_FIELDS:
        if data.get(name) is not None:
            data[name] = None
            data[f"{name}_set"] = True  # reopening needs it (from SCOPE_KEY_ENV)
    return _plain(data)  # type: ignore[no-any-return]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def config_from_dict(data: Any, field: str = "config") -> Config:
    """The :class:`Config` :func:`config_to_dict` wrote (every value checked again by ``Config``).

    Raises:
        InvalidInputError: not such a dict, or a setting this sgmem does not know (saved by a newer one).
    """
    data = dict(_check_dict(data, field))
    for name in _SECRET_FIELDS:
        if data.pop(f"{name}_set", False):
            secret = os.environ.get(SCOPE_KEY_ENV)
            if not secret:
                raise SgmemError(
                    f"the saved store was opened with Config.{name}, which is never saved; set the environment "
                    f"variable {SCOPE_KEY_ENV} to it, or pass memory= (an open sgmem.Memory) when restoring."
                )
            data[name] = secret
    return _build(Config, data, field)  # type: ignore[no-any-return]


def _check_dict(data: Any, field: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InvalidInputError(field, data, "the dict that sgmem.saved.config_to_dict wrote")
    return data


def _build(cls: type, data: dict[str, Any], field: str) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise InvalidInputError(
            field,
            unknown,
            f"settings of {cls.__name__}",
            "It was saved by another sgmem version; upgrade sgmem here, or pass memory= when restoring.",
        )
    defaults = cls()  # every settings class has defaults: their types say how to rebuild a value
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - an annotation that cannot be resolved here: the defaults decide
        hints = {}
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        default = getattr(defaults, name)
        if isinstance(value, dict) and dataclasses.is_dataclass(default) and not isinstance(default, type):
            value = _build(type(default), value, f"{field}.{name}")
        elif isinstance(value, list) and (isinstance(default, tuple) or _is_tuple(hints.get(name))):
            value = tuple(value)
        kwargs[name] = value
    return cls(**kwargs)


def _is_tuple(kind: Any) -> bool:
    if kind is tuple or typing.get_origin(kind) is tuple:
        return True
    return any(_is_tuple(k) for k in typing.get_args(kind)) if typing.get_origin(kind) is not None else False


# ------------------------------------------------------------------ store
def _without_password(target: str) -> str:
    """A PostgreSQL URL or libpq ``key=value`` string with every password taken out."""
    if "://" not in target:
        return _KV_PASSWORD.sub("", target).strip()
    parts = urlsplit(target)
    out = target
    if "@" in parts.netloc:
        userinfo, hosts = parts.netloc.rsplit("@", 1)
        if ":" in userinfo:
            out = out.replace(f"//{parts.netloc}", f"//{userinfo.split(':', 1)[0]}@{hosts}", 1)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if any(k.lower() in ("password", "sslpassword") for k, _ in pairs):
        query = urlencode([(k, v) for k, v in pairs if k.lower() not in ("password", "sslpassword")])
        out = out.split("?", 1)[0] + (f"?{query}" if query else "") + (f"#{parts.fragment}" if parts.fragment else "")
    return out


def _pg_target(memory: Any) -> str | None:
    """The connection string a PostgreSQL-backed Memory was opened with (its pool's, for a pool)."""
    store = memory._store
    url = getattr(store, "_url", None)
    if isinstance(url, str) and url:
        return url
    pool = getattr(store, "_pool", None)
    conninfo = getattr(pool, "conninfo", None)
    return conninfo if isinstance(conninfo, str) and conninfo else None


def _key(ref: dict[str, Any]) -> str:
    if ref.get("store_url"):
        return "url:" + str(ref["store_url"])
    return "path:" + str(Path(ref["store_path"]).expanduser().resolve())


def reference(memory: Any, owner: str) -> dict[str, Any]:
    """Where ``memory``'s store is (``store_path`` or a password-free ``store_url``) and its ``config``.

    Raises:
        SgmemError: the store is in memory, or a psycopg pool without a connection string.
    """
    config = config_to_dict(getattr(memory, "_config_given", memory.config))
    if memory.path is not None:
        return {"store_path": str(memory.path), "config": config}
    target = _pg_target(memory) if memory._where is not None else None
    if target is None:
        if memory._where is not None:
            raise SgmemError(
                f"{owner} uses a PostgreSQL store opened on a connection pool without a connection string, "
                "which cannot be reopened from a saved state. Open the store with a postgresql:// URL to save it."
            )
        raise SgmemError(
            f"{owner} uses an in-memory sgmem store (sgmem.Memory() without a path), which cannot be "
            "rebuilt from a saved state, so it cannot be serialised or pickled. Create the store with a "
            "path, e.g. sgmem.Memory('./memory'), or a postgresql:// URL to save and restore it."
        )
    return {"store_url": _without_password(target), "config": config}


def remember(memory: Any) -> None:
    """Note an open Memory, so that :func:`reopen` of its store in this process reuses it."""
    try:
        ref = reference(memory, "")
    except SgmemError:
        return
    _OPEN[_key(ref)] = memory


def reopen(ref: dict[str, Any], owner: str) -> Any:
    """The Memory ``ref`` (from :func:`reference`) names: the one open in this process, else opened now.

    Raises:
        InvalidInputError: ``ref`` names no store (saved from an in-memory store, or by an older version).
    """
    from .memory import Memory

    path, url = ref.get("store_path"), ref.get("store_url")
    if not (isinstance(path, str) and path) and not (isinstance(url, str) and url):
        raise InvalidInputError(
            f"{owner} data['store_path']",
            path,
            "the path (or store_url) of the sgmem store it was saved with",
            "It was saved by an older version or from an in-memory store; create it again with memory=...",
        )
    key = _key({"store_url": url} if url else {"store_path": path})
    found = _OPEN.get(key)
    if found is not None and not found._closed:
        return found
    config = config_from_dict(ref["config"], f"{owner} data['config']") if ref.get("config") is not None else None
    if url:
        env = os.environ.get(URL_ENV, "")
        target = env if env and _without_password(env) == url else url
        memory = Memory(target, config=config)
    else:
        memory = Memory(path, config=config)
    _OPEN[key] = memory
    return memory
