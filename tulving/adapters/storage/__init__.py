"""Storage adapters: SQLite (default), in-memory, PostgreSQL."""
