"""What a store target is, and its passwords out: text rules that need no store.

:class:`sgmem.Memory` takes a directory or a PostgreSQL target (a URL, a libpq
``key=value`` string or a psycopg pool); :func:`is_postgres_target` tells
them apart. Saved adapter state (:mod:`sgmem.saved`), the inspector and the
tools use these helpers without importing a store (``tests/unit/test_layering.py``).

Passwords out of PostgreSQL connection strings, read the way libpq reads them.
Both of libpq's forms are handled:

* a URL, ``postgresql://user:PASSWORD@host/db?password=...&sslpassword=...``:
  libpq takes the password from the first ``:`` of the user part to the first
  ``@`` (unencoded ``#``, ``?`` or ``&`` included) and a parameter's value to
  the next ``&``, its name percent-decoded (``pass%77ord=``). Here a user-part
  password runs to the *last* ``@`` (it may hold ``/`` or ``@`` unescaped in
  an odd URL): taking a little more than libpq would is the safe side.
* a ``key=value`` string: a value is quoted (``'...'``, ``\\'`` and ``\\\\``
  inside) or runs to the next white space not escaped by ``\\``
  (``password=open\\ sesame`` is ``open sesame``).

Where psycopg is installed, libpq itself parses the string
(``conninfo_to_dict``) and any password it reads that is still in the result
sends the whole string to a form rebuilt from libpq's own reading, without it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote

__all__ = ["is_conninfo", "is_postgres_target", "is_url", "redact", "scrub", "secrets_of", "without_passwords"]

_URL_PREFIXES = ("postgresql://", "postgres://")
# libpq's connection keywords: a string that starts ``keyword=`` is a libpq connection string, not a directory
_LIBPQ_KEYWORDS = frozenset(
    "host hostaddr port dbname user password passfile require_auth channel_binding connect_timeout "
    "client_encoding options application_name fallback_application_name keepalives keepalives_idle "
    "keepalives_interval keepalives_count tcp_user_timeout replication gssencmode sslmode requiressl "
    "sslcompression sslcert sslkey sslpassword sslcertmode sslrootcert sslcrl sslcrldir sslsni requirepeer "
    "ssl_min_protocol_version ssl_max_protocol_version krbsrvname gsslib gssdelegation service "
    "target_session_attrs load_balance_hosts".split()
)
_CONNINFO = re.compile(r"^\s*([a-z_]+)\s*=")


def is_url(path: Any) -> bool:
    """Whether ``path`` is a URL (``scheme://...``) rather than a directory."""
    if not isinstance(path, str):
        return False
    head, sep, _ = path.partition("://")
    return bool(sep) and head.replace("+", "").replace("-", "").replace(".", "").isalnum() and head[:1].isalpha()


def is_conninfo(path: Any) -> bool:
    """Whether ``path`` is a libpq ``key=value`` connection string (``"host=db dbname=agents user=app"``)."""
    if not isinstance(path, str):
        return False
    m = _CONNINFO.match(path)
    return m is not None and m.group(1) in _LIBPQ_KEYWORDS


def is_postgres_target(path: Any) -> bool:
    """A ``postgresql://``/``postgres://`` URL (any case), a libpq ``key=value`` string or a psycopg pool."""
    if isinstance(path, str):
        return path.lstrip().lower().startswith(_URL_PREFIXES) or is_conninfo(path)
    return all(hasattr(path, a) for a in ("getconn", "putconn")) and type(path).__module__.startswith("psycopg_pool")


_SECRET_KEYS = ("password", "sslpassword")
_SHOWN = "***"
# ``scheme://user:PASSWORD@``; the user part holds no ``:``, ``/`` or ``@`` (libpq's reading)
_USERINFO = re.compile(r"^(\s*[a-z][a-z0-9+.-]*://[^:/@]*):(.*)@", re.I | re.S)
_URL_PARAM = re.compile(r"([?&])([^=&?]*)=([^&]*)", re.S)
_KV_KEY = re.compile(r"\s*([^\s=]+)\s*=\s*", re.S)
_KV_LOOSE = re.compile(r"((?:ssl)?password\s*=\s*)(.*)$", re.I | re.S)
# a password setting quoted in a driver's message, in either form
_SAID = re.compile(r"(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|(?:\\.|[^\s\\&])+)", re.I | re.S)


def _is_secret_key(key: str) -> bool:
    return unquote(key).strip().lower() in _SECRET_KEYS


def _is_url(target: str) -> bool:
    return "://" in target.split("=", 1)[0]


def _kv_pairs(target: str) -> list[tuple[str, int, int, int]] | None:
    """Each ``key=value`` of a libpq string as (key, key start, value start, value end); None if malformed."""
    pairs: list[tuple[str, int, int, int]] = []
    i, n = 0, len(target)
    while True:
        while i < n and target[i].isspace():
            i += 1
        if i >= n:
            return pairs
        m = _KV_KEY.match(target, i)
        if m is None:
            return None
        start, i = m.start(1), m.end()
        value = i
        if i < n and target[i] == "'":
            i += 1
            while i < n and target[i] != "'":
                i += 2 if target[i] == "\\" else 1
            if i >= n:
                return None  # unterminated quote: libpq refuses it
            i += 1
        else:
            while i < n and not target[i].isspace():
                i += 2 if target[i] == "\\" else 1
            i = min(i, n)
        pairs.append((m.group(1), start, value, i))


def _hide_kv(target: str, mask: str | None) -> str:
    pairs = _kv_pairs(target)
    if pairs is None:  # not libpq's syntax: hide everything from the first password key on
        return _KV_LOOSE.sub(lambda m: m.group(1) + mask if mask is not None else "", target).rstrip()
    out, last = [], 0
    for key, start, value, end in pairs:
        if not _is_secret_key(key):
            continue
        if mask is None:  # the pair and the white space after it
            out.append(target[last:start])
            while end < len(target) and target[end].isspace():
                end += 1
        else:
            out.append(target[last:value] + mask)
        last = end
    out.append(target[last:])
    return "".join(out)


def _hide_url(target: str, mask: str | None) -> str:
    out = _USERINFO.sub(lambda m: m.group(1) + (":" + mask if mask is not None else "") + "@", target, count=1)

    def param(m: re.Match[str]) -> str:
        if not _is_secret_key(m.group(2)):
            return m.group(0)
        return m.group(1) + (m.group(2) + "=" + mask if mask is not None else "")

    out = _URL_PARAM.sub(param, out)
    if mask is None:  # tidy the separators a removed parameter left
        out = re.sub(r"\?&+", "?", re.sub(r"&{2,}", "&", out))
        out = re.sub(r"[?&]+$", "", out)
    return out


def _libpq_reading(target: str) -> dict[str, str] | None:
    """What libpq reads in ``target`` (psycopg's ``conninfo_to_dict``), or None without psycopg or if it refuses."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    head, sep, rest = target.strip().partition("://")
    if sep and head.lower() in ("postgresql", "postgres"):
        target = head.lower() + sep + rest  # libpq reads only a lower-case scheme as a URL
    try:
        return {k: str(v) for k, v in conninfo_to_dict(target).items() if v is not None}
    except Exception:  # noqa: BLE001 - a string libpq refuses: the textual rules alone apply
        return None


def _libpq_secrets(target: str) -> list[str]:
    reading = _libpq_reading(target) or {}
    return [reading[k] for k in _SECRET_KEYS if reading.get(k)]


def _leaks(text: str, secrets: list[str]) -> bool:
    # a secret of a few characters would be found anywhere (in "localhost"): libpq's reading
    # of the result decides for those
    return any(len(s) >= 4 and (s in text or quote(s, safe="") in text) for s in secrets)


def _checked(target: str, hide: Callable[[str], str], mask: str | None) -> str:
    out = hide(target)
    secrets = _libpq_secrets(target)
    after = _libpq_reading(out) if secrets else None
    left = [v for k, v in (after or {}).items() if k in _SECRET_KEYS and v != mask]
    if not (_leaks(out, secrets) or left):
        return out
    # the textual rules missed what libpq reads: show libpq's own reading, without the secrets
    from psycopg.conninfo import make_conninfo

    reading = {k: v for k, v in (_libpq_reading(target) or {}).items() if k not in _SECRET_KEYS}
    if mask is not None:
        reading["password"] = mask
    return make_conninfo("", **reading)


def _hide(target: str, mask: str | None) -> str:
    return _checked(target, lambda t: _hide_url(t, mask) if _is_url(t) else _hide_kv(t, mask), mask)


def redact(target: str) -> str:
    """A connection URL or libpq ``key=value`` string with each password shown as ``***``."""
    return _hide(target, _SHOWN)


def without_passwords(target: str) -> str:
    """A connection URL or libpq ``key=value`` string with every password taken out (what saved state keeps)."""
    return _hide(target, None).strip()


def secrets_of(target: str) -> list[str]:
    """The password texts in ``target`` as given, unescaped and percent-decoded (longest first), to scrub."""
    found: list[str] = list(_libpq_secrets(target))
    if _is_url(target):
        m = _USERINFO.match(target)
        if m:
            found.append(m.group(2))
        found += [m.group(3) for m in _URL_PARAM.finditer(target) if _is_secret_key(m.group(2))]
    else:
        for key, _, value, end in _kv_pairs(target) or []:
            if _is_secret_key(key):
                raw = target[value:end]
                found += [raw, re.sub(r"\\(.)", r"\1", raw.strip("'"), flags=re.S)]
        loose = _KV_LOOSE.search(target)
        if loose:
            found.append(loose.group(2))
    found += [unquote(v) for v in found]
    return sorted({v for v in found if v}, key=len, reverse=True)


def scrub(text: str, target: str) -> str:
    """``text`` (e.g. a driver's message) with every password of ``target`` replaced by ``***``."""
    out = text
    for secret in secrets_of(target):
        out = out.replace(secret, _SHOWN)
    return _SAID.sub(r"\1" + _SHOWN, out)
