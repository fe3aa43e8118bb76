"""Text processing: sentence splitting, token counting, lexical analysis."""

from .lexical import analyze, stem_terms
from .segment import split_sentences
from .tokens import count_tokens, truncate_to_tokens

__all__ = ["analyze", "count_tokens", "split_sentences", "stem_terms", "truncate_to_tokens"]
