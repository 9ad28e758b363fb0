"""Embedder adapters: local ONNX (the default), sentence-transformers, hashing.

Each module exposes ``create(context, **options)``; the registry imports a module only
when its adapter is chosen, so optional dependencies stay optional.
"""
