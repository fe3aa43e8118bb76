"""Benchmarks: quality and speed against baselines measured in the same run."""
