"""Degradations are said loudly but once: a warning per reason per process.

Once means one line where a person reads it: the ``TulvingWarning`` alone (stderr by
default, ``pytest.warns`` in tests, the logs of an application that calls
``logging.captureWarnings(True)``). A log record beside it printed the same text a
second time (Python's last-resort handler writes a record nobody configured a handler
for to stderr too).
"""

from __future__ import annotations

import threading
import warnings

from tulving.domain.log_masking import masked_logger

log = masked_logger("tulving")
_said: set[str] = set()
_lock = threading.Lock()


class TulvingWarning(UserWarning):
    """A feature runs in a degraded mode (no embedder, no LLM, rebuilt index, ...)."""


def warn_once(reason: str, message: str) -> None:
    with _lock:
        if reason in _said:
            return
        _said.add(reason)
    warnings.warn(message, TulvingWarning, stacklevel=3)


def reset_warnings() -> None:
    """Forget what was said (tests use this to observe a warning again)."""
    with _lock:
        _said.clear()
