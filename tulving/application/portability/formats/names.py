"""The names of the formats ``import_from`` reads and ``export_to`` writes.

Apart from the readers and writers themselves, so that a door can list them (the CLI's
``--from`` choices) without loading any of them: ``migration`` checks that its tables
name exactly these.
"""

from __future__ import annotations

#: What ``Memory.import_from`` reads.
READ_FORMATS = ("mem0", "zep", "letta", "otel")
#: What ``Memory.export_to`` writes.
WRITE_FORMATS = ("letta", "otel")
