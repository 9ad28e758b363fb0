"""Vector index adapters: exact (numpy brute force) and hnsw (hnswlib, cached on disk).

Shared input checks live in ``_checks`` so both reject bad input identically and before
changing anything.
"""
