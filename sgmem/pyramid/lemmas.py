"""English lemmas from simplemma, its dictionary optionally read from a decoded copy (:mod:`sgmem.tables`)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

__all__ = ["lemmatize", "use_cache"]

log = logging.getLogger(__name__)

_lemmatizer: Any = None
_lock = threading.Lock()


def lemmatize(token: str) -> str:
    """simplemma's English lemma of ``token`` (through the decoded copy once :func:`use_cache` ran)."""
    if _lemmatizer is not None:
        return str(_lemmatizer.lemmatize(token, "en"))
    import simplemma

    return str(simplemma.lemmatize(token, lang="en"))


def use_cache(directory: Path | None = None) -> bool:
    """Lemmatise with simplemma's English dictionary kept decoded in ``directory`` (:func:`sgmem.tables.cache_dir`).

    The lemmatiser is built as ``simplemma.lemmatize`` builds its own (the default strategy, not greedy)
    around the same dictionary. Returns whether it is in use; ``False`` leaves ``simplemma.lemmatize``.
    """
    global _lemmatizer
    with _lock:
        if _lemmatizer is not None:
            return True
        try:
            _lemmatizer = _cached_lemmatizer(directory)
        except (ImportError, AttributeError, TypeError, ValueError, OSError) as exc:
            log.debug("simplemma's dictionary is not cached (%s): each process decodes it", exc)
            return False
        return True


def _cached_lemmatizer(directory: Path | None) -> Any:
    import simplemma
    from simplemma.strategies import DefaultStrategy
    from simplemma.strategies.dictionaries.dictionary_factory import (
        DATA_FOLDER,
        CachingDictionaryFactory,
        MappingStrToByteString,
        _load_dictionary_from_disk,
    )

    from ..tables import cached

    source = Path(DATA_FOLDER) / "en.plzma"
    version = str(getattr(simplemma, "__version__", "unknown"))

    class Factory(CachingDictionaryFactory):  # type: ignore[misc]
        __slots__ = ()

        def _get_dictionary_uncached(self, lang: str) -> Any:
            if lang != "en":
                raise ValueError(f"only English is cached, not {lang!r}")
            table = cached("simplemma-en", source, version, lambda: _load_dictionary_from_disk("en"), directory)
            return MappingStrToByteString(table)

    return simplemma.Lemmatizer(lemmatization_strategy=DefaultStrategy(greedy=False, dictionary_factory=Factory()))
