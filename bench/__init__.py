"""Lithos benchmarks (``perf.py``) and retrieval-quality evaluations (``eval.py``)."""
