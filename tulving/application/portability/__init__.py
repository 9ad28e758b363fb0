"""Moving memory between stores, machines and models: bundles, export/import with merge,
and sync (filled by the portability and sync work; empty until then)."""
