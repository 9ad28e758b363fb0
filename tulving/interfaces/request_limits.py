"""How much one request to the memory server may ask (see ``tulving.interfaces.http.limits``
for what each limit bounds and how they were measured). Kept free of the HTTP stack so
the CLI can name the defaults in ``tulving serve --help`` on a core install."""

from __future__ import annotations

import attrs

DEFAULT_TIMEOUT = 60.0
#: JSON calls, and bundle uploads to ``/v1/import``.
MAX_BODY = 4 * 1024 * 1024
MAX_BUNDLE = 1024 * 1024 * 1024
#: A sync push (read into memory whole).
MAX_DELTA = 64 * 1024 * 1024
#: Characters of one ``remember`` (the library's own limit is 2,000,000).
MAX_REMEMBER_CHARS = 100_000
MAX_IMPORT_ENTRIES = 200_000


@attrs.frozen
class Limits:
    timeout: float = DEFAULT_TIMEOUT
    max_body: int = MAX_BODY
    max_bundle: int = MAX_BUNDLE
    max_delta_bytes: int = MAX_DELTA
    max_remember_chars: int = MAX_REMEMBER_CHARS
    max_import_entries: int = MAX_IMPORT_ENTRIES

    def body_limit(self, path: str) -> int:
        if path == "/v1/import":
            return self.max_bundle
        if path == "/v1/sync/deltas" or path.startswith("/v1/import/"):
            # both are read into memory whole (a delta, another system's JSON file)
            return self.max_delta_bytes
        return self.max_body

    def remember_refusal(self, text: str) -> str | None:
        """Why a ``remember`` of ``text`` is refused (413), or None."""
        if len(text) <= self.max_remember_chars:
            return None
        return (f"the remember text has {len(text)} characters; this server takes at most "
                f"{self.max_remember_chars} per call (serve --max-remember-chars): split it "
                "into several calls")

    def import_refusal(self, declared_entries: int) -> str | None:
        """Why an import of a bundle declaring ``declared_entries`` is refused, or None."""
        if declared_entries <= self.max_import_entries:
            return None
        return (f"the bundle declares {declared_entries} entries; this server imports at "
                f"most {self.max_import_entries} per call (serve --max-import-entries): "
                "export it in parts")
