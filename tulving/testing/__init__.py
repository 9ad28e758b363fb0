"""Test helpers that ship with the package, so third-party adapters and benchmarks can
exercise the same fakes our own tests use. Nothing here is imported by the library itself.
"""
