"""Evaluation harnesses (LoCoMo evidence recall) and their helpers."""

from .cache import CachingEmbedder
from .locomo import EvalReport, evaluate, load_locomo, render_report

__all__ = ["CachingEmbedder", "EvalReport", "evaluate", "load_locomo", "render_report"]
