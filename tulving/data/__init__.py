"""Data files shipped with Tulving (the demo memory set)."""
