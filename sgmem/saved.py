"""A :class:`sgmem.Memory` as saved data, and reopened from it: what adapters' ``to_dict`` and pickling write.

An adapter that holds a Memory is saved as its own settings plus
:func:`reference`: where the store is and the :class:`sgmem.Config` it was
opened with (a plain dict, :func:`config_to_dict`). :func:`reopen` gives the
Memory back: the one this process already has open on that store (one store,
one set of caches), else a new one with the saved configuration.

Saved state is data that may come from elsewhere (a pickle, a workflow
``Context``, a JSON file), so it only *names* a store; it never decides what
is connected to or created. A store is reopened only when this process
already has it open, when the application allowed it (:func:`allow`), or when
the environment variable ``SGMEM_STORE_URL`` names it (a URL or a directory);
it is then opened with the application's own text, never the saved one.
Anything else is refused with an :class:`SgmemError` before any connection
or file is made: a crafted ``store_url`` cannot send ``PGPASSWORD`` to
another host, a crafted ``store_path`` cannot create a directory.

Secrets are never written:

* A directory store is saved by its path.
* A PostgreSQL store is saved by its connection URL (or libpq ``key=value``
  string) *with its password removed* (read as libpq reads it:
  :mod:`sgmem.targets`). Reopening it in another process uses the
  URL the application allowed or put in ``SGMEM_STORE_URL`` (same URL once
  its password is removed), with its password, else where libpq looks for
  one (``PGPASSWORD``, ``~/.pgpass``, a peer or certificate login).
* ``Config.pg_scope_key`` is left out; reopening a store that needs it reads
  it from ``SGMEM_PG_SCOPE_KEY``, else refuses, saying so.

An in-memory store (``sgmem.Memory()``) has nothing to reopen: saving it is
refused at once with the reason.
"""

from __future__ import annotations

import dataclasses
import os
import typing
import weakref
from pathlib import Path
from typing import Any

from .config import Config
from .errors import InvalidInputError, SgmemError
from .targets import is_postgres_target, redact, without_passwords

__all__ = ["SCOPE_KEY_ENV", "URL_ENV", "allow", "config_from_dict", "config_to_dict", "reference", "remember", "reopen"]

#: The environment variable that may hold a saved PostgreSQL store's full URL (with its password).
URL_ENV = "SGMEM_STORE_URL"
#: The environment variable that holds ``Config.pg_scope_key`` when a saved store needs it.
SCOPE_KEY_ENV = "SGMEM_PG_SCOPE_KEY"
#: Config fields never saved (secrets).
_SECRET_FIELDS = ("pg_scope_key",)

_OPEN: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
_ALLOWED: dict[str, Any] = {}  # store key -> what opens it, as the application gave it (sgmem.saved.allow)


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
def _pg_target(memory: Any) -> str | None:
    """The connection string a PostgreSQL-backed Memory was opened with (its pool's, for a pool)."""
    store = memory._store
    url = getattr(store, "_url", None)
    if isinstance(url, str) and url:
        return url
    pool = getattr(store, "_pool", None)
    conninfo = getattr(pool, "conninfo", None)
    return conninfo if isinstance(conninfo, str) and conninfo else None


def _path_key(path: Any) -> str:
    try:
        return "path:" + str(Path(path).expanduser().resolve())
    except (RuntimeError, OSError, ValueError):  # "~nouser/x", a NUL: as written (it matches nothing allowed)
        return "path:" + str(path)


def _key(ref: dict[str, Any]) -> str:
    if ref.get("store_url"):
        return "url:" + without_passwords(str(ref["store_url"]))
    return _path_key(ref["store_path"])


def _target_key(target: Any, field: str) -> tuple[str, Any]:
    """The key of a store the application names (a path or a PostgreSQL URL) and what opens it."""
    if isinstance(target, str) and is_postgres_target(target):
        return "url:" + without_passwords(target), target
    if isinstance(target, (str, os.PathLike)) and str(target):
        return _path_key(target), Path(target)
    raise InvalidInputError(field, target, "a store directory path or a postgresql:// URL (or libpq key=value string)")


def allow(*stores: str | os.PathLike[str]) -> None:
    """Let saved adapter state reopen these stores in this process (and only stores the application names).

    Restoring an adapter (``from_dict``, unpickling, a workflow ``Context``)
    reopens the store its saved state names only when this process already
    has it open, when it was allowed here, or when ``SGMEM_STORE_URL`` names
    it. A store allowed by its full URL is opened with that URL (its password
    included); the saved state's own text is never connected to.

    Args:
        stores: store directories, or PostgreSQL URLs / libpq strings (with their passwords, if any).

    Raises:
        InvalidInputError: one is neither a path nor a connection string (nothing is allowed then).
    """
    keyed = [_target_key(s, "stores") for s in stores]
    for key, target in keyed:
        _ALLOWED[key] = target


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
    return {"store_url": without_passwords(target), "config": config}


def remember(memory: Any) -> None:
    """Note an open Memory, so that :func:`reopen` of its store in this process reuses it."""
    try:
        ref = reference(memory, "")
    except SgmemError:
        return
    _OPEN[_key(ref)] = memory


def reopen(ref: dict[str, Any], owner: str) -> Any:
    """The Memory ``ref`` (from :func:`reference`) names: the one open in this process, else one the
    application allowed (:func:`allow`, ``SGMEM_STORE_URL``), opened now with the application's own text.

    Raises:
        InvalidInputError: ``ref`` names no store (saved from an in-memory store, or by an older version).
        SgmemError: the store it names is neither open here nor allowed (nothing is connected to or created).
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
    target = _ALLOWED.get(key)
    env = os.environ.get(URL_ENV, "")
    if target is None and env:
        env_key, env_target = _target_key(env, URL_ENV)
        target = env_target if env_key == key else None
    if target is None:
        named = f"the PostgreSQL store {redact(url)!r}" if url else f"the store directory {path!r}"
        raise SgmemError(
            f"{owner}'s saved state names {named}, which this application has not opened or allowed: restoring "
            "never connects to or creates a store the application did not name. Pass memory=sgmem.Memory(...) "
            f"when restoring, open the store in this process first, call sgmem.saved.allow(...) with it, or set "
            f"{URL_ENV} to its URL or path."
        )
    config = config_from_dict(ref["config"], f"{owner} data['config']") if ref.get("config") is not None else None
    memory = Memory(target, config=config)
    _OPEN[key] = memory
    return memory
