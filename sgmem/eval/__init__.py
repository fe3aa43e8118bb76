"""Evaluation harnesses (LoCoMo evidence recall; leave-one-conversation-out in :mod:`sgmem.eval.loo`, nested
cross-validation of every dev-tuned setting in :mod:`sgmem.eval.cv`)."""

from .cache import CachingEmbedder
from .locomo import EvalReport, evaluate, load_locomo, render_report

__all__ = ["CachingEmbedder", "EvalReport", "evaluate", "load_locomo", "render_report"]
