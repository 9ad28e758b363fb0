"""Readers and writers of other memory systems' files (Mem0, Zep/Graphiti, Letta,
OpenTelemetry): records translated into entries and back, no I/O (``migration`` runs them)."""
