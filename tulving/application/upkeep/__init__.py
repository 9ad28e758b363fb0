"""Keeping a store in shape on request: eviction of faded memories, maintenance
(inspect, purge, vacuum, reindex) and statistics."""
