"""Tulving's log records, masked: a record goes to whoever runs the process (a log file,
a collector), another audience than the memory's callers, so its message and its
traceback pass :func:`~tulving.domain.redaction.redact_all` (credentials, personal
identifiers and contact details) before any handler sees them.

Every logger Tulving writes to is made by :func:`masked_logger`, which attaches the
filter to it (a filter on a parent logger does not see its children's records, so each
logger carries its own). The access log is the exception: its lines are built from fixed
fields only (ids, route templates, statuses, a tenant's hash) and hold no text to mask.
"""

from __future__ import annotations

import logging
import traceback

from tulving.domain.redaction import redact_all


class MaskingFilter(logging.Filter):
    """Rewrites a record in place: its message formatted and masked, its exception and
    stack formatted and masked into ``exc_text`` and ``stack_info`` (the raw exception is
    dropped, so no handler formats it again from the original)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: left for logging's own error report
            return True
        record.msg, record.args = redact_all(message), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        if record.exc_text:
            record.exc_text = redact_all(record.exc_text)
            record.exc_info = None
        if record.stack_info:
            record.stack_info = redact_all(record.stack_info)
        return True


_FILTER = MaskingFilter()


def masked_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` with the masking filter attached (once)."""
    logger = logging.getLogger(name)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger
